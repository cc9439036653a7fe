//! Running the user's command so that it can never outlive our hold on the lock.
//!
//! The child gets its own process group (so the whole group can be signalled; the signals we take are forwarded
//! to it, see `supervise.rs`) and a parent-death signal: if `zklock` dies — even by `kill -9` — the kernel sends
//! the child SIGKILL. Linux fires that signal when the *thread* that forked the child exits, so the child must be
//! spawned from a thread that lives as long as the process: `zklock run` uses a current-thread runtime on the main
//! thread and spawns from it.
//!
//! The parent-death signal reaches only the direct child, not processes it forked into its group (`sh -c 'a; b'`).
//! So a small watchdog — `zklock` itself, re-executed as the hidden `__watchdog` command (`main::WATCHDOG`), in a process group of
//! its own — holds a pipe from us: when that pipe closes without a goodbye byte, because we died, it kills the whole
//! process group of the command.
//!
//! Dying is not the only way to stop looking after the command: `zklock` can be paused (SIGSTOP, a frozen cgroup,
//! a debugger) or starved of CPU while its command runs on, and then ZooKeeper expires the session and lets the
//! next holder in. So the watchdog also holds a *deadline*: we renew it after each confirmed contact with the server
//! (from [`zklock::Guard::session_valid_until`]), and when it passes unrenewed the watchdog itself sends the group
//! SIGTERM and then SIGKILL, early enough that the group is dead before the session can expire. The deadline is an
//! absolute CLOCK_MONOTONIC time, the same clock in both processes, so a renewal delayed in the pipe cannot
//! stretch it. Once fired, the watchdog stays fired: a later renewal proves nothing about the time in between.
//!
//! The watchdog is started before the command, with its first deadline already in the pipe, and the command tells
//! it its process group itself, from the forked child before `exec`: there is no moment in which the command runs
//! and the watchdog does not know what to kill.
//!
//! The pipe carries messages of one tag byte and a little-endian payload: `x` goodbye; `p` + i32 the command's
//! process group; `d` + u64 + u64 the SIGTERM and SIGKILL deadlines, in nanoseconds of CLOCK_MONOTONIC; `s` (no
//! payload) for `--on-suspend stop`: from then on the second deadline *stops* the group (SIGSTOP) and the next
//! deadline still ahead continues it (SIGCONT) — a renewal is sent only after a heartbeat through the leader found
//! our node, so the session never ended and nobody else can have held meanwhile.
//!
//! On a terminal (standard input is our controlling terminal, and we are its foreground job) the command's group is
//! made the terminal's foreground group, from the forked child after it announced itself (`terminal.rs`): it reads the
//! terminal, and the terminal's Ctrl-C and Ctrl-Z reach it directly. We take the terminal back when the command exits —
//! on every path, since all of them wait for it or drop this `Child` — and when it is stopped (Ctrl-Z, SIGSTOP). A
//! stopped command keeps what we hold: our session and the watchdog's renewals go on, as for a command that is merely
//! slow. We say so on stderr; the command resumes, with the terminal given back to it, on a `kill -CONT` of its pid (we
//! learn of it by SIGCHLD; should it touch the terminal before we gave it back, its SIGTTIN or SIGTTOU stop is answered
//! the same way), when we forward it a signal (a Ctrl-C, which then reaches us, ends it), or when a SIGCONT to us comes
//! with the terminal (the shell's `fg` after a second Ctrl-Z stopped us too). Started in the terminal's background
//! (`zklock run … &`), the command is its background job, stopped by SIGTTIN when it reads; once the shell's `fg` made
//! us its foreground job (no signal tells us: we look every [`FOREGROUND_POLL`] while the command waits for the
//! terminal) the command gets it and goes on.

use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd};
use std::os::unix::process::CommandExt as _;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::time::{clock_gettime, ClockId};
use nix::unistd::Pid;
use tokio::signal::unix::{signal as signal_stream, Signal as SignalStream, SignalKind};

use crate::terminal::Terminal;

/// When the watchdog stops the command on its own unless the deadline is renewed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// SIGTERM to the command's process group.
    pub term_at: Instant,
    /// SIGKILL to it: the group must be dead by then.
    pub kill_at: Instant,
}

