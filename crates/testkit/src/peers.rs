//! Preparing the peers that run beside zklock in interoperability tests and benchmarks: Apache Curator
//! (`CuratorPeer.java`, compiled here against the Debian Curator jars) and kazoo (`kazoo_peer.py`). The peer
//! sources live in `crates/zklock/tests/peers`. [`PeerProcess`] runs one of them and carries its line-based
//! conversation; the JVM flags, the peer's mode and what its lines mean are up to the caller.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

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

impl CuratorPeer {
    /// `java <jvm_flags> -cp <classpath> CuratorPeer`; the caller appends the peer's arguments. The flags are the
    /// caller's choice: benchmarks want the default JIT, tests a fast start-up.
    pub fn command(&self, jvm_flags: &[&str]) -> Command {
        let mut command = Command::new(&self.java);
        command
            .args(jvm_flags)
            .args(["-cp", &self.classpath, "CuratorPeer"]);
        command
    }
}

/// `<python> -u kazoo_peer.py` (unbuffered, so every line reaches the caller at once); the caller appends the
/// peer's arguments.
pub fn kazoo_command(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.arg("-u").arg(sources().join("kazoo_peer.py"));
    command
}

/// Why [`PeerProcess::next_line`] returned no line.
#[derive(Debug)]
pub enum LineError {
    /// The peer closed its stdout: it exited.
    Closed,
    /// Reading its stdout failed.
    Read(std::io::Error),
    /// No line came within the bound.
    TimedOut,
}

impl LineError {
    /// What happened, from the peer's side, while we waited for `what`.
    pub fn describe(&self, what: &str) -> String {
        match self {
            LineError::Closed => format!("exited while we waited for {what}"),
            LineError::Read(e) => format!("reading its output: {e}"),
            LineError::TimedOut => format!("timed out waiting for {what}"),
        }
    }
}

/// Why [`PeerProcess::finish`] failed; displayed from the peer's side ("exited with …").
#[derive(Debug)]
pub enum ExitError {
    /// The peer exited with a failure status.
    Status(ExitStatus),
    /// Waiting for it failed.
    Wait(std::io::Error),
    /// It did not exit within the bound.
    TimedOut,
}

impl std::fmt::Display for ExitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitError::Status(status) => write!(f, "exited with {status}"),
            ExitError::Wait(e) => write!(f, "cannot wait for it: {e}"),
            ExitError::TimedOut => write!(f, "did not exit"),
        }
    }
}

/// A running peer process that talks line by line: requests on its stdin, answers on its stdout. Spawned with
/// `kill_on_drop`, so dropping it kills the process (by pid).
#[derive(Debug)]
pub struct PeerProcess {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl PeerProcess {
    /// Spawns `command` with piped stdin and stdout, and `stderr` as given (inherited, or piped for the caller to
    /// collect with [`PeerProcess::take_stderr`]). `name` is how the caller's messages call it.
    pub fn spawn(name: String, command: &mut Command, stderr: Stdio) -> std::io::Result<PeerProcess> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        Ok(PeerProcess {
            name,
            child,
            stdin,
            stdout,
        })
    }

    /// The name given to [`PeerProcess::spawn`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (0 once it has been reaped).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// The piped stderr, the first time (`None` if it was not piped).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The next line, waiting at most `within`. Cancel safe. With `Duration::ZERO` it returns a line the peer
    /// has already written (the read is polled once before the clock is looked at) and never waits.
    pub async fn next_line(&mut self, within: Duration) -> Result<String, LineError> {
        match tokio::time::timeout(within, self.stdout.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => Err(LineError::Closed),
            Ok(Err(e)) => Err(LineError::Read(e)),
            Err(_) => Err(LineError::TimedOut),
        }
    }

    /// Writes `line` and a newline to the peer's stdin.
    pub async fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin closed"))?;
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await
    }

    /// Closes the peer's stdin and waits at most `within` for it to exit with status 0.
    pub async fn finish(&mut self, within: Duration) -> Result<(), ExitError> {
        drop(self.stdin.take());
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(ExitError::Status(status)),
            Ok(Err(e)) => Err(ExitError::Wait(e)),
            Err(_) => Err(ExitError::TimedOut),
        }
    }

    /// Kills the peer (SIGKILL) and waits at most `within` for it to be reaped. Errors are ignored: it is
    /// called on the way to reporting a failure.
    pub async fn kill(&mut self, within: Duration) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(within, self.child.wait()).await;
    }
}
