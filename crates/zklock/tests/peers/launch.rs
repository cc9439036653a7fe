//! Launching the interoperability peers — a Curator JVM (`CuratorPeer.java`) and a kazoo script
//! (`kazoo_peer.py`) — as child processes that talk to the test line by line, and the counter file they
//! share with zklock contenders.
//!
//! Included with `#[path]` by the zklock and the CLI integration tests, so it uses only std, tokio and the
//! testkit (which finds Java and kazoo, compiles the Curator peer and runs a peer process line by line:
//! `zklock_testkit::peers`).
//!
//! A missing Java, javac, Curator jar or kazoo is a hard failure with instructions, never a silent skip: a
//! green interop suite that tested nothing would be worse than a red one. Every child is spawned with
//! `kill_on_drop`, so a failing test kills (by pid, SIGKILL) the peers it started.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::task::JoinHandle;
use zklock_testkit::peers::{self, CuratorPeer, LineError, PeerProcess};

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
        peers::compile_curator_peer(&classes)
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
    match PYTHON.get_or_init(peers::kazoo_python) {
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
        let java = tokio::task::spawn_blocking(java)
            .await
            .expect("compiling the Curator peer");
        // A small heap and no JIT tiers beyond C1 make the JVM start faster on a loaded machine.
        let mut command = java.command(&["-Xmx128m", "-XX:TieredStopAtLevel=1"]);
        command.args(args);
        Peer::spawn(format!("curator {}", args.join(" ")), command)
    }

    /// `python3 kazoo_peer.py <args>` (see `kazoo_peer.py`: `ACTION CONNECT PATH [ROUNDS FILE]`).
    pub async fn kazoo(args: &[&str]) -> Peer {
        let python = tokio::task::spawn_blocking(python)
            .await
            .expect("looking for kazoo");
        let mut command = peers::kazoo_command(python);
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

impl Drop for Counter {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
