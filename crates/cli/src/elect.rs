//! `zklock elect PATH -- CMD...`: run a command only while this process is the elected leader. `--nonblock` and
//! `--timeout` limit each campaign as they limit `run`'s wait; `zklock elect --observe PATH` campaigns for nothing
//! and prints the leader on every change.
//!
//! A long-running process: its session is a reconnecting [`zklock::Session`]. When leadership is lost with the
//! ZooKeeper session — it expired, the connection was down past the lost policy, or the watchdog could not confirm
//! it in time — the command is stopped exactly as when leadership is taken away (SIGTERM, SIGKILL after
//! `--kill-after`, and we wait for it to exit), what is left of our node is deleted, and we campaign again, on a new
//! ZooKeeper session once the old one has ended; leading again, we run the command again with the new term's
//! (larger) fencing token. Leadership taken away — our node deleted (`zklock revoke`), a revocation requested —
//! still ends the process with [`exit::LOST`], and so does any loss with `--exit-on-expiry`.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Serialize;
use zklock::{Error, Leader, LeaderElection};

use crate::cli::ElectArgs;
use crate::exit::{self, Failure};
use crate::outage::Connection;
use crate::supervise::{self, Held, Interrupts};

/// Campaigns, runs the command while leading, and returns the process exit status (or, with `--observe`, follows
/// the leadership until a signal).
///
/// Must run on a current-thread runtime on the main thread: the command's parent-death signal is tied to the
/// thread that forks it (see `child.rs`).
pub async fn elect(args: ElectArgs) -> exit::Result {
    if !args.observe {
        supervise::refuse_nested("elect", &args.path, args.nonblock || args.timeout.is_some())?;
    }
    if let Some(addr) = args.metrics {
        crate::leader_metrics::serve(addr, &args.path)?;
    }
    supervise::with_session(&args.connect, async |client, interrupts| {
        if args.observe {
            observe(&args, client, interrupts).await
        } else {
            elect_with(&args, client, interrupts).await
        }
    })
    .await
}

async fn elect_with(
    args: &ElectArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let acls = crate::zk::NodeAcls::from_args(&args.connect.security, &args.acl)?;
    // `--exit-on-expiry`: the session of `client`, which ends for good when it expires. Otherwise a session whose
    // first ZooKeeper session is `client`'s and which makes the next one when one ends.
    let session = if args.exit_on_expiry {
        zklock::Session::new(client)
    } else {
        crate::zk::reconnecting(client, &args.connect).await?
    };
    let session = acls.apply(session).with_lost_policy(supervise::lost_policy(
        client.session_timeout(),
        args.kill_after,
        args.on_suspend,
    ));
    let election = LeaderElection::new(session.clone(), &args.path)
        .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?
        .with_data(supervise::describe(
            &args.command,
            args.describe.describe.as_deref(),
            args.describe.no_describe,
        ));
    let result = lead(args, &election, interrupts).await;
    crate::notify::stopping(&format!("leaving the election of {}", args.path));
    // `client` is closed by `supervise::with_session`; a later ZooKeeper session is closed here, once every other
    // handle of it (the session's, the election's) is gone.
    drop(election);
    crate::zk::close_later(session, client).await;
    result
}

/// Campaigns and runs the command while leading; after leadership lost with the session (unless
/// `--exit-on-expiry`), campaigns again on the next ZooKeeper session and runs the command again.
async fn lead(args: &ElectArgs, election: &LeaderElection, interrupts: &mut Interrupts) -> exit::Result {
    let what = format!("leadership of {}", args.path);
    loop {
        crate::notify::ready(&format!("campaigning for {}", args.path));
        let leadership = campaign(args, election, interrupts).await?;
        crate::notify::status(&format!(
            "leading {} (fencing token {}): running the command",
            args.path,
            leadership.fencing_token()
        ));
        crate::leader_metrics::leading(&args.path, Some(leadership.fencing_token()));
        // The connection of this term's ZooKeeper session (the reconnecting session may make a new one).
        let connection = Connection::follow(election.session().client(), &args.connect.hosts);
        let held = supervise::hold(
            leadership,
            &args.path,
            &what,
            &args.command,
            args.kill_after,
            args.on_suspend,
            &connection,
            interrupts,
        )
        .await;
        crate::leader_metrics::leading(&args.path, None);
        match held {
            Held::Ended(result) => return result,
            Held::SessionLost { result, .. } if args.exit_on_expiry => return result,
            Held::SessionLost { result, guard } => {
                // A loss while the command ran was said when it happened; the others are said now.
                if let Err(failure) = &result {
                    crate::say::warn(&failure.message);
                }
                if let Some(guard) = guard {
                    // After a disconnection our node may still be there: it goes before we queue again.
                    tokio::select! {
                        released = (*guard).release() => match released {
                            // Its loss was said above.
                            Ok(()) | Err(zklock::Error::Lost(_)) => {}
                            Err(err) => crate::say::warn(format_args!("releasing {what}: {err}")),
                        },
                        signal = interrupts.recv() => {
                            return Err(supervise::interrupted(
                                signal,
                                format!("{signal} while giving up the lost {what}"),
                            ));
                        }
                    }
                }
                crate::say::info(format_args!("campaigning for {} again", args.path));
            }
        }
    }
}

