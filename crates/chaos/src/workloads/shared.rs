//! What several workloads use: the contender's session, its records at the register, ids unique across the
//! campaign, and the fenced critical section of the lock-like workloads.

use std::future::Future;
use std::time::Duration;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zklock::{Error, Guard, LostPolicy, LostReason};
use zookeeper_client::{Client, SessionState};

use super::{Contender, Turn};
use crate::history::{Action, Kind};
use crate::register::{Answer, Connection};
use crate::worker_args::WorkerArgs;

/// The process's random choices: the worker's seed mixed with its launch.
pub fn seeded_rng(args: &WorkerArgs) -> StdRng {
    StdRng::seed_from_u64(args.seed ^ args.launch.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The register failed: the campaign cannot be judged, so the process ends with status 2.
pub fn register_failed(err: &anyhow::Error) -> ! {
    eprintln!("chaos: the register failed: {err:#}");
    std::process::exit(2);
}

/// Records `action` at the register (a shared, unfenced record for a checker).
pub async fn record(register: &mut Connection, action: Action, token: i64, value: i64) {
    if let Err(err) = register.op(Kind::Shared, token, action, value).await {
        register_failed(&err);
    }
}

/// The contender's session: the live one, or a new one once it has ended.
pub struct Session<'a> {
    args: &'a WorkerArgs,
    client: Option<Client>,
}

impl<'a> Session<'a> {
    pub fn new(args: &'a WorkerArgs) -> Session<'a> {
        Session { args, client: None }
    }

    /// The live session and whether it is new; `None` (after a pause) when connecting failed.
    pub async fn get(&mut self) -> Option<(Client, bool)> {
        if let Some(c) = &self.client {
            if !matches!(c.state(), SessionState::Expired | SessionState::Closed) {
                return Some((c.clone(), false));
            }
        }
        match connect(self.args).await {
            Ok(c) => {
                self.client = Some(c.clone());
                Some((c, true))
            }
            Err(err) => {
                eprintln!("worker {}: {err:#}", self.args.client);
                tokio::time::sleep(Duration::from_millis(200)).await;
                None
            }
        }
    }

    /// The session has ended (an error said so): the next [`Session::get`] makes a new one.
    pub fn ended(&mut self) {
        self.client = None;
    }

    /// Closes the session and waits (a little) until it is closed, so that its nodes go at once.
    pub async fn close(self) {
        let Some(client) = self.client else {
            return;
        };
        let mut states = client.state_watcher();
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(3), async {
            while !states.changed().await.is_terminated() {}
        })
        .await;
    }
}

/// The process's reconnecting session (`--reconnecting`): tried until it connects, at most until the deadline.
pub async fn reconnecting(args: &WorkerArgs) -> Result<zklock::Session> {
    let timeout = Duration::from_millis(args.session_timeout_ms);
    loop {
        let connector = Client::connector().with_session_timeout(timeout);
        match tokio::time::timeout(
            timeout * 2,
            zklock::Session::reconnecting(connector, &args.connect),
        )
        .await
        {
            Ok(Ok(session)) => return Ok(session),
            Ok(Err(err)) if crate::clock::now_ns() < args.until_ns => {
                eprintln!("worker {}: connecting: {err}", args.client);
            }
            Err(_) if crate::clock::now_ns() < args.until_ns => {
                eprintln!("worker {}: connecting timed out", args.client);
            }
            Ok(Err(err)) => return Err(err).context("connecting"),
            Err(_) => anyhow::bail!("connecting timed out"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Ends a reconnecting session: its nodes deleted ([`zklock::Session::close`]), then its ZooKeeper session closed by
/// dropping the last handle, waited for (a little) so that nothing of it is left.
pub async fn close_reconnecting(session: zklock::Session) {
    let _ = tokio::time::timeout(Duration::from_secs(3), session.clone().close()).await;
    let mut states = session.client().state_watcher();
    drop(session);
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        while !states.changed().await.is_terminated() {}
    })
    .await;
}

async fn connect(args: &WorkerArgs) -> Result<Client> {
    let timeout = Duration::from_millis(args.session_timeout_ms);
    let connecting = Client::connector()
        .with_session_timeout(timeout)
        .connect(&args.connect);
    tokio::time::timeout(timeout * 2, connecting)
        .await
        .context("connecting timed out")?
        .context("connecting")
}

/// The recipes' session on `zk`: under `--suspend` a guard whose session cannot be confirmed in time is suspended
/// rather than lost ([`LostPolicy::Suspend`]).
///
/// Under `--reconnecting`, the process's reconnecting session (whose current ZooKeeper session `zk` is).
pub fn recipe_session(cx: &Contender<'_>, zk: &Client) -> zklock::Session {
    let session = match &cx.session {
        Some(session) => session.clone(),
        None => zklock::Session::new(zk),
    };
    if cx.args.suspend {
        session.with_lost_policy(LostPolicy::Suspend)
    } else {
        session
    }
}

/// The marks a worker leaves in its log for the campaign's availability count (`campaign/availability.rs`).
pub const MARK_SUSPENDED: &str = "chaos-mark suspended";
pub const MARK_RESUMED: &str = "chaos-mark resumed";
pub const MARK_ENDED_UNCONFIRMED: &str = "chaos-mark ended-unconfirmed";
pub const MARK_NEEDLESS: &str = "chaos-mark needless-end";

/// One turn of a lock-like recipe, once `acquiring` has been made (after the turn's [`Contender::pace`] and any
/// choice of its own): acquire (`Idle`: not in time), use the resource in critical sections of 20–120 ms — one, or
/// 1 to `most_sections` drawn once acquired — release.
pub async fn hold(
    cx: &mut Contender<'_>,
    zk: &Client,
    acquiring: impl Future<Output = zklock::Result<Guard>>,
    kind: Kind,
    most_sections: usize,
) -> zklock::Result<Turn> {
    let Some(guard) = in_time(acquiring.await)? else {
        return Ok(Turn::Idle);
    };
    let sections = if most_sections > 1 {
        cx.rng.gen_range(1..=most_sections)
    } else {
        1
    };
    for _ in 0..sections {
        // A suspended holder acts no more until it is resumed; given up after two session timeouts.
        if guard.is_suspended() && !resumed_in_time(cx, &guard).await {
            break;
        }
        let work = Duration::from_millis(cx.rng.gen_range(20..120));
        match section(cx.register(), &guard, kind, work).await {
            Ok(true) => {}
            // Suspended in the middle: the next round waits for the resumption.
            Ok(false) if guard.is_suspended() => {}
            Ok(false) => break,
            Err(err) => register_failed(&err),
        }
    }
    if let Some(reason) = guard.lost_reason() {
        eprintln!("worker {}: guard lost: {reason}", cx.args.client);
    }
    // Ended because its session could not be confirmed in time: lost by the policy, or given up while suspended.
    let unconfirmed = guard.is_suspended() || guard.lost_reason() == Some(LostReason::Disconnected);
    release(cx, guard.release()).await;
    if unconfirmed {
        ended_unconfirmed(cx, zk).await;
    }
    Ok(Turn::Done)
}

/// Waits (at most two session timeouts) for a suspended guard to be resumed; marks both.
async fn resumed_in_time(cx: &Contender<'_>, guard: &Guard) -> bool {
    eprintln!("worker {}: {MARK_SUSPENDED}", cx.args.client);
    let resumed = matches!(
        tokio::time::timeout(cx.timeout * 2, guard.resumed()).await,
        Ok(Ok(()))
    );
    if resumed {
        eprintln!("worker {}: {MARK_RESUMED}", cx.args.client);
    }
    resumed
}

/// Marks a guard ended for a session not confirmed in time, and whether the end was needless: the session survived
/// (the client connected again on it, rather than learning that it ended), so the holder could have gone on. Waits at
/// most two session timeouts for the client to know.
async fn ended_unconfirmed(cx: &Contender<'_>, zk: &Client) {
    let mut states = zk.state_watcher();
    let survived = tokio::time::timeout(cx.timeout * 2, async {
        loop {
            match states.state() {
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => return true,
                state if state.is_terminated() => return false,
                _ => {
                    states.changed().await;
                }
            }
        }
    })
    .await
    .unwrap_or(false);
    let needless = if survived { MARK_NEEDLESS } else { "" };
    eprintln!("worker {}: {MARK_ENDED_UNCONFIRMED} {needless}", cx.args.client);
}

/// An acquire's outcome, with a timeout as `None`.
pub fn in_time<T>(acquired: zklock::Result<T>) -> zklock::Result<Option<T>> {
    match acquired {
        Ok(held) => Ok(Some(held)),
        Err(Error::Timeout) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Waits for a release, at most the session timeout, and logs how it went.
pub async fn release(cx: &Contender<'_>, releasing: impl Future<Output = zklock::Result<()>>) {
    match tokio::time::timeout(cx.timeout, releasing).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => eprintln!("worker {}: release: {err}", cx.args.client),
        Err(_) => eprintln!("worker {}: release timed out", cx.args.client),
    }
}

/// One critical section. A holder checks its guard before each use of the resource, as a careful user does; the
/// fence catches what that check cannot (a pause between the check and the use). Returns whether it completed.
pub async fn section(register: &mut Connection, guard: &Guard, kind: Kind, work: Duration) -> Result<bool> {
    section_on(register, 0, guard, kind, work).await
}

/// [`section`] on the register's resource `key` (the `partitioner`'s items).
pub async fn section_on(
    register: &mut Connection,
    key: u32,
    guard: &Guard,
    kind: Kind,
    work: Duration,
) -> Result<bool> {
    let token = guard.fencing_token();
    let first = match kind {
        Kind::Exclusive => Action::Read,
        Kind::Shared => Action::Enter,
    };
    if guard.is_lost() || guard.is_suspended() {
        return Ok(false);
    }
    let Answer::Ok(value) = register.op_on(key, kind, token, first, 0).await? else {
        return Ok(false);
    };
    tokio::time::sleep(work).await;
    if guard.is_lost() || guard.is_suspended() {
        return Ok(false);
    }
    let (last, value) = match kind {
        Kind::Exclusive => (Action::Write, value + 1),
        Kind::Shared => (Action::Leave, 0),
    };
    Ok(register.op_on(key, kind, token, last, value).await? != Answer::Rejected)
}
