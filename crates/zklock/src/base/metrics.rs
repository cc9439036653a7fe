//! The name, help text and unit of every metric the recipes record — the one list of them — for the places that
//! record them (`engine/`, `node/guard.rs`, `node/lost.rs`, `base/retry.rs`, `recipes/locks/election.rs`,
//! `recipes/queues/items.rs`) and for an exporter that shows them (Prometheus' `# HELP` lines, say).

use metrics::Unit;

/// Held guards lost, by `reason`.
pub(crate) const GUARDS_LOST: &str = "zklock_guards_lost_total";
/// Held guards suspended under a suspending `LostPolicy`.
pub(crate) const GUARDS_SUSPENDED: &str = "zklock_guards_suspended_total";
/// Suspended guards resumed.
pub(crate) const GUARDS_RESUMED: &str = "zklock_guards_resumed_total";
/// Requests sent again after a connection loss.
pub(crate) const RETRIES: &str = "zklock_connection_loss_retries_total";
/// An acquire's time, by `recipe` and `outcome`.
pub(crate) const ACQUIRE_WAIT: &str = "zklock_acquire_wait_seconds";
/// A guard's time held, by `recipe`.
pub(crate) const HOLD: &str = "zklock_hold_seconds";
/// 1 while this process leads the election of the `path` label.
pub(crate) const LEADER: &str = "zklock_leader";
/// The items this process saw in the queue of the `path` label.
pub(crate) const QUEUE_DEPTH: &str = "zklock_queue_depth";

/// The metrics the recipes record: name, unit and help text, in the order of the crate documentation's table.
const COUNTERS: [(&str, Unit, &str); 4] = [
    (
        GUARDS_LOST,
        Unit::Count,
        "Held guards lost (also queue claims and double-barrier participations), by reason: session_expired, \
         client_closed, node_deleted, disconnected.",
    ),
    (
        GUARDS_SUSPENDED,
        Unit::Count,
        "Held guards suspended under a suspending LostPolicy: their session not confirmed in time.",
    ),
    (
        GUARDS_RESUMED,
        Unit::Count,
        "Suspended guards resumed: a heartbeat through the leader found their node (same node, same fencing token).",
    ),
    (
        RETRIES,
        Unit::Count,
        "Requests sent again after a connection loss, by every recipe (RetryPolicy).",
    ),
];

const HISTOGRAMS: [(&str, Unit, &str); 2] = [
    (
        ACQUIRE_WAIT,
        Unit::Seconds,
        "An acquire's time from the call to its end, by recipe and outcome: acquired, busy, timeout, error.",
    ),
    (
        HOLD,
        Unit::Seconds,
        "A guard's time from its acquisition until it was released or dropped, by recipe.",
    ),
];

const GAUGES: [(&str, Unit, &str); 2] = [
    (
        LEADER,
        Unit::Count,
        "1 while this process leads the election in the directory of the path label, else 0 (a LeaderElection's \
         leadership, from the campaign's success until it is lost, released or dropped).",
    ),
    (
        QUEUE_DEPTH,
        Unit::Count,
        "The items (claimed ones included) this process saw in the queue of the path label at its last listing of \
         it: by take, take_safe, peek, len or a wait for items (Queue and PriorityQueue).",
    ),
];

/// Describes every metric of the recipes (help text and unit) to the installed `metrics` recorder. Call it once,
/// after installing the recorder (describing again is harmless): the `metrics` facade hands a description to the
/// recorder installed at the time, so the library cannot do it before the application has one.
pub fn describe_metrics() {
    for (name, unit, help) in COUNTERS {
        ::metrics::describe_counter!(name, unit, help);
    }
    for (name, unit, help) in HISTOGRAMS {
        ::metrics::describe_histogram!(name, unit, help);
    }
    for (name, unit, help) in GAUGES {
        ::metrics::describe_gauge!(name, unit, help);
    }
}