/// A running command in its own process group.
pub struct Child {
    inner: tokio::process::Child,
    pgid: Pid,
    watchdog: Option<Watchdog>,
    stopped_by_watchdog: bool,
    /// On our controlling terminal: following the command's job control.
    job: Option<Job>,
    /// `--on-suspend stop`: the watchdog stops the command at its deadline rather than ending it.
    stop_mode: bool,
    /// The last deadline the watchdog was given: a stop of the command past its `kill_at` is the watchdog's.
    last_deadline: Option<Deadline>,
    /// Stopped by us for a session not confirmed in time ([`Child::suspend`]).
    suspended: bool,
}

impl Child {
    /// Spawns `argv` with extra environment variables, guarded by a watchdog that stops it at `deadline` unless
    /// [`renew`](Child::renew)ed (with no deadline, only if we die). `what` names what we hold while it runs ("the
    /// lock on /x"), for the message when it is stopped. With `input`, the command reads it on its standard input
    /// (a pipe, closed after it) and does not get the terminal (`zklock watch`); without, it shares ours.
    pub fn spawn(
        argv: &[String],
        env: &[(&str, String)],
        deadline: Option<Deadline>,
        what: &str,
        input: Option<Vec<u8>>,
    ) -> io::Result<Child> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| io::Error::other("no command given"))?;
        // SIGCHLD is taken before the fork, so that no stop of the command can go unnoticed.
        let terminal = if input.is_some() {
            None
        } else {
            Terminal::of_stdin()
        };
        let job = terminal.and_then(|terminal| {
            match (signal_stream(SignalKind::child()), signal_stream(SignalKind::from_raw(Signal::SIGCONT as i32))) {
                (Ok(sigchld), Ok(sigcont)) => Some(Job {
                    terminal,
                    sigchld,
                    sigcont,
                    stopped: None,
                    suspended: false,
                    what: what.to_owned(),
                }),
                (Err(err), _) | (_, Err(err)) => {
                    tracing::warn!(%err, "cannot follow job control: the command runs in the terminal's background");
                    None
                }
            }
        });
        let claim = job.as_ref().map(|job| job.terminal);
        let mut watchdog = match Watchdog::spawn(deadline) {
            Ok(watchdog) => Some(watchdog),
            Err(err) => {
                tracing::warn!(
                    %err,
                    "no watchdog: processes forked by the command may outlive a killed zklock, and a paused zklock \
                     does not stop the command"
                );
                None
            }
        };
        let announce = watchdog.as_ref().map(|watchdog| watchdog.pipe.as_raw_fd());
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .process_group(0);
        if input.is_some() {
            command.stdin(std::process::Stdio::piped());
        }
        let parent = nix::unistd::getpid();
        // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe system calls
        // (prctl, getppid, getpid, signal, write, and `Terminal::claim_in_child`'s); it allocates nothing.
        // `announce` is the pipe to the watchdog, which stays open in the forked child until the exec (it is
        // close-on-exec) and which this closure only borrows.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)).map_err(io::Error::from)?;
                // We may have died between fork and prctl: then nobody would ever signal this child.
                if nix::unistd::getppid() != parent {
                    return Err(io::Error::other("zklock exited before the command started"));
                }
                if let Some(fd) = announce {
                    // Tell the watchdog our process group before there is anything in it to guard.
                    let mut message = [ANNOUNCE; 5];
                    message[1..].copy_from_slice(&nix::unistd::getpid().as_raw().to_le_bytes());
                    // A watchdog gone would make the write raise SIGPIPE, which kills by default.
                    nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigIgn).map_err(io::Error::from)?;
                    let written = nix::unistd::write(BorrowedFd::borrow_raw(fd), &message);
                    nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigDfl).map_err(io::Error::from)?;
                    if written != Ok(message.len()) {
                        return Err(io::Error::other("the watchdog is gone"));
                    }
                }
                if let Some(terminal) = claim {
                    // Failing, the command runs as the terminal's background job, as it would without a terminal.
                    let _ = terminal.claim_in_child();
                }
                Ok(())
            });
        }
        let inner = match command.spawn() {
            Ok(inner) => inner,
            Err(err) => {
                if let Some(watchdog) = watchdog.take() {
                    watchdog.dismiss();
                }
                // The child may have taken the terminal before its exec failed.
                if let Some(terminal) = claim {
                    terminal.take_back_from_the_dead();
                }
                return Err(err);
            }
        };
        let mut inner = inner;
        if let (Some(input), Some(mut stdin)) = (input, inner.stdin.take()) {
            // A command that does not read it all gets EPIPE's end of the pipe: not our failure.
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                let _ = stdin.write_all(&input).await;
            });
        }
        let pid = inner
            .id()
            .ok_or_else(|| io::Error::other("child exited before it had a pid"))?;
        Ok(Child {
            inner,
            pgid: Pid::from_raw(pid as i32),
            watchdog,
            stopped_by_watchdog: false,
            job,
            stop_mode: false,
            last_deadline: deadline,
            suspended: false,
        })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// Moves the watchdog's deadline (after a confirmed contact with ZooKeeper). A watchdog that has fired stays
    /// fired.
    pub fn renew(&mut self, deadline: Deadline) {
        self.last_deadline = Some(deadline);
        if let Some(watchdog) = &mut self.watchdog {
            if let Err(err) = watchdog.send_deadline(deadline) {
                tracing::warn!(%err, "cannot renew the watchdog's deadline");
            }
        }
    }

    /// From now on a passed deadline makes the watchdog *stop* the command (SIGSTOP) rather than end it, and the
    /// next renewal still ahead continues it (SIGCONT): `--on-suspend stop`.
    pub fn stop_on_deadline(&mut self) {
        self.stop_mode = true;
        if let Some(watchdog) = &mut self.watchdog {
            if let Err(err) = watchdog.pipe.write_all(&[STOP_MODE]) {
                tracing::warn!(%err, "cannot tell the watchdog to stop rather than kill");
            }
        }
    }

    /// `--on-suspend stop`: stops the command's group for a session not confirmed in time (`true`), or continues it
    /// once the session is confirmed again (`false`). The watchdog does the same at its deadline and renewal; this
    /// covers a command run without a watchdog (it could not be started).
    pub fn suspend(&mut self, suspended: bool) {
        self.suspended = suspended;
        let signal = if suspended {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        };
        if let Err(err) = killpg(self.pgid, signal) {
            tracing::debug!(%err, ?signal, "suspending or continuing the command's process group");
        }
    }

    /// Whether the command is stopped now (SIGSTOP, by the watchdog or anybody): its state in `/proc`.
    pub fn is_stopped(&self) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pgid)).unwrap_or_default();
        // After the command name in parentheses (which may hold spaces): " T ..." for stopped.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    }

    /// Whether the watchdog stopped the command because its deadline passed unrenewed (known once the command has
    /// been waited for).
    pub fn stopped_by_watchdog(&self) -> bool {
        self.stopped_by_watchdog
    }

    /// Sends `signal` to the child's whole process group. A command stopped on the terminal (Ctrl-Z) is then given
    /// the terminal back and continued, so that it acts on the signal.
    pub fn signal(&mut self, signal: Signal) {
        if let Err(err) = killpg(self.pgid, signal) {
            tracing::debug!(%err, ?signal, "signalling the command's process group");
        }
        if let Some(job) = &mut self.job {
            if job.suspended {
                // Stopped for an unconfirmed session: continuing it to act on the signal would let it run while
                // another holder may. The signal waits in the kernel until the session is confirmed (then it acts on
                // it) or the lock is lost (then it is killed).
                if !matches!(signal, Signal::SIGKILL | Signal::SIGCONT) {
                    crate::say::warn(format_args!(
                        "the command (pid {}) is stopped until our ZooKeeper session is confirmed; {signal} \
                         reaches it then (it is killed if the lock is lost meanwhile)",
                        self.pgid
                    ));
                }
            } else if job.stopped.is_some() && !matches!(signal, Signal::SIGKILL | Signal::SIGCONT) {
                job.resume(self.pgid);
            }
        }
    }

    /// SIGTERM to the command's process group, SIGKILL after `grace` if it is still running; waits for it.
    pub async fn stop(&mut self, grace: Duration) {
        self.signal(Signal::SIGTERM);
        if tokio::time::timeout(grace, self.wait()).await.is_err() {
            crate::say::warn(format_args!(
                "the command ignored SIGTERM for {grace:?}; sending SIGKILL"
            ));
            self.signal(Signal::SIGKILL);
            let _ = self.wait().await;
        }
    }

    /// Waits for the child to exit.
    ///
    /// Whatever the command left running in its process group (`sh -c 'worker & exit'`) is killed as well:
    /// nothing it started may go on once we release the lock.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        // A stop past the watchdog's last deadline, under `--on-suspend stop`, is the watchdog's.
        let (stop_mode, last_deadline, suspended) = (self.stop_mode, self.last_deadline, self.suspended);
        let suspension =
            || stop_mode && (suspended || last_deadline.is_some_and(|d| Instant::now() >= d.kill_at));
        let status = loop {
            let Some(job) = &mut self.job else {
                break self.inner.wait().await?;
            };
            tokio::select! {
                status = self.inner.wait() => break status?,
                Some(()) = job.sigchld.recv() => job.changed(self.pgid, suspension()),
                Some(()) = job.sigcont.recv() => job.hand_over_if_foreground(self.pgid),
                // No event tells us that the shell made us its foreground job (`fg` continues only stopped jobs).
                () = tokio::time::sleep(FOREGROUND_POLL), if job.wants_the_terminal() => {
                    job.hand_over_if_foreground(self.pgid);
                }
            }
        };
        if let Some(job) = &self.job {
            job.terminal.take_back(self.pgid);
        }
        self.signal(Signal::SIGKILL);
        // The command is over and reaped: the watchdog may leave without killing anything.
        if let Some(watchdog) = self.watchdog.take() {
            self.stopped_by_watchdog |= watchdog.dismiss();
        }
        Ok(status)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Leaving while the command may still run (we only get here without a successful wait on error paths):
        // closing the pipe without a goodbye makes the watchdog kill the group.
        if let Some(job) = &self.job {
            job.terminal.take_back(self.pgid);
        }
        if let Some(Watchdog { pipe, mut process }) = self.watchdog.take() {
            drop(pipe);
            let _ = process.wait();
        }
    }
}

