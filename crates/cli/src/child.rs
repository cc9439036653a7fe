//! Running the user's command so that it can never outlive our hold on the lock.
//!
//! The child gets its own process group (so the whole group can be signalled, and a terminal's Ctrl-C reaches it
//! only through us) and a parent-death signal: if `zklock` dies — even by `kill -9` — the kernel sends the child
//! SIGKILL. Linux fires that signal when the *thread* that forked the child exits, so the child must be spawned
//! from a thread that lives as long as the process: `zklock run` uses a current-thread runtime on the main thread
//! and spawns from it.
//!
//! The parent-death signal reaches only the direct child, not processes it forked into its group (`sh -c 'a; b'`).
//! So a small watchdog — `zklock` itself, re-executed as the hidden `__watchdog` command, in a process group of
//! its own — holds a pipe from us: when that pipe closes without a goodbye byte, because we died, it kills the whole
//! process group of the command.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::ExitStatus;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// A running command in its own process group.
pub struct Child {
    inner: tokio::process::Child,
    pgid: Pid,
    watchdog: Option<std::process::Child>,
}

impl Child {
    /// Spawns `argv` with extra environment variables.
    pub fn spawn(argv: &[String], env: &[(&str, String)]) -> io::Result<Child> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| io::Error::other("no command given"))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .process_group(0);
        let parent = nix::unistd::getpid();
        // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe system calls
        // (prctl, getppid); it allocates nothing.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)).map_err(io::Error::from)?;
                // We may have died between fork and prctl: then nobody would ever signal this child.
                if nix::unistd::getppid() != parent {
                    return Err(io::Error::other("zklock exited before the command started"));
                }
                Ok(())
            });
        }
        let inner = command.spawn()?;
        let pid = inner
            .id()
            .ok_or_else(|| io::Error::other("child exited before it had a pid"))?;
        let watchdog = match spawn_watchdog(pid as i32) {
            Ok(watchdog) => Some(watchdog),
            Err(err) => {
                tracing::warn!(%err, "no watchdog: processes forked by the command may outlive a killed zklock");
                None
            }
        };
        Ok(Child {
            inner,
            pgid: Pid::from_raw(pid as i32),
            watchdog,
        })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// Sends `signal` to the child's whole process group.
    pub fn signal(&self, signal: Signal) {
        if let Err(err) = killpg(self.pgid, signal) {
            tracing::debug!(%err, ?signal, "signalling the command's process group");
        }
    }

    /// SIGTERM to the command's process group, SIGKILL after `grace` if it is still running; waits for it.
    pub async fn stop(&mut self, grace: std::time::Duration) {
        self.signal(Signal::SIGTERM);
        if tokio::time::timeout(grace, self.wait()).await.is_err() {
            eprintln!("zklock: the command ignored SIGTERM for {grace:?}; sending SIGKILL");
            self.signal(Signal::SIGKILL);
            let _ = self.wait().await;
        }
    }

    /// Waits for the child to exit.
    ///
    /// Whatever the command left running in its process group (`sh -c 'worker & exit'`) is killed as well:
    /// nothing it started may go on once we release the lock.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.inner.wait().await?;
        self.signal(Signal::SIGKILL);
        self.dismiss_watchdog();
        Ok(status)
    }

    /// The command is over and reaped: tell the watchdog to leave without killing anything.
    fn dismiss_watchdog(&mut self) {
        use std::io::Write;
        if let Some(mut watchdog) = self.watchdog.take() {
            if let Some(mut pipe) = watchdog.stdin.take() {
                let _ = pipe.write_all(GOODBYE);
            }
            let _ = watchdog.wait();
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Leaving while the command may still run (we only get here without a successful wait on error paths):
        // closing the pipe without a goodbye makes the watchdog kill the group.
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// The byte that tells the watchdog the command ended normally.
const GOODBYE: &[u8] = b"x";

fn spawn_watchdog(pgid: i32) -> io::Result<std::process::Child> {
    std::process::Command::new(std::env::current_exe()?)
        .args(["__watchdog", &pgid.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
}

/// The `__watchdog PGID` command: waits for its stdin to close; kills the process group unless it was told goodbye.
pub fn watchdog(pgid: i32) -> i32 {
    use std::io::Read;
    let mut byte = [0u8; 1];
    let told_goodbye = matches!(std::io::stdin().read(&mut byte), Ok(1) if byte == GOODBYE[..]);
    if !told_goodbye {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    0
}

/// The shell convention for an exit status: the code, or 128 + the signal number.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}
