//! The two servers under test — real ZooKeeper 3.8 (through the testkit) and the embedded server (a process of its
//! own) — started, killed, restarted with a stopwatch, and looked at from outside (pid, data directory).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use zklock_testkit::{four_letter_word, ports::free_port, ZooKeeper};
use zookeeper_client as zk;

use super::progress;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// Apache ZooKeeper 3.8 standalone (Debian's package), fsync on.
    Zookeeper,
    /// The embedded server (`zklock-server`), fsync on.
    Embedded,
}

impl ServerKind {
    /// Both, ZooKeeper first.
    pub const BOTH: [ServerKind; 2] = [ServerKind::Zookeeper, ServerKind::Embedded];

    /// The name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::Zookeeper => "ZooKeeper 3.8",
            ServerKind::Embedded => "embedded",
        }
    }
}

/// The environment variable naming another `zklock` binary whose `serve --config` runs the embedded server (to
/// compare two builds); by default this benchmark serves it itself (`compare-scale __serve CONFIG`).
pub const ZKLOCK_BIN_ENV: &str = "ZKLOCK_BIN";

/// How long a server may take to serve after a (re)start, JVM and a million znodes included.
const START_TIMEOUT: Duration = Duration::from_secs(600);

/// One server under test.
pub struct ServerUnderTest {
    /// Which one.
    pub kind: ServerKind,
    inner: Inner,
}

enum Inner {
    /// `None` only while a restart has it on a blocking thread.
    Zookeeper(Option<ZooKeeper>),
    Embedded(Embedded),
}

/// The embedded server's process and its files.
struct Embedded {
    child: Option<Child>,
    addr: SocketAddr,
    config: PathBuf,
    data: PathBuf,
    log: PathBuf,
    program: PathBuf,
    args: Vec<OsString>,
    /// Extra environment of the server process (the hand-off timeline's file).
    env: Vec<(OsString, OsString)>,
    _dir: tempfile::TempDir,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Embedded {
    fn start(&mut self) -> Result<()> {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .arg(&self.config)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = zklock_testkit::spawn_tied_to_process(command)
            .with_context(|| format!("starting {}", self.program.display()))?;
        self.child = Some(child);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and waits (bounded) for the exit: the server writes a snapshot on its way out.
    async fn stop_gracefully(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id())?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    bail!(
                        "the embedded server exited with {status} on SIGTERM; see {}",
                        self.log.display()
                    );
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the embedded server did not stop within {START_TIMEOUT:?} of SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl ServerUnderTest {
    /// Starts a real ZooKeeper 3.8 standalone server with `forceSync=yes` (the testkit turns fsync off for tests)
    /// and waits until it serves. Blocking.
    pub fn zookeeper() -> Result<ServerUnderTest> {
        let zookeeper = ZooKeeper::builder().config("forceSync", "yes").start()?;
        Ok(ServerUnderTest {
            kind: ServerKind::Zookeeper,
            inner: Inner::Zookeeper(Some(zookeeper)),
        })
    }

    /// Starts the embedded server as a process of its own (so that its memory and CPU are its own): this binary's
    /// `__serve CONFIG`, or `$ZKLOCK_BIN serve --config CONFIG`. Its zoo.cfg mirrors what the testkit gives
    /// ZooKeeper (no connection cap, every four-letter word); durability is always on. Blocking; returns once
    /// `ruok` answers `imok`.
    pub fn embedded() -> Result<ServerUnderTest> {
        ServerUnderTest::embedded_with_env(Vec::new())
    }

    /// [`ServerUnderTest::embedded`] with extra environment variables for the server process (the hand-off
    /// timeline's file, [`super::timeline::ENV`]).
    pub fn embedded_with_env(env: Vec<(OsString, OsString)>) -> Result<ServerUnderTest> {
        let (program, args): (PathBuf, Vec<OsString>) = match std::env::var_os(ZKLOCK_BIN_ENV) {
            Some(bin) => (bin.into(), vec!["serve".into(), "--config".into()]),
            None => (std::env::current_exe()?, vec!["__serve".into()]),
        };
        let dir = tempfile::Builder::new()
            .prefix("zklock-scale-embedded-")
            .tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data)?;
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
        let config = dir.path().join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=2000\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n\
                 4lw.commands.whitelist=*\n",
                data.display(),
                addr.port()
            ),
        )?;
        let mut embedded = Embedded {
            child: None,
            addr,
            config,
            data,
            log: dir.path().join("server.log"),
            program,
            args,
            env,
            _dir: dir,
        };
        embedded.start()?;
        wait_imok(addr, Instant::now() + START_TIMEOUT)?;
        Ok(ServerUnderTest {
            kind: ServerKind::Embedded,
            inner: Inner::Embedded(embedded),
        })
    }

