//! Finding the Java runtime and the ZooKeeper 3.8 jars of the Debian package `zookeeper`.
//!
//! A missing installation is a hard failure (a panic with instructions), never a silent skip: a test suite that
//! quietly skips its real-server tests looks green while testing nothing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Overrides the `java` binary (default `/usr/bin/java`, then `java` on `PATH`).
pub const JAVA_ENV: &str = "ZKLOCK_TEST_JAVA";
/// Overrides the directory holding `zookeeper.jar` and friends (default `/usr/share/java`).
pub const JAR_DIR_ENV: &str = "ZKLOCK_TEST_ZK_JARS";

const DEFAULT_JAR_DIR: &str = "/usr/share/java";
const NOT_FOUND: &str =
    "real ZooKeeper 3.8 not found: run scripts/test which installs the Debian package `zookeeper`";

/// Where the JVM and the ZooKeeper classes are.
#[derive(Debug)]
pub(crate) struct Installation {
    /// The `java` executable.
    pub java: PathBuf,
    /// The `-cp` value for the server JVM.
    pub classpath: String,
    /// Whether a log4j 1.2 binding for slf4j is on the classpath, so a generated `log4j.properties` takes effect.
    pub log4j: bool,
}

/// The installation, located once per process. Panics loudly when java or the jars are missing.
pub(crate) fn installation() -> &'static Installation {
    static INSTALLATION: OnceLock<Result<Installation, String>> = OnceLock::new();
    match INSTALLATION.get_or_init(locate) {
        Ok(installation) => installation,
        Err(why) => panic!("{NOT_FOUND} ({why})"),
    }
}

fn locate() -> Result<Installation, String> {
    let java = find_java()?;
    let jar_dir = std::env::var_os(JAR_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| DEFAULT_JAR_DIR.into());
    // zookeeper.jar's manifest lists its dependencies (jute, netty, slf4j-api, ...) in `Class-Path`, so the JVM
    // loads them without us spelling them out; we only check that the two ZooKeeper jars are really there.
    let server_jar = require(&jar_dir, "zookeeper.jar")?;
    require(&jar_dir, "zookeeper-jute.jar")?;
    let mut classpath = server_jar.display().to_string();
    // Netty (the connection factory TLS needs) uses jars that Debian's zookeeper.jar manifest leaves out of its
    // `Class-Path`: without them a secure client port fails with NoClassDefFoundError.
    for jar in [
        "netty-codec.jar",
        "netty-resolver.jar",
        "netty-transport-native-unix-common.jar",
    ] {
        let jar = jar_dir.join(jar);
        if jar.is_file() {
            classpath = format!("{classpath}:{}", jar.display());
        }
    }
    // slf4j needs a binding or it logs nothing at all; log4j 1.2 is what the Debian package's
    // conf_example/log4j.properties is written for.
    let binding = jar_dir.join("slf4j-log4j12.jar");
    let log4j = jar_dir.join("log4j-1.2.jar");
    let has_log4j = binding.is_file() && log4j.is_file();
    if has_log4j {
        classpath = format!("{classpath}:{}:{}", binding.display(), log4j.display());
    } else {
        tracing::warn!(
            "no slf4j-log4j12/log4j-1.2 jars in {}: ZooKeeper will log nothing",
            jar_dir.display()
        );
    }
    Ok(Installation {
        java,
        classpath,
        log4j: has_log4j,
    })
}

fn find_java() -> Result<PathBuf, String> {
    if let Some(java) = std::env::var_os(JAVA_ENV) {
        let java = PathBuf::from(java);
        return if java.is_file() {
            Ok(java)
        } else {
            Err(format!("{JAVA_ENV}={} is not a file", java.display()))
        };
    }
    let default = Path::new("/usr/bin/java");
    if default.is_file() {
        return Ok(default.to_path_buf());
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("java"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| "no `java` executable in /usr/bin or on PATH".to_string())
}

fn require(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} is missing", path.display()))
    }
}