/// The command as a job of our controlling terminal.
struct Job {
    terminal: Terminal,
    /// Tells us that the command may have been stopped or continued.
    sigchld: SignalStream,
    /// Tells us that we were continued: perhaps brought to the foreground (`fg`).
    sigcont: SignalStream,
    /// The signal that stopped the command, while it is stopped.
    stopped: Option<Signal>,
    /// Stopped by the watchdog for a session not confirmed in time (`--on-suspend stop`): only the watchdog
    /// continues it, nothing here does.
    suspended: bool,
    /// What we hold, in messages.
    what: String,
}

impl Job {
    /// After a SIGCHLD: follows the command's stops (the terminal comes back to us) and continues (it goes back to
    /// the command). Its exit is left to `tokio::process::Child::wait`: without `WEXITED`, `waitid` reaps nothing.
    fn changed(&mut self, pgid: Pid, suspension: bool) {
        let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WCONTINUED | WaitPidFlag::WNOHANG;
        loop {
            match waitid(Id::Pid(pgid), flags) {
                // Continued (`kill -CONT`) before we gave it the terminal back, the command stopped as it touched
                // the terminal we hold: it gets the terminal and goes on.
                Ok(WaitStatus::Stopped(_, Signal::SIGTTIN | Signal::SIGTTOU)) if self.terminal.give(pgid) => {
                    self.continue_(pgid);
                }
                Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) if suspension => {
                    self.stopped = Some(Signal::SIGSTOP);
                    self.suspended = true;
                    let terminal = if self.terminal.take_back(pgid) {
                        " and has the terminal meanwhile"
                    } else {
                        ""
                    };
                    crate::say::warn(format_args!(
                        "the command (pid {pgid}) is stopped until our ZooKeeper session is confirmed \
                         (--on-suspend stop); zklock keeps {}{terminal}",
                        self.what
                    ));
                }
                Ok(WaitStatus::Stopped(_, signal)) => {
                    self.stopped = Some(signal);
                    if self.terminal.take_back(pgid) {
                        crate::say::info(format_args!(
                            "the command (pid {pgid}) is stopped ({signal}); zklock keeps {} and has the \
                             terminal back. `kill -CONT {pgid}` resumes the command; Ctrl-C ends it",
                            self.what
                        ));
                    } else {
                        crate::say::info(format_args!(
                            "the command (pid {pgid}) is stopped ({signal}); zklock keeps {}. Bringing \
                             zklock to the foreground (fg) resumes the command with the terminal",
                            self.what
                        ));
                    }
                }
                Ok(WaitStatus::Continued(_)) => {
                    self.stopped = None;
                    self.suspended = false;
                    self.terminal.give(pgid);
                }
                // Still running, exited (for tokio to reap), or reaped.
                _ => return,
            }
        }
    }

    /// Whether the command was stopped because it touched the terminal in its background.
    fn wants_the_terminal(&self) -> bool {
        matches!(self.stopped, Some(Signal::SIGTTIN | Signal::SIGTTOU))
    }

    /// After our SIGCONT, or while the command [wants the terminal](Job::wants_the_terminal): if we are the
    /// terminal's foreground job, the command gets the terminal, and goes on if it was stopped.
    fn hand_over_if_foreground(&mut self, pgid: Pid) {
        // Suspended: the terminal stays ours until the watchdog continues the command.
        if self.suspended {
            return;
        }
        if self.terminal.give(pgid) && self.stopped.is_some() {
            self.continue_(pgid);
        }
    }

    /// Gives the stopped command the terminal and continues it.
    fn resume(&mut self, pgid: Pid) {
        self.terminal.give(pgid);
        self.continue_(pgid);
    }

    fn continue_(&mut self, pgid: Pid) {
        self.stopped = None;
        if let Err(err) = killpg(pgid, Signal::SIGCONT) {
            tracing::debug!(%err, "continuing the command's process group");
        }
    }
}

