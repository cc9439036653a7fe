//! The help text and unit of every metric the recipes record, for an exporter that shows them (Prometheus'
//! `# HELP` lines, say). The names are recorded where they are measured (`engine/`, `node/guard.rs`, `node/lost.rs`,
//! `base/retry.rs`, and the gauges in `recipes/locks/election.rs` and `recipes/queues/`); this is the one list of what they mean.

use metrics::Unit;

/// The metrics the recipes record: name, unit and help text, in the order of the crate documentation's table.
const COUNTERS: [(&str, Unit, &str); 4] = [
    (
        "zklock_guards_lost_total",
        Unit::Count,
        "Held guards lost (also queue claims and double-barrier participations), by reason: session_expired, \
         client_closed, node_deleted, disconnected.",
    ),
    (
        "zklock_guards_suspended_total",
        Unit::Count,
        "Held guards suspended under a suspending LostPolicy: their session not confirmed in time.",
    ),
    (
        "zklock_guards_resumed_total",
        Unit::Count,
        "Suspended guards resumed: a heartbeat through the leader found their node (same node, same fencing token).",
    ),
    (
        "zklock_connection_loss_retries_total",
        Unit::Count,
        "Requests sent again after a connection loss, by every recipe (RetryPolicy).",
    ),
];

const HISTOGRAMS: [(&str, Unit, &str); 2] = [
    (
        "zklock_acquire_wait_seconds",
        Unit::Seconds,
        "An acquire's time from the call to its end, by recipe and outcome: acquired, busy, timeout, error.",
    ),
    (
        "zklock_hold_seconds",
        Unit::Seconds,
        "A guard's time from its acquisition until it was released or dropped, by recipe.",
    ),
];

const GAUGES: [(&str, Unit, &str); 2] = [
    (
        crate::recipes::locks::election::LEADER_GAUGE,
        Unit::Count,
        "1 while this process leads the election in the directory of the path label, else 0 (a LeaderElection's \
         leadership, from the campaign's success until it is lost, released or dropped).",
    ),
    (
        crate::recipes::queues::layout::QUEUE_DEPTH_GAUGE,
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
        metrics::describe_counter!(name, unit, help);
    }
    for (name, unit, help) in HISTOGRAMS {
        metrics::describe_histogram!(name, unit, help);
    }
    for (name, unit, help) in GAUGES {
        metrics::describe_gauge!(name, unit, help);
    }
}
