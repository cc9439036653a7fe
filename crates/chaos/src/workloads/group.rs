//! The `group` workload: contenders join a [`zklock::Group`] again and again, follow it with a live view, look at it
//! before they leave; in the last seconds, once faults have stopped, every contender stays a member and records the
//! view it converged to. And its checker.
//!
//! What each worker records at the register (`token`: a member id, unique across the campaign: slot, launch,
//! count; the member's data is that id):
//! * `join` — our join was acknowledged;
//! * `look` (token: our member id), then `seen` (token: a member, value: our member id) for each member of a fresh
//!   look at the group (`sync`, then [`zklock::Group::members`]), recorded before the look was sent;
//! * `part` — our leave was acknowledged (our node deleted at the server);
//! * `view` — the final view of our live [`zklock::Members`]: a header (token 0, value: our member id), then one
//!   per member (token: the member, value: our member id).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::Rng;
use zklock::Error;
use zookeeper_client::Client;

use super::shared::record;
use super::{Contender, Turn, Workload};
use crate::checker::Violation;
use crate::clock::now_ns;
use crate::history::{Action, Op};
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

/// Every member joins, and stays, this long before the end (faults stopped well before: the last session timeout
/// + 8 s of the campaign are fault-free).
const FINAL_NS: u64 = 5_000_000_000;
/// The final views are recorded this long before the end…
const REPORT_NS: u64 = 2_000_000_000;
/// …and the members leave this long before the end.
const LEAVE_NS: u64 = 1_000_000_000;

/// The slot a member id belongs to.
fn slot_of(id: i64) -> i64 {
    id >> 48
}

/// One worker of the `group` workload: a round (join, follow, look, leave) per operation until the reports; then it
/// waits for the end. `args.naive` (the negative control, `--no-fencing`): the final view recorded is the first one
/// this process had, never updated.
#[derive(Default)]
pub struct Group {
    first_view: Option<Vec<i64>>,
}

impl Workload for Group {
    /// A process started after the reports has nothing to add.
    fn until(&self, args: &WorkerArgs) -> u64 {
        args.until_ns - REPORT_NS
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let hold = Duration::from_millis(cx.rng.gen_range(200..1500));
        let round = Round {
            args: cx.args,
            zk,
            session: super::shared::recipe_session(cx, zk),
            id: cx.next_id(),
            timeout: cx.timeout,
            final_ns: cx.args.until_ns - FINAL_NS,
            report_ns: cx.args.until_ns - REPORT_NS,
        };
        round.run(cx.register(), hold, &mut self.first_view).await?;
        Ok(Turn::Done)
    }

    async fn finish(&mut self, cx: &mut Contender<'_>) {
        let rest = Duration::from_nanos(cx.args.until_ns.saturating_sub(now_ns()));
        tokio::time::sleep(rest).await;
    }
}

struct Round<'a> {
    args: &'a WorkerArgs,
    zk: &'a Client,
    /// The group's session: `zk`'s, or the process's reconnecting session (`--session reconnecting`).
    session: zklock::Session,
    id: i64,
    timeout: Duration,
    final_ns: u64,
    report_ns: u64,
}

impl Round<'_> {
    /// Join, follow the view for `hold` (or, once the final phase has come, until the reports), look, leave.
    async fn run(
        &self,
        register: &mut Connection,
        hold: Duration,
        first_view: &mut Option<Vec<i64>>,
    ) -> zklock::Result<()> {
        let group = zklock::Group::new(self.session.clone(), &self.args.path)?.with_data(self.id.to_string());
        let membership = match tokio::time::timeout(self.timeout, group.join()).await {
            Ok(joined) => joined?,
            Err(_) => return Err(Error::Timeout), // dropped: our node (if made) is removed
        };
        record(register, Action::Join, self.id, 0).await;
        let mut view = match tokio::time::timeout(self.timeout, group.watch()).await {
            Ok(watching) => watching?,
            Err(_) => return Err(Error::Timeout),
        };
        first_view.get_or_insert_with(|| ids(view.members()));
        let hold_end = now_ns() + hold.as_nanos() as u64;
        let last = hold_end >= self.final_ns;
        let end = if last { self.report_ns } else { hold_end };
        loop {
            let left = Duration::from_nanos(end.saturating_sub(now_ns()));
            tokio::select! {
                event = view.next() => { event?; }
                reason = membership.lost() => return Err(reason_error(reason)),
                _ = tokio::time::sleep(left) => break,
            }
        }
        if last {
            // Take in what has arrived already, then record what we see.
            while let Ok(event) = tokio::time::timeout(Duration::from_millis(300), view.next()).await {
                event?;
            }
            let seen = if self.args.naive {
                first_view.clone().unwrap_or_default()
            } else {
                ids(view.members())
            };
            record(register, Action::View, 0, self.id).await;
            for member in seen {
                record(register, Action::View, member, self.id).await;
            }
            let leave_at = self.args.until_ns - LEAVE_NS;
            tokio::time::sleep(Duration::from_nanos(leave_at.saturating_sub(now_ns()))).await;
        } else {
            record(register, Action::Look, self.id, 0).await;
            let look = async {
                self.zk.sync(&self.args.path).await.ok();
                group.members().await
            };
            match tokio::time::timeout(self.timeout, look).await {
                Ok(Ok(members)) => {
                    for member in ids(&members) {
                        record(register, Action::Seen, member, self.id).await;
                    }
                }
                Ok(Err(err)) => return Err(err),
                Err(_) => return Err(Error::Timeout),
            }
        }
        match tokio::time::timeout(self.timeout, membership.leave()).await {
            Ok(Ok(())) => {
                record(register, Action::Part, self.id, 0).await;
                Ok(())
            }
            Ok(Err(err)) => Err(err),
            Err(_) => Err(Error::Timeout),
        }
    }
}

