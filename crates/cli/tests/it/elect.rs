//! `zklock elect` end to end: real `zklock` processes against a shared real ZooKeeper (and the embedded server).
//! The elected commands append `start`/`tick`/`stop` lines with nanosecond timestamps to one file, so the test can
//! check that no two commands ever ran at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zookeeper_client::Client;

use crate::support::await_children;

/// Generous bound for "this must happen" on a loaded machine.
const EVENTUALLY: Duration = Duration::from_secs(30);
/// The session timeout of the `zklock elect` processes (the minimum a default ZooKeeper allows: 2 ticks).
const SESSION_TIMEOUT_SECS: u64 = 4;

/// The elected command (here and in elect_expiry.rs): logs `start` with its fencing token, then a `tick` every
/// 50 ms, and `stop` when asked to terminate. `$PPID` is the `zklock` process that runs it.
pub(crate) const SCRIPT: &str = r#"
log="$1"
now() { date +%s%N; }
echo "start $PPID $$ $ZKLOCK_FENCING_TOKEN $(now)" >> "$log"
trap 'echo "stop $PPID $$ $ZKLOCK_FENCING_TOKEN $(now)" >> "$log"; exit 0' TERM
while :; do echo "tick $PPID $$ $ZKLOCK_FENCING_TOKEN $(now)" >> "$log"; sleep 0.05; done
"#;

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) what: String,
    pub(crate) zklock: u32,
    pub(crate) shell: u32,
    pub(crate) token: i64,
    pub(crate) at_ns: u128,
}

pub(crate) fn read_log(log: &Path) -> Vec<Line> {
    crate::support::read_log_with(log, |parts| {
        Some(Line {
            what: parts.next()?.to_owned(),
            zklock: parts.next()?.parse().ok()?,
            shell: parts.next()?.parse().ok()?,
            token: parts.next()?.parse().ok()?,
            at_ns: parts.next()?.parse().ok()?,
        })
    })
}

/// Polls the log file (there is no event to await across processes) until `done` holds; bounded in time.
pub(crate) async fn wait_for_log(log: &Path, what: &str, done: impl Fn(&[Line]) -> bool) -> Vec<Line> {
    crate::support::poll_log(log, what, read_log, done).await
}

/// Checks that the commands' activity intervals (first to last line of each shell) never overlap.
fn assert_never_overlapping(lines: &[Line]) {
    let mut shells: Vec<(u32, u128, u128)> = Vec::new();
    for line in lines {
        match shells.iter_mut().find(|(shell, _, _)| *shell == line.shell) {
            Some((_, first, last)) => {
                *first = (*first).min(line.at_ns);
                *last = (*last).max(line.at_ns);
            }
            None => shells.push((line.shell, line.at_ns, line.at_ns)),
        }
    }
    shells.sort_by_key(|(_, first, _)| *first);
    for pair in shells.windows(2) {
        assert!(
            pair[0].2 < pair[1].1,
            "two elected commands ran at once: {pair:?}"
        );
    }
}

struct Elect {
    child: Child,
}

