//! What `zklock run` and `zklock elect` share: a session with signal handlers, and holding a guard while a command
//! runs. Their exit statuses are in [`crate::exit`].

use std::task::Poll;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal as signal_stream, Signal as SignalStream, SignalKind};
use zklock::{Guard, LostPolicy, LostReason};

use zookeeper_client::Client;

use crate::child::{exit_code, Child, Deadline};
use crate::cli::{ConnectArgs, OnSuspend};
use crate::exit::{self, Failure};
use crate::outage::Connection;
use crate::redact::redact;
use crate::zk;

/// The signals we forward to the command's process group while it runs: SIGHUP (an SSH logout), SIGINT, SIGTERM,
/// SIGQUIT, SIGUSR1 and SIGUSR2. Taking them also means none of them kills `zklock` outright, which would leave our
/// session — and the lock — behind for a session timeout.
pub const FORWARDED: [Signal; 6] = [
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// The forwarded signals that end our wait while no command runs (connecting, waiting for the guard, waiting to
/// start the command). SIGUSR1 and SIGUSR2 are then ignored: there is nobody to forward them to.
pub const ENDS_WAIT: [Signal; 4] = [Signal::SIGHUP, Signal::SIGINT, Signal::SIGTERM, Signal::SIGQUIT];

/// Our handlers for the [`FORWARDED`] signals.
pub struct Interrupts {
    streams: Vec<(Signal, SignalStream)>,
}

impl Interrupts {
    pub fn install() -> std::io::Result<Interrupts> {
        let streams = FORWARDED
            .iter()
            .map(|&signal| Ok((signal, signal_stream(SignalKind::from_raw(signal as i32))?)))
            .collect::<std::io::Result<_>>()?;
        Ok(Interrupts { streams })
    }

    /// The next signal that ends a wait ([`ENDS_WAIT`]); SIGUSR1 and SIGUSR2 arriving meanwhile are ignored (and
    /// so not delivered to a command started later).
    pub async fn recv(&mut self) -> Signal {
        loop {
            let signal = self.next().await;
            if ENDS_WAIT.contains(&signal) {
                return signal;
            }
            tracing::info!(%signal, "ignored: the command is not running");
        }
    }

    /// The next of the [`FORWARDED`] signals, to forward to the running command.
    pub async fn next(&mut self) -> Signal {
        std::future::poll_fn(|cx| {
            for (signal, stream) in &mut self.streams {
                if let Poll::Ready(Some(())) = stream.poll_recv(cx) {
                    return Poll::Ready(*signal);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Installs the signal handlers, connects (`--connect`), runs `body`, and closes the session on the way out so
/// that our nodes go now rather than a session timeout later. The handlers come first: a signal that ends our wait
/// ([`ENDS_WAIT`]) — while connecting, or inside `body` — ends it through `body`'s return, and so only after the
/// session is closed.
pub async fn with_session(
    connect: &ConnectArgs,
    body: impl AsyncFnOnce(&Client, &mut Interrupts) -> exit::Result,
) -> exit::Result {
    let mut interrupts = Interrupts::install().map_err(|err| {
        Failure::new(
            exit::LOCAL_FAILURE,
            format!("cannot install signal handlers: {err}"),
        )
    })?;
    // Dropping a half-made connection leaves no node behind.
    let client = tokio::select! {
        client = zk::connect_args(connect) => client?,
        signal = interrupts.recv() => {
            return Err(interrupted(signal, format!("{signal} while connecting to ZooKeeper")));
        }
    };
    let result = body(&client, &mut interrupts).await;
    zk::close(client).await;
    result
}

/// Ending our wait (for the guard, or to start the command) on `signal`: the shell's status for dying of it.
pub fn interrupted(signal: Signal, message: String) -> Failure {
    Failure::new(exit::signalled(signal as i32), message)
}

/// `zklock run`'s or `zklock elect`'s refusal of a path another recipe uses ([`zklock::Error::InUse`]): a usage
/// error (exit 64), saying what is there.
pub fn in_use(err: &zklock::Error, command: &str) -> Failure {
    Failure::new(
        exit::USAGE,
        format!(
            "{err}; {command} never runs beside it: use the same kind of lock as the others, or another path"
        ),
    )
}

/// A `zklock run` or `zklock elect` (`command`) that would wait for ever on what the `run` or `elect` around it
/// holds (issue 33.9): the command of either has `ZKLOCK_PATH`, and one on the same path inside it, waiting without
/// a bound, waits for its own parent. Refused (exit 64) before connecting. A `bounded` one (`-n`, `-w`) ends by
/// itself and is let through; so is any once `ZKLOCK_PATH` is unset (the same path on another ensemble, say).
pub fn refuse_nested(command: &str, path: &str, bounded: bool) -> exit::Result<()> {
    if bounded || std::env::var("ZKLOCK_PATH").ok().as_deref() != Some(path) {
        return Ok(());
    }
    Err(Failure::new(
        exit::USAGE,
        format!(
            "zklock {command}: {path} is held by the zklock run or elect that started this command (ZKLOCK_PATH): \
             waiting for it here would wait for ever. Use another path, -n or -w, or unset ZKLOCK_PATH if this is \
             another ensemble's"
        ),
    ))
}

/// When the guard of a running command counts as lost: early enough that the command is stopped (SIGTERM, then
/// SIGKILL after `kill_after` seconds) before the server can have expired our session and let the next holder in.
///
/// zookeeper-client notices a silent connection 2/5 of the session timeout after it last heard from the server;
/// the server expires the session a full timeout after it last heard from us. The remaining 3/5 must cover our
/// grace, the kill and a margin of a tenth. A `kill_after` too large for the session timeout leaves no grace at
/// all: the command is then stopped as soon as the connection drops.
///
/// With `--on-suspend stop` the guard is suspended instead (`LostPolicy::SuspendAfter`) at the same point, without
/// the kill's time: a SIGSTOP takes none.
pub fn lost_policy(session_timeout: Duration, kill_after: f64, on_suspend: OnSuspend) -> LostPolicy {
    let kill_after = Duration::from_secs_f64(kill_after.max(0.0));
    let budget = session_timeout.mul_f64(0.6).saturating_sub(session_timeout / 10);
    if on_suspend == OnSuspend::Stop {
        return LostPolicy::SuspendAfter(budget);
    }
    if kill_after >= budget {
        crate::say::warn(format_args!(
            "warning: --kill-after {:.1}s does not fit the {:.1}s session timeout; the command will be \
             stopped as soon as the connection to ZooKeeper drops",
            kill_after.as_secs_f64(),
            session_timeout.as_secs_f64()
        ));
    }
    LostPolicy::DisconnectedFor(budget.saturating_sub(kill_after))
}

/// What is stored in our node for `zklock status` (which anybody who may read the node sees): `host=… pid=…`, and
/// then the user's `--describe` text (`note=…`) instead of the command line; nothing more with `--no-describe`;
/// otherwise the command line ([`redact`]ed). At most [`MAX_DESCRIPTION`] bytes: a longer text is cut short,
/// with a marker.
pub fn describe(command: &[String], note: Option<&str>, no_describe: bool) -> String {
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut text = format!("host={host} pid={}", std::process::id());
    match note {
        Some(note) => {
            text.push_str(" note=");
            text.push_str(note);
        }
        None if no_describe => {}
        None => {
            text.push_str(" cmd=");
            text.push_str(&redact(command).join(" "));
        }
    }
    bounded(text)
}

/// The most [`describe`] stores, in bytes. A ZooKeeper server closes the connection, without an answer, on a
/// request larger than its `jute.maxbuffer` (1 MiB by default), and a create lost with its connection is sent
/// again: a command line of that size (Linux commonly takes 2 MiB of arguments) would never be stored, and `run`
/// would hang. 4 KiB is far below it; it is more than a screenful of `zklock status`, enough to tell a command
/// line; and it keeps what waiters cost ZooKeeper small: every member keeps each node's data in memory and in its
/// snapshots, so a thousand runs queued on a path cost 4 MB there.
pub const MAX_DESCRIPTION: usize = 4096;

/// `text` if it fits [`MAX_DESCRIPTION`]; otherwise as much of it as fits, cut at a character boundary, and
/// ` ...[truncated: N bytes in all]`.
fn bounded(mut text: String) -> String {
    if text.len() <= MAX_DESCRIPTION {
        return text;
    }
    let marker = format!(" ...[truncated: {} bytes in all]", text.len());
    let mut end = MAX_DESCRIPTION - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text + &marker
}

/// The watchdog's deadline for a session that cannot expire before `valid_until`: the command's process group must
/// be dead a twentieth of the session timeout before that (SIGKILL), and is asked to stop `kill_after` earlier
/// (SIGTERM) — at most a fifth of the session timeout earlier, which leaves the renewals room to arrive first
/// (a heartbeat every tenth of the timeout moves `valid_until` to half a timeout after it was sent; see
/// `zklock`'s `lost.rs`). `None` if that lies before the clock's origin.
///
/// With `--on-suspend stop` the group is stopped (SIGSTOP) at that last moment instead: a stop takes no time.
pub fn watchdog_deadline(
    valid_until: Instant,
    session_timeout: Duration,
    kill_after: Duration,
    on_suspend: OnSuspend,
) -> Option<Deadline> {
    let kill_at = valid_until.checked_sub(session_timeout / 20)?;
    if on_suspend == OnSuspend::Stop {
        return Some(Deadline {
            term_at: kill_at,
            kill_at,
        });
    }
    let term_at = kill_at.checked_sub(kill_after.min(session_timeout / 5))?;
    Some(Deadline { term_at, kill_at })
}

/// The outage of the servers after which the watchdog stops the command: a heartbeat answered just before it
/// confirmed the session for half a timeout (`zklock`'s `lost.rs`), and the [`watchdog_deadline`] lies within that.
pub fn tolerated_outage(session_timeout: Duration, kill_after: Duration) -> Duration {
    let confirmed = Instant::now();
    watchdog_deadline(
        confirmed + session_timeout / 2,
        session_timeout,
        kill_after,
        OnSuspend::Kill,
    )
    .map_or(Duration::ZERO, |deadline| {
        deadline.term_at.saturating_duration_since(confirmed)
    })
}

/// How [`hold`] ended.
pub enum Held {
    /// For good: the command's status, or the failure that ended it.
    Ended(exit::Result),
    /// The guard was lost with its ZooKeeper session — the session expired or its authentication failed, the
    /// connection was down past the lost policy, or the watchdog could not confirm it in time — and the command
    /// is gone (stopped, or it ended on its own after the loss). `result` is what
    /// `zklock run` exits with for it (exit 75, said or to be said); `guard` is what is left of the guard, for
    /// the caller to release (its node may still be there after a disconnection), or `None` once released.
    SessionLost {
        result: exit::Result,
        guard: Option<Box<Guard>>,
    },
}

impl Held {
    /// The command's status, or the failure that ended it: what `zklock run` exits with. A guard lost with its
    /// session goes with the process's session (dropping it deletes its node, if it is still there).
    pub fn result(self) -> exit::Result {
        match self {
            Held::Ended(result) | Held::SessionLost { result, .. } => result,
        }
    }
}

/// How long a release may take once the watchdog stopped the command.
const RELEASE_AFTER_WATCHDOG: Duration = Duration::from_secs(1);

/// Whether a guard lost for `reason` went with its session, rather than by somebody's act (its node deleted).
fn with_the_session(reason: LostReason) -> bool {
    matches!(
        reason,
        LostReason::SessionExpired | LostReason::Disconnected | LostReason::ClientClosed
    )
}

/// Runs `command` while `guard` holds. `what` names the guard in messages ("the lock on /x", "leadership of /x").
/// The guard is released only once the command is gone, so the next holder's command never overlaps ours.
///
/// The [`FORWARDED`] signals go to the command's process group while it runs, and we stay until it exits: a
/// command that shrugs off SIGHUP keeps the guard. Before it starts, one that [ends a wait](ENDS_WAIT) releases the
/// guard and returns 128 + N.
///
/// Three things stop the command early: the guard's lost signal (we send SIGTERM, then SIGKILL after `kill_after`
/// seconds), a revocation request ([`Guard::revocation_requested`], e.g. from `zklock revoke --request`: the same
/// stop, then the guard is released), and — should this process be paused or starved and so stop renewing it —
/// the watchdog's deadline, derived from [`Guard::session_validity`] (see `child.rs`). Either way the exit status is
/// [`exit::LOST`]. A loss or a revocation while the command runs is said at once, while the command is still being
/// stopped, and then returned as `Ok(exit::LOST)`: nothing is left to say.
///
/// A guard lost with its session is told apart ([`Held::SessionLost`]): what `zklock elect` campaigns again after.
///
/// With `--on-suspend stop` (`on_suspend`), a session that cannot be confirmed in time suspends the command instead:
/// the watchdog stops its group (SIGSTOP) at the deadline and continues it (SIGCONT) at the next renewal — sent
/// only after a heartbeat through the leader found our node, so the same guard goes on — and a loss kills it
/// (SIGKILL: a stopped command must not run again to handle a SIGTERM while another holder may have started).
#[allow(clippy::too_many_arguments)] // the command's supervision, each part named at the two call sites
pub async fn hold(
    guard: Guard,
    path: &str,
    what: &str,
    command: &[String],
    kill_after: f64,
    on_suspend: OnSuspend,
    connection: &Connection,
    interrupts: &mut Interrupts,
) -> Held {
    let session_timeout = connection.session_timeout();
    let ended = |result| Held::Ended(result);
    let kill_after = Duration::from_secs_f64(kill_after.max(0.0));
    let deadline = |valid_until: Option<Instant>| {
        valid_until
            .and_then(|valid_until| watchdog_deadline(valid_until, session_timeout, kill_after, on_suspend))
    };
    let lost = guard.lost();
    tokio::pin!(lost);
    let revoked = guard.revocation_requested();
    tokio::pin!(revoked);
    let mut validity = guard.session_validity();
    // Start the command only with a deadline still ahead: after a long wait for the lock, the last confirmed
    // contact may be old, and the lost signal's heartbeat renews it within a round trip.
    let first = loop {
        if let Some(first) = deadline(*validity.borrow_and_update()) {
            if first.term_at > Instant::now() {
                break first;
            }
        }
        tokio::select! {
            // Fails once the guard is lost: then `lost` completes.
            Ok(()) = validity.changed() => {}
            reason = &mut lost => {
                let result = Err(Failure::new(exit::LOST, format!("lost {what} ({reason}) before the command started")));
                if with_the_session(reason) {
                    return Held::SessionLost { result, guard: Some(Box::new(guard)) };
                }
                return ended(result);
            }
            () = &mut revoked => {
                let _ = guard.release().await;
                return ended(Err(Failure::new(
                    exit::LOST,
                    format!("revocation of {what} was requested before the command started; released it"),
                )));
            }
            signal = interrupts.recv() => {
                let _ = guard.release().await;
                return ended(Err(interrupted(signal, format!("{signal} before the command started"))));
            }
        }
    };
    let env = [
        ("ZKLOCK_PATH", path.to_owned()),
        ("ZKLOCK_NODE", guard.path().to_owned()),
        ("ZKLOCK_FENCING_TOKEN", guard.fencing_token().to_string()),
    ];
    let mut child = match Child::spawn(command, &env, Some(first), what, None) {
        Ok(child) => child,
        Err(err) => {
            let _ = guard.release().await;
            let status = if err.kind() == std::io::ErrorKind::NotFound {
                exit::NOT_FOUND
            } else {
                exit::CANNOT_RUN
            };
            return ended(Err(Failure::new(
                status,
                format!("cannot run {}: {err}", command[0]),
            )));
        }
    };
    tracing::info!(pid = child.pid(), node = %guard.path(), "command started while holding {what}");
    if on_suspend == OnSuspend::Stop {
        child.stop_on_deadline();
    }
    // Under `--on-suspend stop`: whether the guard is suspended now (said once each way).
    let mut suspended = false;
    let exited = loop {
        let suspension = async {
            if suspended {
                guard.resumed().await.err()
            } else {
                guard.suspended().await
            }
        };
        tokio::select! {
            status = child.wait() => break status,
            // A loss is the `lost` branch's: this one only says a suspension and a resumption.
            None = suspension, if on_suspend == OnSuspend::Stop => {
                suspended = !suspended;
                // The watchdog has stopped it already (its deadline comes first); stopped here too, so that it is
                // stopped also without a watchdog — and continued here once confirmed.
                child.suspend(suspended);
                if suspended {
                    crate::say::warn(format_args!(
                        "could not confirm our ZooKeeper session with the leader in time ({}); the command (pid \
                         {}) is stopped until it is confirmed (--on-suspend stop)",
                        connection.state_now(),
                        child.pid()
                    ));
                } else {
                    crate::say::info(format_args!(
                        "our session and {what} are confirmed again; the command (pid {}) goes on",
                        child.pid()
                    ));
                }
            }
            signal = interrupts.next() => child.signal(signal),
            Ok(()) = validity.changed() => {
                if let Some(deadline) = deadline(*validity.borrow_and_update()) {
                    child.renew(deadline);
                }
            }
            reason = &mut lost => {
                // Said now, while the command is still being stopped.
                crate::say::error(format_args!("lost {what} ({reason}); stopping the command (pid {})", child.pid()));
                if child.is_stopped() {
                    // Stopped (a suspension, or the watchdog's deadline): a SIGTERM would need a SIGCONT, letting it
                    // run while another holder may.
                    child.signal(nix::sys::signal::Signal::SIGKILL);
                    let _ = child.wait().await;
                } else {
                    child.stop(kill_after).await;
                }
                if with_the_session(reason) {
                    return Held::SessionLost { result: Ok(exit::LOST), guard: Some(Box::new(guard)) };
                }
                return ended(Ok(exit::LOST));
            }
            () = &mut revoked => {
                // Honoured: the command goes first, then the guard, so the next holder's command never overlaps.
                crate::say::warn(format_args!("revocation of {what} requested; stopping the command (pid {})", child.pid()));
                child.stop(kill_after).await;
                if let Err(err) = guard.release().await {
                    crate::say::warn(format_args!("releasing {what}: {err}"));
                }
                return ended(Ok(exit::LOST));
            }
        }
    };
    // Known only after a successful wait.
    if child.stopped_by_watchdog() {
        // Said as it stands now, before the release may wait.
        let result = Err(Failure::new(
            exit::LOST,
            connection.watchdog_cause(what, kill_after, tolerated_outage(session_timeout, kill_after)),
        ));
        // Bounded: with the connection down the release could only retry until the session ends, keeping a
        // stopped command's exit waiting (13 s in a trial); the node goes with the session anyway.
        let _ = tokio::time::timeout(RELEASE_AFTER_WATCHDOG, guard.release()).await;
        return Held::SessionLost { result, guard: None };
    }
    if let Err(err) = guard.release().await {
        // A warning: the command's status is what we report.
        crate::say::warn(format_args!("releasing {what}: {err}"));
    }
    ended(
        exited
            .map(exit_code)
            .map_err(|err| Failure::new(exit::LOCAL_FAILURE, format!("waiting for the command: {err}"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_holds_the_command_the_note_or_neither() {
        let command = vec!["./job".to_owned(), "--password=hunter2".to_owned()];
        let full = describe(&command, None, false);
        assert!(full.starts_with("host=") && full.contains(&format!(" pid={} ", std::process::id())));
        assert!(full.ends_with(" cmd=./job --password=***"), "{full}");
        let noted = describe(&command, Some("nightly"), false);
        assert!(
            noted.ends_with(" note=nightly") && !noted.contains("cmd="),
            "{noted}"
        );
        let bare = describe(&command, None, true);
        assert!(bare.ends_with(&format!(" pid={}", std::process::id())), "{bare}");
        assert!(!bare.contains("./job"), "{bare}");
    }

    /// Issue 33, item 1: never more than MAX_DESCRIPTION bytes, never cut inside a character (`truncate` panics
    /// there), with a marker saying how long the text was; a text that fits is kept whole.
    #[test]
    fn a_long_description_is_cut_short_at_a_character_boundary() {
        let fits = "x".repeat(MAX_DESCRIPTION);
        assert_eq!(bounded(fits.clone()), fits);
        // Each offset of a 2-, 3- and 4-byte character at the cut.
        for wide in ["é", "€", "𝄞"] {
            for offset in 0..4 {
                let text = format!("{}{}", "x".repeat(offset), wide.repeat(MAX_DESCRIPTION));
                let cut = bounded(text.clone());
                let marker = format!(" ...[truncated: {} bytes in all]", text.len());
                let kept = cut.strip_suffix(&marker).expect("the marker ends it");
                assert!(cut.len() <= MAX_DESCRIPTION, "{} bytes", cut.len());
                assert!(
                    cut.len() > MAX_DESCRIPTION - wide.len(),
                    "as much as fits: {}",
                    cut.len()
                );
                assert!(text.starts_with(kept));
            }
        }
        let long = vec!["x".repeat(100_000); 12];
        let stored = describe(&long, None, false);
        assert!(
            stored.len() <= MAX_DESCRIPTION && stored.contains(" cmd=xxx"),
            "{stored}"
        );
        let stored = describe(&[], Some(&"n".repeat(5000)), false);
        assert!(
            stored.len() <= MAX_DESCRIPTION && stored.ends_with(" bytes in all]"),
            "{stored}"
        );
    }

    #[test]
    fn the_defaults_tolerate_an_outage_of_two_and_a_half_seconds() {
        let tolerated = tolerated_outage(Duration::from_secs(10), Duration::from_secs(2));
        assert_eq!(tolerated, Duration::from_millis(2500));
        let tolerated = tolerated_outage(Duration::from_secs(30), Duration::from_secs(1));
        assert_eq!(tolerated, Duration::from_millis(12_500));
    }

    #[test]
    fn watchdog_deadline_leaves_a_margin_and_the_kill_after() {
        let valid_until = Instant::now() + Duration::from_secs(60);
        let timeout = Duration::from_secs(4);
        let deadline =
            watchdog_deadline(valid_until, timeout, Duration::from_secs(1), OnSuspend::Kill).unwrap();
        assert_eq!(deadline.kill_at, valid_until - Duration::from_millis(200));
        assert_eq!(deadline.term_at, deadline.kill_at - Duration::from_millis(800));
        let deadline =
            watchdog_deadline(valid_until, timeout, Duration::from_millis(500), OnSuspend::Kill).unwrap();
        assert_eq!(deadline.term_at, deadline.kill_at - Duration::from_millis(500));
        // A --kill-after too long for the session timeout is cut to a fifth of it: renewals must have room to arrive.
        let deadline =
            watchdog_deadline(valid_until, timeout, Duration::from_secs(10), OnSuspend::Kill).unwrap();
        assert_eq!(deadline.term_at, deadline.kill_at - Duration::from_millis(800));
    }
}