/// One campaign, limited by `--nonblock` or `--timeout`: waits first for a usable ZooKeeper session, and campaigns
/// again when the session ends meanwhile (unless `--exit-on-expiry`).
async fn campaign(
    args: &ElectArgs,
    election: &LeaderElection,
    interrupts: &mut Interrupts,
) -> exit::Result<zklock::Leadership> {
    let reconnects = election.session().is_reconnecting();
    let campaign = async {
        loop {
            election.session().ready().await?;
            let campaign = if args.nonblock {
                election.try_campaign().await
            } else if let Some(secs) = args.timeout {
                // Finite and at most a year: checked by `values::seconds`.
                election
                    .campaign_timeout(Duration::from_secs_f64(secs))
                    .await
                    .map(Some)
            } else {
                election.campaign().await.map(Some)
            };
            match campaign {
                Err(Error::SessionExpired | Error::AuthFailed) if reconnects => {
                    crate::say::warn(format_args!(
                        "the ZooKeeper session ended while campaigning for {}; campaigning again",
                        args.path
                    ));
                }
                campaign => return campaign,
            }
        }
    };
    // Dropping the campaign on a signal withdraws our candidacy; so do a failed `try_campaign` and a timed-out
    // `campaign_timeout`, before they return.
    let campaign = tokio::select! {
        campaign = campaign => campaign,
        signal = interrupts.recv() => {
            return Err(supervise::interrupted(signal, format!("{signal} while campaigning for {}", args.path)));
        }
    };
    match campaign {
        Ok(Some(leadership)) => Ok(leadership),
        Ok(None) => {
            let message = format!(
                "another candidate leads {} or is queued ahead of us (--nonblock)",
                args.path
            );
            Err(Failure::conflict(args.conflict.status(), message))
        }
        Err(Error::Timeout) => {
            let message = format!(
                "timed out after {}s campaigning for {}",
                args.timeout.unwrap_or_default(),
                args.path
            );
            Err(Failure::conflict(args.conflict.status(), message))
        }
        Err(err @ Error::InUse { .. }) => Err(supervise::in_use(&err, "zklock elect")),
        Err(err) => {
            let message = format!(
                "cannot campaign for {}: {err}{}",
                args.path,
                crate::zk::refused(&err)
            );
            Err(Failure::new(exit::UNAVAILABLE, message))
        }
    }
}

/// `--observe`: the leader now and after every change, one line each, until SIGINT or SIGTERM, or until the reader
/// of our output goes away (`| head -1`): exit 0 either way, silently. SIGHUP and SIGQUIT end it as they end any
/// wait (128 + N); the end of the session is a failure (3).
async fn observe(
    args: &ElectArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let election =
        LeaderElection::new(client, &args.path).map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
    let mut observer = election.observe();
    let gone = crate::lines::reader_gone();
    tokio::pin!(gone);
    loop {
        // `Observer::next` only reads: dropping it on a signal leaves nothing behind.
        let next = tokio::select! {
            next = observer.next() => next,
            () = &mut gone => return Ok(exit::OK),
            signal = interrupts.recv() => {
                return match signal {
                    Signal::SIGINT | Signal::SIGTERM => Ok(exit::OK),
                    signal => Err(supervise::interrupted(signal, format!("{signal} while observing {}", args.path))),
                };
            }
        };
        let leader = next.map_err(|err| match err {
            zklock::Error::InUse { .. } => supervise::in_use(&err, "zklock elect --observe"),
            err => Failure::new(exit::UNAVAILABLE, format!("observing {}: {err}", args.path)),
        })?;
        let line = if args.json {
            let line = Observed::new(&args.path, leader.as_ref());
            serde_json::to_string(&line)
                .map_err(|err| Failure::new(exit::OUTPUT_FAILURE, format!("cannot write JSON: {err}")))?
        } else {
            human(leader.as_ref())
        };
        if !crate::lines::write_line(&line)? {
            return Ok(exit::OK);
        }
    }
}

/// One line of `--observe`: `leader <node> token <fencing token> session 0x<id> data <data>`, or `no leader`.
fn human(leader: Option<&Leader>) -> String {
    match leader {
        Some(leader) => format!(
            "leader {} token {} session 0x{:x} data {}",
            leader.path,
            leader.fencing_token,
            leader.session_id,
            crate::status::shown_data(leader.data_readable, &leader.data)
        ),
        None => "no leader".to_owned(),
    }
}

/// One line of `--observe --json`.
#[derive(Debug, Serialize)]
struct Observed<'a> {
    path: &'a str,
    /// When this state was seen: milliseconds since the Unix epoch (issue 33.15).
    observed_ms: u64,
    /// `null` while nobody leads.
    leader: Option<ObservedLeader>,
}

#[derive(Debug, Serialize)]
struct ObservedLeader {
    /// The full path of the leader's node.
    node: String,
    fencing_token: i64,
    /// As `0x…`, the way ZooKeeper's tools (and `zklock status --json`) show it.
    session_id: String,
    /// The leader's node data as UTF-8 (lossily): `host=… pid=… cmd=… [note=…]` for a `zklock elect`; `null` when
    /// the node's ACL keeps it from this session.
    data: Option<String>,
}

impl<'a> Observed<'a> {
    fn new(path: &'a str, leader: Option<&Leader>) -> Observed<'a> {
        Observed {
            path,
            observed_ms: crate::lines::now_ms(),
            leader: leader.map(|leader| ObservedLeader {
                node: leader.path.clone(),
                fencing_token: leader.fencing_token,
                session_id: format!("0x{:x}", leader.session_id),
                data: leader
                    .data_readable
                    .then(|| String::from_utf8_lossy(&leader.data).into_owned()),
            }),
        }
    }
}
