//! Preparing the peers that run beside zklock in interoperability tests and benchmarks: Apache Curator
//! (`CuratorPeer.java`, compiled here against the Debian Curator jars) and kazoo (`kazoo_peer.py`). The peer
//! sources live in `crates/zklock/tests/peers`. [`PeerProcess`] runs one of them and carries its line-based
//! conversation; the JVM flags, the peer's mode and what its lines mean are up to the caller.
//!
//! For the interop tests (of the zklock crate and of the CLI): [`Peer`] launches a peer the way they want it —
//! compiled once per test process, a fast-starting JVM, a missing Java, javac, Curator jar or kazoo a hard failure
//! with instructions (never a silent skip: a green interop suite that tested nothing would be worse than a red
//! one), every failure a panic that shows the peer's stderr — and [`Counter`] is the counter file they share
//! with zklock contenders. Every child is spawned with `kill_on_drop`, so a failing test kills (by pid, SIGKILL)
//! the peers it started.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

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
    compile_against_curator(&sources().join("CuratorPeer.java"), classes)
}

/// As [`compile_curator_peer`], for any Java `source` written against Curator (the chaos campaign's
/// `CuratorWorker.java`); the returned classpath runs its classes.
pub fn compile_against_curator(source: &Path, classes: &Path) -> Result<CuratorPeer, String> {
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
    let mut javac_command = std::process::Command::new(&javac);
    javac_command
        .arg("-d")
        .arg(classes)
        .arg("-cp")
        .arg(classpath.join(":"))
        .arg(source);
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

/// Generous bound for anything a peer must do (a JVM start on a loaded 2-core machine included).
pub const PEER_TIMEOUT: Duration = Duration::from_secs(60);

const JAVA_HELP: &str = "the Curator interop tests need a JDK (java and javac) and the Curator 5.4 jars in \
    /usr/share/java: run scripts/test, which installs them (`apt-get install default-jdk-headless \
    libcurator-recipes-java`), or set ZKLOCK_TEST_JAVA, ZKLOCK_TEST_JAVAC, ZKLOCK_TEST_ZK_JARS";
const KAZOO_HELP: &str =
    "the kazoo interop tests need Python 3 with kazoo: run scripts/test, which installs \
    it (`python3 -m pip install kazoo`), or set ZKLOCK_TEST_PYTHON to an interpreter that has it";

/// Compiles `CuratorPeer.java` once per test process (into a fresh temporary directory; class files are never
/// written into the source tree). Blocks: call it from `spawn_blocking`.
fn java() -> &'static CuratorPeer {
    static JAVA: OnceLock<Result<CuratorPeer, String>> = OnceLock::new();
    let compiled = JAVA.get_or_init(|| {
        let classes =
            scratch_dir("curator-peer").map_err(|e| format!("cannot create a directory for classes: {e}"))?;
        compile_curator_peer(&classes)
    });
    match compiled {
        Ok(java) => java,
        Err(why) => panic!("{why}\n{JAVA_HELP}"),
    }
}

/// Checks once per test process that the Python interpreter imports kazoo. Blocks: call it from
/// `spawn_blocking`.
fn python() -> &'static Path {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(kazoo_python) {
        Ok(python) => python,
        Err(why) => panic!("{why}\n{KAZOO_HELP}"),
    }
}

/// A fresh directory `<tmp>/zklock-interop/<kind>-<nanos>-<pid>-<n>`. Directories left by test processes that
/// are gone (the compiled classes live in a static and are never cleaned up by their owner) are swept first.
fn scratch_dir(kind: &str) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let root = std::env::temp_dir().join("zklock-interop");
    std::fs::create_dir_all(&root)?;
    for entry in std::fs::read_dir(&root)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name.rsplit('-').nth(1).and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            // Another test process may be sweeping too; losing that race is fine.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = root.join(format!("{kind}-{nanos:x}-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// A running peer process and its line-based conversation with the test.