fn reason_error(reason: zklock::LostReason) -> Error {
    match reason {
        zklock::LostReason::SessionExpired => Error::SessionExpired,
        zklock::LostReason::ClientClosed => Error::Closed,
        other => Error::NodeDeleted {
            path: format!("our member node ({other})"),
        },
    }
}

/// The member ids in a view (members whose data is no id of ours are left out).
fn ids(members: &[zklock::Member]) -> Vec<i64> {
    members
        .iter()
        .filter_map(|m| std::str::from_utf8(&m.data).ok()?.parse().ok())
        .collect()
}

/// The checker of the `group` workload.
///
/// * **A leave is final**: a look recorded after a member's leave was acknowledged (`part`) does not show it — the
///   look's `sync` and listing were sent after the deletion had happened.
/// * **The views converge**: a final view (recorded once faults have stopped for longer than the session timeout)
///   shows every reporting member whose join was acknowledged at least a second before, unless it had left; and no
///   member whose leave was acknowledged a second before, nor one whose slot joined again (as a new process, its
///   old node gone with its session) at least the session timeout + 3 s before.
pub fn check(ops: &[Op], session_timeout_ns: u64) -> Vec<Violation> {
    const GRACE_NS: u64 = 1_000_000_000;
    let mut violations = Vec::new();
    let mut joins: BTreeMap<i64, &Op> = BTreeMap::new();
    let mut parts: BTreeMap<i64, &Op> = BTreeMap::new();
    for op in ops {
        match op.action {
            Action::Join => {
                joins.entry(op.token).or_insert(op);
            }
            Action::Part => {
                parts.entry(op.token).or_insert(op);
            }
            _ => {}
        }
    }
    // A leave is final.
    let looks: BTreeMap<i64, &Op> = ops
        .iter()
        .filter(|op| op.action == Action::Look)
        .map(|op| (op.token, op))
        .collect();
    for seen in ops.iter().filter(|op| op.action == Action::Seen) {
        let (Some(look), Some(part)) = (looks.get(&seen.value), parts.get(&seen.token)) else {
            continue;
        };
        if part.seq < look.seq {
            violations.push(format!(
                "group: member {:#x}'s look (op {}) showed member {:#x}, whose leave was acknowledged before it (op {})",
                seen.value, look.seq, seen.token, part.seq
            ));
        }
    }
    // The views converge.
    let mut reports: BTreeMap<i64, (&Op, BTreeSet<i64>)> = BTreeMap::new();
    for op in ops.iter().filter(|op| op.action == Action::View) {
        if op.token == 0 {
            reports.insert(op.value, (op, BTreeSet::new()));
        } else if let Some((_, view)) = reports.get_mut(&op.value) {
            view.insert(op.token);
        }
    }
    let reporters: BTreeSet<i64> = reports.keys().copied().collect();
    for (reporter, (header, view)) in &reports {
        let at = header.at_ns;
        for expected in &reporters {
            let Some(join) = joins.get(expected) else {
                continue;
            };
            let gone = parts.get(expected).is_some_and(|part| part.seq < header.seq);
            if join.at_ns + GRACE_NS <= at && !gone && !view.contains(expected) {
                violations.push(format!(
                    "group: the final view of member {reporter:#x} misses member {expected:#x}, which joined {:.1} s \
                     before and was still there",
                    (at - join.at_ns) as f64 / 1e9
                ));
            }
        }
        for member in view.difference(&reporters) {
            let left_before = parts.get(member).is_some_and(|part| part.at_ns + GRACE_NS <= at);
            let replaced = joins.get(member).is_some_and(|join| {
                joins.values().any(|later| {
                    slot_of(later.token) == slot_of(*member)
                        && later.seq > join.seq
                        && later.at_ns + session_timeout_ns + 3_000_000_000 <= at
                })
            });
            if left_before || replaced {
                violations.push(format!(
                    "group: the final view of member {reporter:#x} still shows member {member:#x}, which {}",
                    if left_before {
                        "had left"
                    } else {
                        "its slot had replaced long before"
                    }
                ));
            }
        }
    }
    if reports.is_empty() {
        violations.push("group: no member recorded a final view".to_owned());
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Kind;

    const S: u64 = 1_000_000_000;

    fn op(at_s: f64, action: Action, token: i64, value: i64) -> Op {
        Op {
            seq: 0,
            at_ns: (at_s * S as f64) as u64,
            client: slot_of(token.max(value)) as u32,
            token,
            kind: Kind::Shared,
            action,
            value,
            accepted: true,
            key: 0,
        }
    }

    /// `member`'s join, acknowledged at `at_s`.
    fn join(at_s: f64, member: i64) -> Op {
        op(at_s, Action::Join, member, 0)
    }

    /// The final view `reporter` records at `at_s`: the header, then one record per member in it.
    fn view(at_s: f64, reporter: i64, members: &[i64]) -> Vec<Op> {
        let header = op(at_s, Action::View, 0, reporter);
        let seen = members
            .iter()
            .map(|&member| op(at_s, Action::View, member, reporter));
        std::iter::once(header).chain(seen).collect()
    }

    /// The records of `parts`, one after the other, numbered in the register's order.
    fn history<const N: usize>(parts: [Vec<Op>; N]) -> Vec<Op> {
        let mut ops = parts.concat();
        for (seq, op) in ops.iter_mut().enumerate() {
            op.seq = seq as u64;
        }
        ops
    }

    const A: i64 = 1 << 32 | 1;
    const B: i64 = 1 << 48 | 1 << 32 | 1;
    const B2: i64 = 1 << 48 | 2 << 32 | 1;

    #[test]
    fn a_member_seen_after_its_acknowledged_leave_is_caught() {
        // A looks and sees B, whose leave is acknowledged at 1.2 s or 1.3 s, with A's look at the other time.
        let (look, part) = ((Action::Look, A), (Action::Part, B));
        let looked_at = |first: (Action, i64), second: (Action, i64)| {
            let (before, after) = (op(1.2, first.0, first.1, 0), op(1.3, second.0, second.1, 0));
            let seen = op(1.4, Action::Seen, B, A);
            history([
                vec![join(1.0, A), join(1.1, B), before, after, seen],
                view(9.0, A, &[A]),
            ])
        };
        // The leave during the look: B may or may not be seen.
        assert_eq!(check(&looked_at(look, part), 4 * S), Vec::<String>::new());
        let v = check(&looked_at(part, look), 4 * S);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("leave was acknowledged before"), "{v:?}");
    }

    #[test]
    fn views_that_do_not_converge_are_caught() {
        let ok = history([
            vec![join(1.0, A), join(1.5, B)],
            view(9.0, A, &[A, B]),
            view(9.1, B, &[A, B]),
        ]);
        assert_eq!(check(&ok, 4 * S), Vec::<String>::new());
        // A's view misses B; B's view still shows B's slot's earlier process, replaced 8 s before.
        let bad = history([
            vec![join(1.0, A), join(1.0, B), join(1.5, B2)],
            view(9.0, A, &[A]),
            view(9.1, B2, &[A, B, B2]),
        ]);
        let v = check(&bad, 4 * S);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().any(|v| v.contains("misses member")), "{v:?}");
        assert!(v.iter().any(|v| v.contains("replaced long before")), "{v:?}");
        // A join just before the report may not be in the view yet.
        let late = history([
            vec![join(1.0, A), join(8.8, B)],
            view(9.0, A, &[A]),
            view(9.1, B, &[A, B]),
        ]);
        assert_eq!(check(&late, 4 * S), Vec::<String>::new());
        assert_eq!(check(&[], 4 * S).len(), 1, "no final view at all");
    }
}
