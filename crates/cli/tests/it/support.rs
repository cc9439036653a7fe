//! Running the `zklock` binary in tests.

use std::future::Future;
use std::process::{Output, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use zookeeper_client::{self as zk, Client};

/// Generous bound for "this must happen" on a loaded 2-core machine.
pub const EVENTUALLY: Duration = Duration::from_secs(60);

/// zklock's own exit statuses, as its `--help` and docs/cli.md give them: sysexits(3) codes, so that none is taken
/// for the status of the command it runs. (The binary's `exit.rs` has them too; a test cannot import from a binary,
/// and these are what scripts test, written out.)
pub mod exit {
    /// A usage error, clap's included (`EX_USAGE`).
    pub const USAGE: i32 = 64;
    /// ZooKeeper cannot be reached, fails, or refuses us (`EX_UNAVAILABLE`).
    pub const UNAVAILABLE: i32 = 69;
    /// `serve`: any failure without a status of its own: bind, config, data directory (`EX_OSERR`).
    pub const OS_ERROR: i32 = 71;
    /// `serve`: the data directory is in use by another server (`EX_CANTCREAT`).
    pub const DIR_IN_USE: i32 = 73;
    /// `serve`: the transaction log cannot be written (`EX_IOERR`).
    pub const LOG_UNWRITABLE: i32 = 74;
    /// `run`, `elect`: the lock or leadership was lost while the command ran (`EX_TEMPFAIL`).
    pub const LOST: i32 = 75;
}

/// The connect string of this test binary's shared real ZooKeeper.
pub async fn zookeeper() -> String {
    zklock_testkit::hosts::standalone().await
}

/// `zklock` with `args`, not yet started.
pub fn zklock(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_zklock"));
    command.args(args).env_remove("ZKLOCK_CONNECT").kill_on_drop(true);
    command
}

/// Runs `zklock` to completion (bounded).
pub async fn output(args: &[&str]) -> Output {
    completed(&mut zklock(args)).await
}

/// Runs `command` to completion (bounded).
pub async fn completed(command: &mut tokio::process::Command) -> Output {
    eventually(&format!("{command:?} to finish"), command.output())
        .await
        .expect("run zklock")
}

/// Runs `command` to completion (bounded), and how long it took.
pub async fn timed(command: &mut tokio::process::Command) -> (Output, Duration) {
    let started = std::time::Instant::now();
    let out = completed(command).await;
    (out, started.elapsed())
}

/// Runs `command` (bounded); asserts that it exits with `code` and says `expected` on standard error, which it
/// returns.
pub async fn fails_with(command: &mut tokio::process::Command, code: i32, expected: &str) -> String {
    let out = completed(command).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{command:?}: {stderr}");
    assert!(stderr.contains(expected), "{command:?}: {stderr}");
    stderr
}

/// The arguments of `zklock run --sasl SASL` under `--acl ACL` whose command prints its lock node ("held NODE").
pub fn run_printing_node<'a>(hosts: &'a str, sasl: &'a str, acl: &'a str, path: &'a str) -> [&'a str; 12] {
    let print_node = "echo \"held $ZKLOCK_NODE\"";
    [
        "--connect",
        hosts,
        "run",
        "--sasl",
        sasl,
        "--acl",
        acl,
        path,
        "--",
        "sh",
        "-c",
        print_node,
    ]
}

/// `zklock` with `args` and no credentials from the test's own environment: the variables that give it
/// credentials (digest, SASL, Kerberos, TLS) removed.
pub fn without_credentials(args: &[&str]) -> tokio::process::Command {
    let mut command = zklock(args);
    for name in [
        "ZKLOCK_AUTH",
        "ZKLOCK_SASL",
        "ZKLOCK_SASL_PASSWORD",
        "ZKLOCK_KEYTAB",
        "ZKLOCK_TLS_CA",
        "ZKLOCK_TLS_CERT",
        "ZKLOCK_TLS_KEY",
        "KRB5_CLIENT_KTNAME",
    ] {
        command.env_remove(name);
    }
    command
}

/// Awaits `future` for at most [`EVENTUALLY`]; `what` names it in the panic.
pub async fn eventually<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(EVENTUALLY, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A running `zklock` (the one process harness of these tests): its standard output read line by line, its
/// standard input a pipe kept open until [`close_stdin`](Running::close_stdin) (a command's `read` waits on it),
/// its standard error collected at [`finish`](Running::finish). Killed if dropped unfinished.
pub struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Option<Lines<BufReader<ChildStdout>>>,
}

