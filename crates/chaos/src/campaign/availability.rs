//! Availability: what the faults cost holders whose safety they did not threaten. Counted from the contenders' logs
//! (`contender-<slot>.log`): the marks the workers leave (`workloads/shared.rs`) and, for the `run` workload, what
//! `zklock run` and its watchdog say.
//!
//! * `ended_unconfirmed`: guards ended because their session could not be confirmed in time — lost by the lost
//!   policy after a disconnection, given up while suspended, or (`run`) a command ended by its watchdog or for a
//!   disconnection.
//! * `needless_ends`: of those, the ones whose session survived: the holder could have gone on. Known for the
//!   workers, which look at their client afterwards; not for `run`, whose `zklock` exits with its session (`NA`).
//! * `suspended` / `resumed`: suspensions seen under `--lost-policy suspend`, and those that ended in a resumption.
//! * `ended_lost` (`run`): commands `zklock run` ended, or never started, because it lost its lock otherwise — the
//!   session expired, the node was deleted, or any loss before the command started: not an end for want of
//!   confirmation of a running command. With `ended_unconfirmed` it accounts for the exit statuses 75.
//! * `reconnected`: under `--session reconnecting`, the worker processes that went on through more than one
//!   ZooKeeper session (each says how many it had at its end): what shows that the campaign exercised them.

use std::path::Path;

use crate::workloads::shared::{MARK_ENDED_UNCONFIRMED, MARK_NEEDLESS, MARK_RESUMED, MARK_SUSPENDED};

/// `zklock run`'s watchdog stopping the command for a session not confirmed in time (`--on-suspend stop`).
const RUN_STOPPED: &str = "stopping the command (SIGSTOP)";
/// ... and continuing it.
const RUN_CONTINUED: &str = "continuing the command (SIGCONT)";
/// `zklock run`'s watchdog ending the command for a session not confirmed in time (`--on-suspend kill`).
const RUN_WATCHDOG_ENDED: &str = "was not confirmed in time; sending SIGTERM";
/// `zklock run` ending the command for a disconnection past its lost policy.
const RUN_DISCONNECTED: &str = "(the connection to ZooKeeper was down for too long); stopping the command";
/// `zklock run` ending the command for a lost lock (`lost <what> (<reason>); stopping the command (pid N)`), or
/// exiting 75 for one lost before the command started (`lost <what> (<reason>) before the command started`).
const RUN_LOST: [&str; 2] = ["); stopping the command (pid ", ") before the command started"];

/// The counts (see the module documentation); `needless_ends` is `None` where it cannot be known.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Availability {
    pub suspended: usize,
    pub resumed: usize,
    pub ended_unconfirmed: usize,
    pub needless_ends: Option<usize>,
    pub reconnected: usize,
    pub ended_lost: usize,
}

/// Counts in the logs of `slots` contenders in `dir`; `run`: the slots run `zklock run`.
pub fn count(dir: &Path, slots: usize, run: bool) -> Availability {
    let mut counted = Availability {
        needless_ends: (!run).then_some(0),
        ..Availability::default()
    };
    for slot in 0..slots {
        let log = std::fs::read_to_string(dir.join(format!("contender-{slot}.log"))).unwrap_or_default();
        counted.add(&log);
    }
    counted
}

impl Availability {
    fn add(&mut self, log: &str) {
        for line in log.lines() {
            if line.contains(MARK_SUSPENDED) || line.contains(RUN_STOPPED) {
                self.suspended += 1;
            }
            if line.contains(MARK_RESUMED) || line.contains(RUN_CONTINUED) {
                self.resumed += 1;
            }
            if line.contains(MARK_ENDED_UNCONFIRMED)
                || line.contains(RUN_WATCHDOG_ENDED)
                || line.contains(RUN_DISCONNECTED)
            {
                self.ended_unconfirmed += 1;
            } else if line.contains("lost ") && RUN_LOST.iter().any(|end| line.contains(end)) {
                self.ended_lost += 1;
            }
            if let Some((_, rest)) = line.split_once(": ") {
                if let Some((count, _)) = rest.split_once(" ZooKeeper sessions: ") {
                    if count.parse::<usize>().is_ok_and(|n| n >= 2) {
                        self.reconnected += 1;
                    }
                }
            }
            if line.contains(MARK_NEEDLESS) {
                if let Some(needless) = &mut self.needless_ends {
                    *needless += 1;
                }
            }
        }
    }

    /// `suspended=N resumed=N ended_unconfirmed=N needless_ends=N reconnected=N ended_lost=N` (`NA` where
    /// unknown), for `chaos-result`.
    pub fn fields(&self) -> String {
        format!(
            "suspended={} resumed={} ended_unconfirmed={} needless_ends={} reconnected={} ended_lost={}",
            self.suspended,
            self.resumed,
            self.ended_unconfirmed,
            self.needless_ends
                .map_or_else(|| "NA".to_owned(), |n| n.to_string()),
            self.reconnected,
            self.ended_lost
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_run_messages_are_counted() {
        let mut workers = Availability {
            needless_ends: Some(0),
            ..Availability::default()
        };
        workers.add(&format!(
            "worker 0: {MARK_SUSPENDED}\nworker 0: {MARK_RESUMED}\nworker 1: {MARK_SUSPENDED}\n\
             worker 1: {MARK_ENDED_UNCONFIRMED} {MARK_NEEDLESS}\nworker 2: {MARK_ENDED_UNCONFIRMED} \nother\n\
             worker 0: 2 ZooKeeper sessions: [1a, 1b]\nworker 1: 1 ZooKeeper sessions: [1c]\n"
        ));
        assert_eq!(
            workers,
            Availability {
                suspended: 2,
                resumed: 1,
                ended_unconfirmed: 2,
                needless_ends: Some(1),
                reconnected: 1,
                ended_lost: 0,
            }
        );
        let mut run = Availability::default();
        run.add(
            "zklock: watchdog: the ZooKeeper session was not confirmed in time; stopping the command (SIGSTOP) until it is\n\
             zklock: watchdog: the ZooKeeper session is confirmed again; continuing the command (SIGCONT)\n\
             zklock: watchdog: the ZooKeeper session was not confirmed in time; sending SIGTERM to the command\n\
             zklock: lost the lock on /x (the connection to ZooKeeper was down for too long); stopping the command (pid 7)\n\
             zklock: lost the lock on /x (the ZooKeeper session expired); stopping the command (pid 8)\n\
             zklock: lost the lock on /x (the ZooKeeper session expired) before the command started\n",
        );
        assert_eq!(
            run.fields(),
            "suspended=1 resumed=1 ended_unconfirmed=2 needless_ends=NA reconnected=0 ended_lost=2"
        );
    }
}