/// How often we look whether we became the terminal's foreground job, while the command waits for that.
const FOREGROUND_POLL: Duration = Duration::from_millis(100);

/// Message tags on the watchdog's pipe.
const GOODBYE: u8 = b'x';
const ANNOUNCE: u8 = b'p';
const DEADLINE: u8 = b'd';
/// `--on-suspend stop`: stop at a passed deadline, continue at a renewal still ahead (no payload).
const STOP_MODE: u8 = b's';
/// The watchdog's argument after `__watchdog` when its lines are JSON (`--log-format json`).
pub const WATCHDOG_JSON: &str = "json";
/// The watchdog's exit status when it stopped the command because its deadline passed.
const FIRED: i32 = 1;

/// Our end of a running watchdog.
struct Watchdog {
    process: std::process::Child,
    pipe: std::process::ChildStdin,
}

impl Watchdog {
    fn spawn(deadline: Option<Deadline>) -> io::Result<Watchdog> {
        let mut process = std::process::Command::new(std::env::current_exe()?);
        process.arg(crate::WATCHDOG);
        if crate::say::json() {
            process.arg(WATCHDOG_JSON);
        }
        let mut process = process
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = process.stdin.take().expect("piped");
        let mut watchdog = Watchdog { process, pipe };
        if let Some(deadline) = deadline {
            if let Err(err) = watchdog.send_deadline(deadline) {
                watchdog.dismiss();
                return Err(err);
            }
        }
        Ok(watchdog)
    }