impl Running {
    /// Starts `command` with its three streams piped.
    pub fn start(command: &mut tokio::process::Command) -> Running {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start zklock");
        let stdin = child.stdin.take();
        let lines = Some(BufReader::new(child.stdout.take().unwrap()).lines());
        Running { child, stdin, lines }
    }

    /// `zklock ARGS`, started.
    pub fn zklock(args: &[&str]) -> Running {
        Running::start(&mut zklock(args))
    }

    pub fn pid(&self) -> i32 {
        self.child.id().expect("zklock runs") as i32
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).expect("signal zklock");
    }

    /// The next line of standard output (bounded); panics at its end.
    pub async fn line(&mut self, what: &str) -> String {
        self.next_line(what)
            .await
            .unwrap_or_else(|| panic!("no more output while waiting for {what}"))
    }

    /// The next line of standard output (bounded), `None` at its end.
    pub async fn next_line(&mut self, what: &str) -> Option<String> {
        let lines = self.lines.as_mut().expect("standard output not forwarded");
        eventually(what, lines.next_line()).await.expect("read stdout")
    }

    /// Writes `line` to the standard input.
    pub async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("standard input still open");
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    /// Writes `line` and closes the standard input: a command waiting in `read` goes on.
    pub async fn release(&mut self, line: &str) {
        self.send(line).await;
        self.close_stdin();
    }

    /// [`release`](Running::release)s the command with `line` and waits (bounded) for `zklock` to exit: its exit
    /// code and standard error.
    pub async fn end(mut self, line: &str) -> (Option<i32>, String) {
        self.release(line).await;
        self.finish().await
    }

    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Sends each line of standard output to `to` as `(tag, line)`, from now on.
    pub fn forward_lines(&mut self, tag: usize, to: mpsc::UnboundedSender<(usize, String)>) {
        let mut lines = self.lines.take().expect("standard output not forwarded yet");
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if to.send((tag, line)).is_err() {
                    break;
                }
            }
        });
    }

    /// Waits (bounded) for `zklock` to exit: its exit code and standard error. The standard input stays open
    /// until then unless closed before.
    pub async fn finish(mut self) -> (Option<i32>, String) {
        let stdin = self.stdin.take();
        let out = eventually("zklock to exit", self.child.wait_with_output())
            .await
            .expect("wait for zklock");
        drop(stdin);
        (out.status.code(), text(&out.stderr))
    }
}

/// Catches `client` up with everything committed so far.
pub async fn sync(client: &Client, path: &str) {
    match client.sync(path).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(err) => panic!("sync {path}: {err}"),
    }
}

/// The children of `dir` left, after a sync (none if it is gone: lock directories are containers, which the
/// server may delete).
pub async fn remaining(client: &Client, dir: &str) -> Vec<String> {
    sync(client, dir).await;
    match client.list_children(dir).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => Vec::new(),
        Err(err) => panic!("listing {dir}: {err}"),
    }
}

/// A session of its own holding the lock at `path` (a `zklock::Mutex`): the session and the guard.
pub async fn lock_held(hosts: &str, path: &str) -> (Client, zklock::Guard) {
    let holder = client(hosts).await;
    let guard = zklock::Mutex::new(&holder, path).unwrap().lock().await.unwrap();
    (holder, guard)
}

/// A persistent node anyone may do anything with.
pub fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// A session authenticated with digest as `user`.
pub async fn as_user(hosts: &str, user: &str, password: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .with_auth("digest", format!("{user}:{password}").as_bytes())
        .connect(hosts)
        .await
        .expect("connect")
}

/// Whether `client` may create a child `name` (ephemeral, open to anyone) of `path`.
pub async fn create_in(client: &Client, path: &str, name: &str) -> Result<(), zk::Error> {
    client
        .create(
            &format!("{path}/{name}"),
            b"",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .map(drop)
}

/// A client session for inspecting or preparing the tree.
pub async fn client(hosts: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(hosts)
        .await
        .expect("connect")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts that the process of `out` (`what`) exited with `code`; shows its standard output and error if not.
pub fn assert_exit(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Asserts that a `zklock` given a file of secrets other users may read ran (exit 0) and warned about it.
pub fn assert_warned_readable_secrets(out: &Output) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning") && stderr.contains("can be read by other users"),
        "{stderr}"
    );
    // Once, however many times the file is read (issue 33.9).
    assert_eq!(
        stderr.matches("can be read by other users").count(),
        1,
        "{stderr}"
    );
}

/// A new temporary directory holding the file `name` with `contents`; both go when the directory is dropped.
pub fn temp_file(name: &str, contents: impl AsRef<[u8]>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, contents).unwrap();
    (dir, file)
}