    /// Starts `kind`. Blocking.
    pub fn start(kind: ServerKind) -> Result<ServerUnderTest> {
        let started = Instant::now();
        let server = match kind {
            ServerKind::Zookeeper => ServerUnderTest::zookeeper(),
            ServerKind::Embedded => ServerUnderTest::embedded(),
        }
        .with_context(|| format!("starting {}", kind.label()))?;
        progress!(
            "{} serving at {} (pid {}) after {:.0} ms",
            kind.label(),
            server.addr(),
            server.pid().unwrap_or(0),
            started.elapsed().as_secs_f64() * 1e3
        );
        Ok(server)
    }

    /// Stops the embedded server with SIGTERM (it writes its snapshot, and its timeline if it records one) and waits
    /// for it to exit; nothing for ZooKeeper (stopped when dropped).
    pub async fn stop(&mut self) -> Result<()> {
        match &mut self.inner {
            Inner::Embedded(embedded) => embedded.stop_gracefully().await,
            Inner::Zookeeper(_) => Ok(()),
        }
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        match &self.inner {
            Inner::Zookeeper(zookeeper) => zookeeper
                .as_ref()
                .map(|z| z.member_addr(0))
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))),
            Inner::Embedded(embedded) => embedded.addr,
        }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        self.addr().to_string()
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        match &self.inner {
            Inner::Zookeeper(zookeeper) => zookeeper.as_ref().and_then(|z| z.pid(0)),
            Inner::Embedded(embedded) => embedded.child.as_ref().map(Child::id),
        }
    }

    /// The data directory (snapshots and logs).
    pub fn data_dir(&self) -> PathBuf {
        match &self.inner {
            Inner::Zookeeper(zookeeper) => zookeeper.as_ref().map(|z| z.data_dir(0)).unwrap_or_default(),
            Inner::Embedded(embedded) => embedded.data.clone(),
        }
    }

    /// Kills the server (SIGKILL: a crash, as far as the data directory is concerned), starts it again on the
    /// same data and measures, from the moment the new process is started, when `ruok` first answers `imok` and
    /// when a new session first reads `read_path` (connect, then getData: what a client waits for).
    pub async fn restart_timed(&mut self, read_path: &str) -> Result<RestartTimes> {
        let addr = self.addr();
        let deadline = Instant::now() + START_TIMEOUT;
        let (started, relaunch) = match &mut self.inner {
            Inner::Zookeeper(slot) => {
                let mut zookeeper = slot.take().context("ZooKeeper is not running")?;
                zookeeper.kill(0);
                let started = Instant::now();
                let relaunch = tokio::task::spawn_blocking(move || {
                    let result = zookeeper.restart(0);
                    (zookeeper, result)
                });
                (started, Some(relaunch))
            }
            Inner::Embedded(embedded) => {
                embedded.kill();
                let started = Instant::now();
                embedded.start()?;
                (started, None)
            }
        };
        let imok = tokio::task::spawn_blocking(move || wait_imok(addr, deadline)).await;
        let imok_at = Instant::now();
        let read = match imok {
            Ok(Ok(())) => first_read(addr, read_path, deadline).await,
            Ok(Err(e)) => Err(e),
            Err(e) => Err(e.into()),
        };
        let read_at = Instant::now();
        if let Some(relaunch) = relaunch {
            let (zookeeper, result) = relaunch.await?;
            if let Inner::Zookeeper(slot) = &mut self.inner {
                *slot = Some(zookeeper);
            }
            result.context("restarting ZooKeeper")?;
        }
        read?;
        Ok(RestartTimes {
            imok: imok_at - started,
            first_read: read_at - started,
        })
    }

    /// Makes sure the newest snapshot holds the whole tree and returns its size in bytes. ZooKeeper writes one as
    /// it starts (after loading its data, before serving), so after [`ServerUnderTest::restart_timed`] the newest
    /// one is complete once its size stops changing. The embedded server writes one when it shuts down: it is
    /// stopped with SIGTERM and started again (untimed).
    pub async fn full_snapshot(&mut self) -> Result<Option<u64>> {
        match &mut self.inner {
            Inner::Zookeeper(_) => {
                let dir = self.data_dir();
                let settle = tokio::task::spawn_blocking(move || {
                    let deadline = Instant::now() + START_TIMEOUT;
                    let mut last = None;
                    loop {
                        let now = crate::scale::measure::newest_snapshot(&dir);
                        if now.is_some() && now == last {
                            return now.map(|(_, len)| len);
                        }
                        if Instant::now() > deadline {
                            return now.map(|(_, len)| len);
                        }
                        last = now;
                        std::thread::sleep(Duration::from_millis(500));
                    }
                });
                Ok(settle.await?)
            }
            Inner::Embedded(embedded) => {
                let addr = embedded.addr;
                embedded.stop_gracefully().await?;
                let snapshot = crate::scale::measure::newest_snapshot(&embedded.data).map(|(_, len)| len);
                embedded.start()?;
                tokio::task::spawn_blocking(move || wait_imok(addr, Instant::now() + START_TIMEOUT))
                    .await??;
                Ok(snapshot)
            }
        }
    }
}

