//! `zklock run` and `zklock elect` on a terminal (a pseudo-terminal whose session `zklock` leads, as a login shell's
//! job would be): the command is the terminal's foreground job. It reads the terminal (no SIGTTIN stop), the
//! terminal's Ctrl-C reaches it, and after a Ctrl-Z `zklock` has the terminal back and still holds the lock.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::sync::watch;
use zklock_testkit::hosts::embedded;
use zklock_testkit::unique_path;

use crate::support::*;

/// `zklock` started on a fresh pty, as the leader of a new session with the pty as its controlling terminal, and
/// so the terminal's foreground process group.
struct OnPty {
    zklock: tokio::process::Child,
    /// The terminal's keyboard.
    master: File,
    /// Everything the terminal has shown so far.
    screen: watch::Receiver<String>,
}

impl OnPty {
    /// `zklock ARGS`.
    fn start(args: &[&str]) -> OnPty {
        OnPty::spawn(zklock(args))
    }

    /// An interactive `bash` (no start-up files), with the prompt `PROMPT>`.
    fn interactive_shell() -> OnPty {
        let mut bash = tokio::process::Command::new("bash");
        bash.args(["--norc", "--noprofile", "-i"])
            .env("PS1", "PROMPT> ")
            .kill_on_drop(true);
        OnPty::spawn(bash)
    }

    fn spawn(mut command: tokio::process::Command) -> OnPty {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        command
            .stdin(pty.slave.try_clone().unwrap())
            .stdout(pty.slave.try_clone().unwrap())
            .stderr(pty.slave.try_clone().unwrap());
        // SAFETY: runs in the forked child before exec; setsid and ioctl are async-signal-safe system calls, and
        // fd 0 is the pty's slave, set up by the spawn.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid()?;
                rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
                Ok(())
            });
        }
        let zklock = command.spawn().expect("spawn on the pty");
        // The slave's last descriptors are now the child's (and its descendants'): the master reads end when they exit.
        drop(command);
        drop(pty.slave);
        let master = File::from(pty.master);
        let mut reader = master.try_clone().unwrap();
        let (shown, screen) = watch::channel(String::new());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            // EIO once every process holding the slave has exited.
            while let Ok(read @ 1..) = reader.read(&mut chunk) {
                shown.send_modify(|screen| screen.push_str(&String::from_utf8_lossy(&chunk[..read])));
            }
        });
        OnPty {
            zklock,
            master,
            screen,
        }
    }

    /// Waits until the terminal has shown `text`.
    async fn expect(&mut self, text: &str) {
        let shown = tokio::time::timeout(EVENTUALLY, self.screen.wait_for(|screen| screen.contains(text)))
            .await
            .is_ok_and(|shown| shown.is_ok());
        if !shown {
            panic!(
                "the terminal never showed {text:?}; it shows:\n{}",
                *self.screen.borrow()
            );
        }
    }

    /// Types `keys` on the terminal's keyboard.
    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// zklock's exit status, and the whole screen.
    async fn exit_code(mut self) -> (Option<i32>, String) {
        let status = tokio::time::timeout(EVENTUALLY, self.zklock.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "zklock did not exit; the terminal shows:\n{}",
                    *self.screen.borrow()
                )
            })
            .unwrap();
        // Whatever the command printed last is read by now or soon: the reader ends when the slave closes.
        let _ = tokio::time::timeout(EVENTUALLY, self.screen.wait_for(|_| false)).await;
        let screen = self.screen.borrow().clone();
        (status.code(), screen)
    }
}

/// Types `hello` for the command's `read` (`read x; echo got:$x`): the command gets it, and zklock exits 0 leaving no
/// node under `path`.
async fn answer_hello(mut pty: OnPty, hosts: &str, path: &str) {
    pty.type_keys("hello\n");
    pty.expect("got:hello").await;
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(0), "the terminal shows:\n{screen}");
    assert_eq!(nodes(hosts, path).await, Vec::<String>::new());
}

/// Our node under `path`: there while the lock is held, gone once released (and the directory too, once the server
/// has swept the empty container).
async fn nodes(hosts: &str, path: &str) -> Vec<String> {
    match client(hosts).await.list_children(path).await {
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        listed => listed.unwrap(),
    }
}

/// The pid the command printed as `pid:<n>`.
fn command_pid(screen: &str) -> Pid {
    let digits: String = screen
        .split("pid:")
        .nth(1)
        .expect("the command printed its pid")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Pid::from_raw(digits.parse().unwrap())
}