pub struct Peer {
    process: PeerProcess,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Peer {
    /// `java CuratorPeer <args>` (see `CuratorPeer.java`: `LOCK ACTION CONNECT PATH [ROUNDS FILE]`).
    pub async fn curator(args: &[&str]) -> Peer {
        Peer::curator_with_jvm_flags(&[], args).await
    }

    /// [`Peer::curator`] with more JVM flags, e.g. `-Djava.security.auth.login.config=FILE` naming a JAAS file whose
    /// `Client` section makes the ZooKeeper client inside Curator authenticate with SASL.
    pub async fn curator_with_jvm_flags(jvm_flags: &[&str], args: &[&str]) -> Peer {
        let java = tokio::task::spawn_blocking(java)
            .await
            .expect("compiling the Curator peer");
        // A small heap and no JIT tiers beyond C1 make the JVM start faster on a loaded machine.
        let mut flags = vec!["-Xmx128m", "-XX:TieredStopAtLevel=1"];
        flags.extend(jvm_flags);
        let mut command = java.command(&flags);
        command.args(args);
        Peer::spawn(format!("curator {}", args.join(" ")), command)
    }

    /// `python3 kazoo_peer.py <args>` (see `kazoo_peer.py`: `ACTION CONNECT PATH [ROUNDS FILE]`).
    pub async fn kazoo(args: &[&str]) -> Peer {
        let python = tokio::task::spawn_blocking(python)
            .await
            .expect("looking for kazoo");
        let mut command = kazoo_command(python);
        command.args(args);
        Peer::spawn(format!("kazoo {}", args.join(" ")), command)
    }

    fn spawn(name: String, mut command: Command) -> Peer {
        let mut process = PeerProcess::spawn(name.clone(), &mut command, Stdio::piped())
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = process.take_stderr().expect("stderr is piped");
        let sink = stderr.clone();
        // Collected in the background so a chatty peer never blocks on a full pipe, and shown when it fails.
        let stderr_reader = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Peer {
            process,
            stderr,
            stderr_reader: Some(stderr_reader),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Waits for the next line, which must be `word` or start with `word `; returns the rest. Cancel safe.
    pub async fn expect(&mut self, word: &str) -> String {
        let line = match self.process.next_line(PEER_TIMEOUT).await {
            Ok(line) => line,
            Err(e) => self.fail(&e.describe(word)).await,
        };
        match line.strip_prefix(word) {
            Some("") => String::new(),
            Some(rest) if rest.starts_with(' ') => rest[1..].to_string(),
            _ => {
                self.fail(&format!("said {line:?} where we expected {word}"))
                    .await
            }
        }
    }

    /// The next line if the peer has already written it, without waiting.
    pub async fn said(&mut self) -> Option<String> {
        match self.process.next_line(Duration::ZERO).await {
            Ok(line) => Some(line),
            Err(LineError::Read(e)) => self.fail(&format!("reading its output: {e}")).await,
            Err(LineError::Closed | LineError::TimedOut) => None,
        }
    }

    /// Sends one line to the peer.
    pub async fn send(&mut self, line: &str) {
        if let Err(e) = self.process.send(line).await {
            self.fail(&format!("cannot send {line:?}: {e}")).await;
        }
    }

    /// Closes stdin and waits for the peer to exit; it must exit with status 0.
    pub async fn finish(mut self) {
        if let Err(e) = self.process.finish(PEER_TIMEOUT).await {
            self.fail(&e.to_string()).await;
        }
    }

    /// Panics naming the peer, with everything it wrote to stderr (killing it first if it still runs).
    async fn fail(&mut self, what: &str) -> ! {
        self.process.kill(Duration::from_secs(5)).await;
        if let Some(reader) = self.stderr_reader.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
        }
        let stderr = self.stderr.lock().unwrap().clone();
        panic!(
            "peer `{}` (pid {}) {what}; its stderr:\n{stderr}",
            self.process.name(),
            self.pid()
        );
    }
}

/// A counter in a file, incremented by every contender under the lock: any two holders at once lose an
/// update.
pub struct Counter {
    dir: PathBuf,
    file: PathBuf,
}

impl Counter {
    /// A counter at zero, in a fresh directory removed on drop.
    pub fn new() -> Counter {
        let dir = scratch_dir("counter").expect("a directory for the counter file");
        let file = dir.join("counter");
        std::fs::write(&file, "0\n").unwrap();
        Counter { dir, file }
    }

    /// The counter file's path, for peers.
    pub fn path(&self) -> &str {
        self.file.to_str().expect("a UTF-8 temp path")
    }

    /// The current value.
    pub async fn value(&self) -> u64 {
        let text = tokio::fs::read_to_string(&self.file).await.unwrap();
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("the counter file holds {text:?}"))
    }

    /// Read, pause, write back plus one — call it only while holding the lock. The pause widens the window in
    /// which a second holder would lose an update; it synchronises nothing.
    pub async fn increment(&self) {
        let value = self.value().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
        tokio::fs::write(&self.file, format!("{}\n", value + 1))
            .await
            .unwrap();
    }

    /// Read, pause, read again: the value must not change — call it while holding a read lock.
    pub async fn observe(&self) {
        let value = self.value().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(self.value().await, value, "the counter changed under a read lock");
    }
}

impl Default for Counter {
    fn default() -> Counter {
        Counter::new()
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