    fn send_deadline(&mut self, deadline: Deadline) -> io::Result<()> {
        let mut message = [DEADLINE; 17];
        message[1..9].copy_from_slice(&monotonic_nanos(deadline.term_at).to_le_bytes());
        message[9..].copy_from_slice(&monotonic_nanos(deadline.kill_at).to_le_bytes());
        self.pipe.write_all(&message)
    }

    /// Says goodbye and waits for the watchdog to leave; whether it had fired.
    fn dismiss(self) -> bool {
        let Watchdog {
            mut pipe,
            mut process,
        } = self;
        let _ = pipe.write_all(&[GOODBYE]);
        drop(pipe);
        matches!(process.wait(), Ok(status) if status.code() == Some(FIRED))
    }
}

/// CLOCK_MONOTONIC now, the clock `std::time::Instant` reads on Linux, as a duration since its (boot-time) origin.
fn monotonic_now() -> Duration {
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32)
}

/// `at` in nanoseconds of CLOCK_MONOTONIC, for another process. Rounded towards earlier: the clock is read before
/// `Instant::now()`, so the result is early by the time between the two reads, never late.
fn monotonic_nanos(at: Instant) -> u64 {
    let clock = monotonic_now();
    let now = Instant::now();
    let at = if at >= now {
        clock + (at - now)
    } else {
        clock.saturating_sub(now - at)
    };
    u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)
}

/// What the watchdog knows and has done.
#[derive(Debug, Default)]
struct Guarding {
    pgid: Option<Pid>,
    /// The deadlines, as CLOCK_MONOTONIC times.
    term_at: Option<Duration>,
    kill_at: Option<Duration>,
    termed: bool,
    killed: bool,
    /// `--on-suspend stop`: a passed deadline stops the group (at `kill_at`), a renewal ahead continues it.
    stop_mode: bool,
    /// The group is stopped by us now.
    stopped: bool,
}