/// Types a line for `read` in the command of `zklock <kind>`: the command must get it, and exit 0.
async fn reads_the_terminal(kind: &str) {
    let hosts = embedded().await;
    let path = unique_path(&format!("cli-terminal-read-{kind}"));
    let script = "echo ready:; read -t 30 x; echo got:$x";
    let mut pty = OnPty::start(&[kind, "--connect", &hosts, &path, "--", "bash", "-c", script]);
    // Typed only once the command waits in `read`: without the terminal, that read stops it (SIGTTIN).
    pty.expect("ready:").await;
    answer_hello(pty, &hosts, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_gives_the_command_the_terminal() {
    reads_the_terminal("run").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_gives_the_command_the_terminal() {
    reads_the_terminal("elect").await;
}

/// A password prompt (`read -s`, which turns the terminal's echo off: a background job is stopped by SIGTTOU right
/// there) with nothing typed times out as it would in a shell (status 142: SIGALRM), rather than stopping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_from_the_terminal_times_out_normally() {
    let hosts = embedded().await;
    let path = unique_path("cli-terminal-timeout");
    let script = "read -s -t 1 x; echo read-status:$?";
    let mut pty = OnPty::start(&["run", "--connect", &hosts, &path, "--", "bash", "-c", script]);
    pty.expect("read-status:142").await;
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(0), "the terminal shows:\n{screen}");
}

/// Ctrl-C on the terminal, while the command sleeps or waits at a prompt, ends the command (it dies of SIGINT: 130),
/// and the lock is released. (At a prompt, a command in the terminal's background would be stopped by SIGTTIN and a
/// forwarded SIGINT would wait for a SIGCONT.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_the_command_and_releases_the_lock() {
    let hosts = embedded().await;
    for (name, script) in [
        ("sleep", "echo ready:; sleep 30; echo after"),
        ("prompt", "echo ready:; read x; echo after"),
    ] {
        let path = unique_path(&format!("cli-terminal-ctrl-c-{name}"));
        let mut pty = OnPty::start(&["run", "--connect", &hosts, &path, "--", "bash", "-c", script]);
        pty.expect("ready:").await;
        assert_eq!(nodes(&hosts, &path).await.len(), 1, "held while the command runs");
        pty.type_keys("\x03");
        let (code, screen) = pty.exit_code().await;
        assert_eq!(code, Some(130), "{name}: the terminal shows:\n{screen}");
        assert!(!screen.contains("after"), "{name}: the terminal shows:\n{screen}");
        assert_eq!(nodes(&hosts, &path).await, Vec::<String>::new(), "{name}");
    }
}

/// Ctrl-Z stops the command; zklock keeps the lock, says so, and takes the terminal back (so the next Ctrl-C reaches
/// zklock, which forwards it and continues the command: it dies of it). A `kill -CONT` resumes the command with the
/// terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_stops_the_command_and_zklock_keeps_the_lock() {
    let hosts = embedded().await;
    let script = "echo pid:$$; read -t 30 x; echo got:$x";

    // Ctrl-Z, then Ctrl-C.
    let path = unique_path("cli-terminal-ctrl-z-c");
    let mut pty = OnPty::start(&["run", "--connect", &hosts, &path, "--", "bash", "-c", script]);
    pty.expect("pid:").await;
    pty.type_keys("\x1a");
    pty.expect("is stopped (SIGTSTP)").await;
    assert_eq!(
        nodes(&hosts, &path).await.len(),
        1,
        "held while the command is stopped"
    );
    pty.type_keys("\x03");
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(130), "the terminal shows:\n{screen}");
    assert_eq!(nodes(&hosts, &path).await, Vec::<String>::new());

    // Ctrl-Z, then `kill -CONT`: the command reads the terminal again.
    let path = unique_path("cli-terminal-ctrl-z-cont");
    let mut pty = OnPty::start(&["run", "--connect", &hosts, &path, "--", "bash", "-c", script]);
    pty.expect("pid:").await;
    pty.type_keys("\x1a");
    pty.expect("is stopped (SIGTSTP)").await;
    let pid = command_pid(&pty.screen.borrow());
    kill(pid, Signal::SIGCONT).unwrap();
    answer_hello(pty, &hosts, &path).await;
}