/// How long a restart took, from starting the new process.
#[derive(Debug, Clone, Copy)]
pub struct RestartTimes {
    /// Until `ruok` answered `imok`.
    pub imok: Duration,
    /// Until a new session had read a znode.
    pub first_read: Duration,
}

/// Polls `ruok` every millisecond until the answer is `imok`. Blocking.
fn wait_imok(addr: SocketAddr, deadline: Instant) -> Result<()> {
    loop {
        if let Ok(reply) = four_letter_word(addr, "ruok", Duration::from_secs(2)) {
            if reply.trim() == "imok" {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("{addr} did not answer ruok with imok in time");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Connects a fresh session and reads `path`, retrying every 2 ms until it works.
async fn first_read(addr: SocketAddr, path: &str, deadline: Instant) -> Result<()> {
    let hosts = addr.to_string();
    loop {
        let attempt = tokio::time::timeout(Duration::from_secs(5), async {
            let client = zk::Client::connector()
                .with_session_timeout(Duration::from_secs(10))
                .with_connection_timeout(Duration::from_secs(2))
                .with_fail_eagerly()
                .connect(&hosts)
                .await?;
            let read = client.get_data(path).await.map(|_| ());
            zklock_bench::close(client).await;
            read
        })
        .await;
        if let Ok(Ok(())) = attempt {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no session could read {path} at {addr} in time: {attempt:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The `java` the testkit starts ZooKeeper with, replaced by a wrapper that runs ZooKeeper the way Debian's
/// package does: the testkit's start-up flags for tests (`-XX:TieredStopAtLevel=1`, `-XX:+UseSerialGC`,
/// `-Xmx256m`) are removed, so the JVM uses its default JIT, collector and heap limit (a quarter of the RAM), or
/// `-Xmx<heap>` when given. Writes the wrapper into `dir` and returns its path, for `ZKLOCK_TEST_JAVA`; set that
/// before anything of the testkit runs.
pub fn stock_jvm(dir: &Path, heap: Option<&str>) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let java = std::env::var_os(zklock_testkit::install::JAVA_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/java"));
    let heap = match heap {
        Some(heap) if heap.chars().all(|c| c.is_ascii_alphanumeric()) => format!(" -Xmx{heap}"),
        Some(heap) => bail!("--zk-heap {heap:?}: expected a size such as 4g or 1500m"),
        None => String::new(),
    };
    let wrapper = dir.join("java");
    let script = format!(
        "#!/bin/sh\n\
         # Only the JVM that runs ZooKeeper's QuorumPeerMain is changed; every other java (the Curator peer) runs as asked.\n\
         case \"$*\" in *QuorumPeerMain*) ;; *) exec '{java}' \"$@\";; esac\n\
         for a in \"$@\"; do shift; case \"$a\" in -XX:TieredStopAtLevel=1|-XX:+UseSerialGC|-Xmx256m) ;; *) set -- \"$@\" \"$a\";; esac; done\n\
         exec '{java}'{heap} \"$@\"\n",
        java = java.display()
    );
    std::fs::write(&wrapper, script)?;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    Ok(wrapper)
}

/// `compare-scale __serve CONFIG`: the embedded server on the zoo.cfg `config`, until SIGTERM or SIGINT (then a
/// clean shutdown, which writes a snapshot) — what `zklock serve --config CONFIG` does, without the CLI around it.
pub fn serve_embedded(config: &Path) -> Result<()> {
    let config = zklock_server::ServerConfig::from_zoo_cfg(config)
        .with_context(|| format!("reading {}", config.display()))?;
    // As `zklock serve`: a multi-thread runtime with the default number of workers.
    let timeline = std::env::var_os(super::timeline::ENV).map(PathBuf::from);
    if timeline.is_some() {
        super::timeline::install();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let served = runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let server = zklock_server::Server::start(config).await?;
        eprintln!(
            "compare-scale: embedded server listening on {}",
            server.local_addr()
        );
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
            failure = server.log_failure() => bail!("{failure}"),
        }
        server.shutdown().await?;
        Ok(())
    });
    if let Some(path) = timeline {
        super::timeline::write(&path)?;
    }
    served
}
