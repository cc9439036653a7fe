//! Preparing the peers that run beside zklock in interoperability tests and benchmarks: Apache Curator
//! (`CuratorPeer.java`, compiled here against the Debian Curator jars) and kazoo (`kazoo_peer.py`). The peer
//! sources live in `crates/zklock/tests/peers`; how they are run (flags, modes, the line protocol) is up to the
//! caller.

use std::path::{Path, PathBuf};

/// Overrides the `java` binary (default `/usr/bin/java`, then `PATH`; the same variable as [`crate::install`]'s).
pub const JAVA_ENV: &str = "ZKLOCK_TEST_JAVA";
/// Overrides the `javac` binary (default: next to `java`, then `/usr/bin/javac`, then `PATH`).
pub const JAVAC_ENV: &str = "ZKLOCK_TEST_JAVAC";
/// Overrides the directory holding the Curator and ZooKeeper jars (default `/usr/share/java`).
pub const JAR_DIR_ENV: &str = "ZKLOCK_TEST_ZK_JARS";
/// Overrides the Python interpreter that has kazoo (default `python3` on `PATH`).
pub const PYTHON_ENV: &str = "ZKLOCK_TEST_PYTHON";

/// The directory of the peer sources, `crates/zklock/tests/peers`.
pub fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zklock/tests/peers")
}

/// The JVM and the classpath that runs the compiled `CuratorPeer`.
#[derive(Debug, Clone)]
pub struct CuratorPeer {
    /// The `java` binary.
    pub java: PathBuf,
    /// The compiled classes first, then the Curator and ZooKeeper jars.
    pub classpath: String,
}

/// Finds `java` and `javac`, checks the Curator and ZooKeeper jars, and compiles `CuratorPeer.java` into
/// `classes` (an empty directory the caller owns). Blocking: a few seconds of `javac`.
pub fn compile_curator_peer(classes: &Path) -> Result<CuratorPeer, String> {
    let java = match std::env::var_os(JAVA_ENV) {
        Some(java) => PathBuf::from(java),
        None => find_executable("java", &[Path::new("/usr/bin/java")])?,
    };
    let javac = match std::env::var_os(JAVAC_ENV) {
        Some(javac) => PathBuf::from(javac),
        None => {
            // The JDK's javac sits next to the real (symlink-resolved) java.
            let sibling = std::fs::canonicalize(&java)
                .ok()
                .map(|real| real.with_file_name("javac"));
            let mut candidates: Vec<PathBuf> = sibling.into_iter().collect();
            candidates.push("/usr/bin/javac".into());
            let candidates: Vec<&Path> = candidates.iter().map(PathBuf::as_path).collect();
            find_executable("javac", &candidates)?
        }
    };
    let jars = std::env::var_os(JAR_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/share/java".into());
    let mut classpath = Vec::new();
    for jar in [
        "curator-recipes.jar",
        "curator-framework.jar",
        "curator-client.jar",
        "zookeeper.jar",
    ] {
        let path = jars.join(jar);
        if !path.is_file() {
            return Err(format!("{} is missing", path.display()));
        }
        classpath.push(path.display().to_string());
    }
    // slf4j without a binding prints a warning on every start; the no-op binding keeps stderr for real errors.
    let nop = jars.join("slf4j-nop.jar");
    if nop.is_file() {
        classpath.push(nop.display().to_string());
    }
    let source = sources().join("CuratorPeer.java");
    let mut javac_command = std::process::Command::new(&javac);
    javac_command
        .arg("-d")
        .arg(classes)
        .arg("-cp")
        .arg(classpath.join(":"))
        .arg(&source);
    run(javac_command, &format!("javac {}", source.display()))?;
    classpath.insert(0, classes.display().to_string());
    Ok(CuratorPeer {
        java,
        classpath: classpath.join(":"),
    })
}

/// Finds the Python interpreter and checks that it imports kazoo. Blocking.
pub fn kazoo_python() -> Result<PathBuf, String> {
    let python = match std::env::var_os(PYTHON_ENV) {
        Some(python) => PathBuf::from(python),
        None => find_executable("python3", &[])?,
    };
    let mut check = std::process::Command::new(&python);
    check.args(["-c", "import kazoo.client, kazoo.recipe.lock"]);
    run(check, &format!("{} importing kazoo", python.display()))?;
    Ok(python)
}

/// Runs `command` to completion; an error names `what` and carries its stderr.
fn run(mut command: std::process::Command, what: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", command.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The first of `preferred` that exists, else `name` on `PATH`.
fn find_executable(name: &str, preferred: &[&Path]) -> Result<PathBuf, String> {
    preferred
        .iter()
        .map(|p| p.to_path_buf())
        .chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths)
                .map(|dir| dir.join(name)),
        )
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("no `{name}` executable found"))
}