/// In an interactive shell, `zklock run … &` is a background job: zklock leaves the terminal alone, and the
/// command's password prompt (`read -s`) stops it with SIGTTOU — what the tests above would see without the hand-over
/// (their negative control). The shell's `fg` then brings zklock to the foreground, and the command gets the terminal
/// and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_zklock_gives_the_command_the_terminal_on_fg() {
    let hosts = embedded().await;
    let path = unique_path("cli-terminal-background");
    let mut pty = OnPty::interactive_shell();
    pty.expect("PROMPT>").await;
    // Quoted so that the shell's echo of the line does not show what the command prints.
    pty.type_keys(&format!(
        "{} run --connect {hosts} {path} -- bash -c 'echo p\"i\"d:$$; read -s x; echo g\"o\"t:$x' &\n",
        env!("CARGO_BIN_EXE_zklock")
    ));
    pty.expect("pid:").await;
    let pid = command_pid(&pty.screen.borrow());
    // Not our child: no event tells its stop, so look at its state (bounded).
    let stopped = async {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            // The state follows the parenthesised command name.
            if stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('T'))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(EVENTUALLY, stopped)
        .await
        .expect("the command was stopped by SIGTTOU");
    pty.expect("Bringing zklock to the foreground (fg) resumes the command")
        .await;
    assert_eq!(
        nodes(&hosts, &path).await.len(),
        1,
        "held while the command is stopped"
    );
    // The shell reads its line byte by byte: the next line waits in the terminal for whoever reads it next.
    pty.type_keys("fg\nhello\n");
    pty.expect("got:hello").await;
    pty.type_keys("echo c\"o\"de:$?\n");
    pty.expect("code:0").await;
    assert_eq!(nodes(&hosts, &path).await, Vec::<String>::new());
    pty.type_keys("exit\n");
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(0), "the shell; the terminal shows:\n{screen}");
}

/// `zklock watch` on a terminal: the lines show as they come, and Ctrl-C ends it with 0 (the terminal's SIGINT
/// reaches zklock, the foreground job).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_on_a_terminal_shows_changes_and_ends_on_ctrl_c() {
    let hosts = embedded().await;
    let path = unique_path("cli-terminal-watch");
    let writer = client(&hosts).await;
    writer.create(&path, b"first", &persistent()).await.unwrap();
    let mut pty = OnPty::start(&["watch", "--connect", &hosts, &path]);
    pty.expect(&format!("initialized {path} (1 node(s))")).await;
    writer.set_data(&path, b"second", None).await.unwrap();
    pty.expect(&format!("changed {path} \"second\"")).await;
    pty.type_keys("\x03");
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(0), "the terminal shows:\n{screen}");
    assert!(screen.contains(&format!("created {path} \"first\"")), "{screen}");
}

/// `--on-suspend stop` (the default) on a terminal: a command the watchdog stopped for an unconfirmed session stays
/// stopped when the user presses Ctrl-C — zklock, which has the terminal back meanwhile, says the SIGINT waits — and
/// once the server answers again and the session is confirmed, the command is continued and acts on it (exit 130).
/// Continuing it at once, as for a Ctrl-Z stop, would let it run while another holder may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_suspended_waits_for_the_session() {
    let hosts = embedded().await;
    let proxy = zklock_testkit::Proxy::start(hosts.parse().unwrap())
        .await
        .unwrap();
    let connect = proxy.connect_string();
    let path = unique_path("cli-terminal-suspended-ctrl-c");
    let script = "echo pid:$$; trap 'echo got-int; exit 130' INT; while :; do sleep 0.1; done";
    let mut pty = OnPty::start(&["run", "--connect", &connect, &path, "--", "bash", "-c", script]);
    pty.expect("pid:").await;
    let pid = command_pid(&pty.screen.borrow()).as_raw();
    proxy.set_blackhole(true);
    proxy.cut_all();
    pty.expect("is stopped until our ZooKeeper session is confirmed")
        .await;
    pty.type_keys("\x03");
    pty.expect("reaches it then").await;
    assert_eq!(process_state(pid), Some('T'), "still stopped after Ctrl-C");
    proxy.set_blackhole(false);
    pty.expect("got-int").await;
    let (code, screen) = pty.exit_code().await;
    assert_eq!(code, Some(130), "the terminal shows:\n{screen}");
    assert!(screen.contains("continuing the command (SIGCONT)"), "{screen}");
}