impl Elect {
    fn start(hosts: &str, dir: &str, log: &Path) -> Elect {
        let child = Command::new(env!("CARGO_BIN_EXE_zklock"))
            .args(["elect", "--connect", hosts])
            .args(["--session-timeout", &SESSION_TIMEOUT_SECS.to_string()])
            .args(["--kill-after", "1", dir, "--", "sh", "-c", SCRIPT, "sh"])
            .arg(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start zklock elect");
        Elect { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal).expect("signal zklock");
    }

    /// Waits (bounded) for the process to exit.
    async fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + EVENTUALLY;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for zklock") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "zklock elect {} did not exit",
                self.pid()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Elect {
    fn drop(&mut self) {
        // Only our own child, by pid; its command dies with it (parent-death signal).
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn process_alive(pid: u32) -> bool {
    // A zombie counts as dead: it runs nothing any more.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn connect(hosts: &str) -> Client {
    tokio::time::timeout(EVENTUALLY, Client::connect(hosts))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// A temporary directory with the path of the log in it (written by the commands).
pub(crate) fn temp_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("elected.log");
    (dir, log)
}

/// kill -9 of the leading `zklock`: its command dies with it at once (parent-death signal) and the next candidate
/// takes over once ZooKeeper expires the dead session; then a graceful hand-over by SIGTERM. No overlap anywhere.
async fn handover_after_kill_and_sigterm(hosts: &str) {
    let dir = zklock_testkit::unique_path("cli-elect");
    let (_tmp, log) = temp_log();
    let admin = connect(hosts).await;
    let mut first = Elect::start(hosts, &dir, &log);
    let lines = wait_for_log(&log, "the first leader's command", |l| !l.is_empty()).await;
    assert_eq!(lines[0].zklock, first.pid(), "the only candidate leads");
    let first_shell = lines[0].shell;
    let mut second = Elect::start(hosts, &dir, &log);
    await_children(&admin, &dir, 2).await;

    // kill -9 the leader: its command must die with it, and the second must take over within the session timeout
    // (ZooKeeper expires sessions on tick boundaries: allow two ticks of 2 s and some scheduling slack).
    first.signal(Signal::SIGKILL);
    let killed_at = Instant::now();
    first.wait().await;
    let lines = wait_for_log(&log, "the second leader's command", |l| {
        l.iter()
            .any(|line| line.what == "start" && line.zklock == second.pid())
    })
    .await;
    let takeover = killed_at.elapsed();
    eprintln!("take-over after kill -9 of the leader: {takeover:?}");
    assert!(
        !process_alive(first_shell),
        "the dead leader's command survived it"
    );
    assert!(
        takeover < Duration::from_secs(SESSION_TIMEOUT_SECS + 6),
        "take-over took {takeover:?}"
    );
    assert!(
        !lines.iter().any(|l| l.what == "stop" && l.shell == first_shell),
        "the command was SIGKILLed, not asked to stop"
    );

    // A graceful hand-over: SIGTERM to the leader stops its command, then it resigns and the third leads.
    let mut third = Elect::start(hosts, &dir, &log);
    await_children(&admin, &dir, 2).await;
    second.signal(Signal::SIGTERM);
    assert!(
        second.wait().await.success(),
        "the command's own status (its trap exits 0)"
    );
    let lines = wait_for_log(&log, "the third leader's command", |l| {
        l.iter()
            .any(|line| line.what == "start" && line.zklock == third.pid())
    })
    .await;
    let stop = lines
        .iter()
        .position(|l| l.what == "stop" && l.zklock == second.pid())
        .expect("the second command was stopped gracefully");
    let start = lines
        .iter()
        .position(|l| l.what == "start" && l.zklock == third.pid())
        .unwrap();
    assert!(stop < start);
    third.signal(Signal::SIGTERM);
    assert!(third.wait().await.success());
    assert_never_overlapping(&read_log(&log));
    await_children(&admin, &dir, 0).await;
}

/// Leadership lost (our node deleted by somebody else): the command is stopped and `zklock elect` exits with 75.
async fn lost_leadership_stops_the_command(hosts: &str) {
    let dir = zklock_testkit::unique_path("cli-elect-lost");
    let (_tmp, log) = temp_log();
    let admin = connect(hosts).await;
    let mut leader = Elect::start(hosts, &dir, &log);
    wait_for_log(&log, "the leader's command", |l| !l.is_empty()).await;
    let nodes = await_children(&admin, &dir, 1).await;
    admin.delete(&format!("{dir}/{}", nodes[0]), None).await.unwrap();
    assert_eq!(
        leader.wait().await.code(),
        Some(crate::support::exit::LOST),
        "exit status for lost leadership"
    );
    let lines = read_log(&log);
    assert!(
        lines.iter().any(|l| l.what == "stop" && l.zklock == leader.pid()),
        "the command was asked to stop: {lines:?}"
    );
}

// Each on the shared real ZooKeeper and on the embedded server.
on_both_servers! {
    async fn handover_after_kill_and_sigterm(hosts: &str) {
        handover_after_kill_and_sigterm(hosts).await
    }
    async fn lost_leadership_stops_the_command(hosts: &str) {
        lost_leadership_stops_the_command(hosts).await
    }
}