impl Guarding {
    /// Whether we ended the command, or have it stopped now.
    fn fired(&self) -> bool {
        self.termed || self.killed || self.stopped
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, signal);
        }
    }

    /// Sends whatever signal is due at `now`.
    fn act(&mut self, now: Duration) {
        if self.stop_mode {
            if !self.stopped && self.kill_at.is_some_and(|at| now >= at) {
                self.stopped = true;
                crate::say::warn(format_args!(
                    "watchdog: the ZooKeeper session was not confirmed in time; stopping the command \
                     (SIGSTOP) until it is"
                ));
                self.signal(Signal::SIGSTOP);
            }
            return;
        }
        if !self.termed && self.term_at.is_some_and(|at| now >= at) {
            self.termed = true;
            crate::say::error(
                "watchdog: the ZooKeeper session was not confirmed in time; sending SIGTERM to the command",
            );
            self.signal(Signal::SIGTERM);
        }
        if !self.killed && self.kill_at.is_some_and(|at| now >= at) {
            self.killed = true;
            crate::say::error("watchdog: sending SIGKILL to the command before the session can expire");
            self.signal(Signal::SIGKILL);
        }
    }

    /// When the next signal is due.
    fn next(&self) -> Option<Duration> {
        if self.stop_mode {
            return self.kill_at.filter(|_| !self.stopped);
        }
        let term = self.term_at.filter(|_| !self.termed);
        let kill = self.kill_at.filter(|_| !self.killed);
        term.into_iter().chain(kill).min()
    }

    fn handle(&mut self, tag: u8, payload: &[u8], now: Duration) {
        match tag {
            STOP_MODE if !self.fired() => self.stop_mode = true,
            ANNOUNCE => {
                let pgid = i32::from_le_bytes(payload.try_into().expect("4 bytes"));
                self.pgid = Some(Pid::from_raw(pgid));
                // Announced after the deadline passed (zklock paused in between): no time to lose.
                if self.termed {
                    self.signal(Signal::SIGTERM);
                }
                if self.killed {
                    self.signal(Signal::SIGKILL);
                }
                if self.stopped {
                    self.signal(Signal::SIGSTOP);
                }
            }
            // Stopped: a renewal still ahead (sent after a heartbeat through the leader found our node, so our session
            // never ended and nobody took over) lets the command go on until it; one already past changes nothing.
            DEADLINE if self.stop_mode => {
                let kill_at =
                    Duration::from_nanos(u64::from_le_bytes(payload[8..].try_into().expect("8 bytes")));
                if self.stopped && kill_at <= now {
                    return;
                }
                self.term_at = Some(kill_at);
                self.kill_at = Some(kill_at);
                if self.stopped {
                    self.stopped = false;
                    crate::say::info("watchdog: the ZooKeeper session is confirmed again; continuing the command (SIGCONT)");
                    self.signal(Signal::SIGCONT);
                }
            }
            DEADLINE if !self.fired() => {
                let at = |bytes: &[u8]| {
                    Duration::from_nanos(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
                };
                self.term_at = Some(at(&payload[..8]));
                self.kill_at = Some(at(&payload[8..]));
            }
            _ => {}
        }
    }
}

/// The length of a message's payload, by its tag.
fn payload_len(tag: u8) -> usize {
    match tag {
        ANNOUNCE => 4,
        DEADLINE => 16,
        _ => 0,
    }
}