/// Waits (an event: a pidfd becomes readable when its process ends — any process, not only our children) until
/// `pid` has exited.
pub async fn exited(pid: i32) {
    let pid = rustix::process::Pid::from_raw(pid).expect("a valid pid");
    let pidfd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return, // already gone (and reaped)
        Err(err) => panic!("pidfd_open: {err}"),
    };
    tokio::time::timeout(
        EVENTUALLY,
        tokio::task::spawn_blocking(move || {
            let mut fds = [rustix::event::PollFd::new(&pidfd, rustix::event::PollFlags::IN)];
            while rustix::event::poll(&mut fds, None).expect("poll") == 0 {}
        }),
    )
    .await
    .expect("the process exited")
    .unwrap();
}

/// Waits, with child watches, until `dir` has `count` children; returns them, sorted.
pub async fn await_children(client: &Client, dir: &str, count: usize) -> Vec<String> {
    let wait = async {
        loop {
            match client.list_and_watch_children(dir).await {
                Ok((mut children, _)) if children.len() == count => {
                    children.sort();
                    return children;
                }
                Ok((_, watcher)) => drop(watcher.changed().await),
                Err(zk::Error::NoNode) => {
                    let (stat, watcher) = client.check_and_watch_stat(dir).await.unwrap();
                    if stat.is_none() {
                        drop(watcher.changed().await);
                    }
                }
                Err(err) => panic!("listing {dir}: {err}"),
            }
        }
    };
    tokio::time::timeout(EVENTUALLY, wait)
        .await
        .unwrap_or_else(|_| panic!("{dir}: never {count} children"))
}

/// Runs each body against the shared real ZooKeeper and the embedded server: `<test>::zookeeper` and
/// `<test>::embedded`.
macro_rules! on_both_servers {
    ($($tests:tt)*) => {
        zklock_testkit::on_servers! {
            [zookeeper => crate::support::zookeeper, embedded => zklock_testkit::hosts::embedded]
            $($tests)*
        }
    };
}

/// Each line of a log file that `zklock` commands append to, parsed by `parse` from its fields (split at white
/// space); a line it cannot parse (one still being written) is left out, and a log not written yet has none.
pub fn read_log_with<L>(
    log: &std::path::Path,
    parse: impl Fn(&mut std::str::SplitWhitespace<'_>) -> Option<L>,
) -> Vec<L> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| parse(&mut line.split_whitespace()))
        .collect()
}

/// Polls a log file that `zklock` commands append to (there is no event to await across processes), read with
/// `read`, until `done` holds; bounded by [`EVENTUALLY`]. Returns the lines that satisfied it.
pub async fn poll_log<L: std::fmt::Debug>(
    log: &std::path::Path,
    what: &str,
    read: impl Fn(&std::path::Path) -> Vec<L>,
    done: impl Fn(&[L]) -> bool,
) -> Vec<L> {
    let deadline = std::time::Instant::now() + EVENTUALLY;
    loop {
        let lines = read(log);
        if done(&lines) {
            return lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}; log: {lines:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The state letter of process `pid` in `/proc/PID/stat` (`R`, `S`, `T` for stopped, ...); `None` once it is gone
/// (or reaped).
pub fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may hold spaces): " S ...".
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Polls (no event tells a process's stop to a non-parent) until process `pid`'s state satisfies `ok` (`None`:
/// gone); bounded by [`EVENTUALLY`].
pub async fn await_process_state(pid: i32, what: &str, ok: impl Fn(Option<char>) -> bool) {
    eventually(what, async {
        while !ok(process_state(pid)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Every line of `stderr` as a JSON object with the log's keys; panics at the first that is not.
pub fn json_lines(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not a JSON line ({err}): {line:?}\nstderr:\n{stderr}"));
            for key in ["timestamp", "level", "target", "message"] {
                assert!(value.get(key).is_some(), "{key} missing: {line}");
            }
            value
        })
        .collect()
}