/// The `__watchdog` command: reads messages from stdin; kills the announced process group when stdin closes without
/// a goodbye, and stops it (SIGTERM, then SIGKILL) when a deadline passes unrenewed. Exits 0 after a goodbye, or
/// [`FIRED`] if it stopped the command because of a deadline.
pub fn watchdog() -> i32 {
    // On a terminal we are a background process: with `stty tostop` our message would stop us (SIGTTOU) before we
    // signal the command. A blocked SIGTTOU lets the write through.
    let mut sigttou = SigSet::empty();
    sigttou.add(Signal::SIGTTOU);
    let _ = sigttou.thread_block();
    // Raw reads of fd 0: the standard library's stdin is buffered, which would hide data from `poll`.
    let stdin = io::stdin();
    let fd = stdin.as_fd();
    let mut guarding = Guarding::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let now = monotonic_now();
        guarding.act(now);
        let timeout = match guarding.next() {
            // Rounded up to whole milliseconds, so that we never wake up just before the deadline.
            Some(at) => PollTimeout::try_from((at.saturating_sub(now).as_micros() as u64).div_ceil(1000))
                .unwrap_or(PollTimeout::MAX),
            None => PollTimeout::NONE,
        };
        match poll(&mut [PollFd::new(fd, PollFlags::POLLIN)], timeout) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => {} // the read tells
        }
        let read = match nix::unistd::read(fd.as_raw_fd(), &mut chunk) {
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Ok(read) => read,
            Err(_) => 0,
        };
        if read == 0 {
            // Closed without a goodbye: zklock died.
            let status = if guarding.fired() { FIRED } else { 0 };
            guarding.signal(Signal::SIGKILL);
            return status;
        }
        pending.extend_from_slice(&chunk[..read]);
        while let Some(&tag) = pending.first() {
            if tag == GOODBYE {
                return if guarding.fired() { FIRED } else { 0 };
            }
            let len = 1 + payload_len(tag);
            if pending.len() < len {
                break;
            }
            guarding.handle(tag, &pending[1..len], monotonic_now());
            pending.drain(..len);
        }
    }
}

/// The shell convention for an exit status: the code, or 128 + the signal number.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => crate::exit::signalled(signal),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deadline_message(term_at: Duration, kill_at: Duration) -> Vec<u8> {
        let mut payload = (term_at.as_nanos() as u64).to_le_bytes().to_vec();
        payload.extend_from_slice(&(kill_at.as_nanos() as u64).to_le_bytes());
        payload
    }

    #[test]
    fn the_watchdog_fires_at_its_deadlines_and_stays_fired() {
        let secs = Duration::from_secs;
        let mut guarding = Guarding::default();
        assert_eq!(guarding.next(), None, "no deadline: only our death counts");
        guarding.handle(DEADLINE, &deadline_message(secs(10), secs(12)), secs(0));
        assert_eq!(guarding.next(), Some(secs(10)));
        guarding.act(secs(9));
        assert!(!guarding.fired());
        // Renewed in time: nothing happens at the old deadline.
        guarding.handle(DEADLINE, &deadline_message(secs(20), secs(22)), secs(9));
        guarding.act(secs(10));
        assert!(!guarding.fired());
        guarding.act(secs(20));
        assert!(guarding.termed && !guarding.killed);
        assert_eq!(guarding.next(), Some(secs(22)));
        // A renewal after the deadline passed proves nothing about the time in between.
        guarding.handle(DEADLINE, &deadline_message(secs(30), secs(32)), secs(21));
        assert_eq!(guarding.next(), Some(secs(22)));
        guarding.act(secs(22));
        assert!(guarding.killed);
        assert_eq!(guarding.next(), None);
    }

    #[test]
    fn in_stop_mode_the_watchdog_stops_at_the_deadline_and_continues_at_a_renewal_ahead() {
        let secs = Duration::from_secs;
        let mut guarding = Guarding::default();
        guarding.handle(STOP_MODE, &[], secs(0));
        guarding.handle(DEADLINE, &deadline_message(secs(12), secs(12)), secs(0));
        assert_eq!(guarding.next(), Some(secs(12)));
        guarding.act(secs(11));
        assert!(!guarding.fired());
        guarding.act(secs(12));
        assert!(
            guarding.stopped && !guarding.termed && !guarding.killed,
            "stopped, not ended"
        );
        assert_eq!(guarding.next(), None, "nothing more is due while stopped");
        // A renewal that is already past when it arrives proves nothing: still stopped.
        guarding.handle(DEADLINE, &deadline_message(secs(14), secs(14)), secs(15));
        assert!(guarding.stopped);
        // One still ahead continues the command, and arms the next stop.
        guarding.handle(DEADLINE, &deadline_message(secs(20), secs(20)), secs(16));
        assert!(!guarding.fired());
        assert_eq!(guarding.next(), Some(secs(20)));
        guarding.act(secs(20));
        assert!(guarding.stopped);
    }

    #[test]
    fn monotonic_nanos_is_on_the_clock_of_instant() {
        let now = Instant::now();
        let clock = monotonic_now();
        let in_a_minute = Duration::from_nanos(monotonic_nanos(now + Duration::from_secs(60)));
        let drift = (in_a_minute.as_secs_f64() - (clock + Duration::from_secs(60)).as_secs_f64()).abs();
        assert!(drift < 0.1, "{drift} s apart");
    }
}
