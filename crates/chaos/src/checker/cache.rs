//! The `cache` workload's checks: what each cache reported against what the writers wrote and what the server
//! holds at the end (`workloads/cache/history.rs` for the records).
//!
//! * **The final view is the server's tree**: once the writers have stopped (and every fault healed long before),
//!   each cache's content equals the tree the campaign read after `sync` once every contender ended — every node,
//!   its data and its whole stat.
//! * **Each path's events follow zxid order**: a `Changed` goes from the state last reported to a newer one (a
//!   later incarnation — larger czxid — or the same one with no stat counter going back, and something changed); a
//!   `Created` after a `Deleted` is a later incarnation (larger czxid); after a `Reset`, the content replayed is no
//!   older than what was reported before. The events also add up: a `Created` of a path not held, a `Changed` and
//!   a `Deleted` of exactly the state held, and at the end the events replayed give the view.
//! * **No state that never existed**: every node a `Created` or `Changed` reports carries data one write to that
//!   path carried (every write's data is unique), sent before the event was received; if the server acknowledged
//!   that write, the node's czxid, mzxid and version are the ones it returned; if not (no answer), the node is a
//!   create's (version 0, czxid = mzxid) or a set's (version ≥ 1) as the write was. A `Deleted` needs a delete of
//!   that path sent before it.

use std::collections::{BTreeMap, HashMap};

use zookeeper_client::Stat;

use super::Violation;
use crate::workloads::cache::history::{CacheRun, Change, History, Node, Outcome, View, Write, WriteOp};

/// A cache may still be on its first read this long after it started without that being a violation.
const FIRST_READ_NS: u64 = 3_000_000_000;

/// Checks every cache of `history` against its writes and against `server`, the tree read at the end (`None`: it
/// could not be read, which is said).
pub fn check_cache(history: &History, server: Option<&[Node]>) -> Vec<Violation> {
    let written = Written::index(&history.writes);
    let mut violations = Vec::new();
    for cache in &history.caches {
        check_events(cache, &written, &mut violations);
        if let Some(server) = server {
            check_view(cache, server, &mut violations);
        }
    }
    if server.is_none() {
        violations.push("cache: the server's tree was not read at the end".to_owned());
    }
    if !history
        .caches
        .iter()
        .any(|c| matches!(c.view, Some((_, View::Nodes(_)))))
    {
        violations.push("cache: no cache recorded a final view".to_owned());
    }
    violations
}

/// The writes that may have happened, by what they wrote.
struct Written<'a> {
    /// (path, data) → the write and the index of its op that wrote it.
    by_data: HashMap<(&'a str, &'a [u8]), (&'a Write, usize)>,
    /// path → when each delete of it was sent, earliest first.
    deletes: HashMap<&'a str, Vec<u64>>,
}

impl<'a> Written<'a> {
    fn index(writes: &'a [Write]) -> Written<'a> {
        let mut by_data = HashMap::new();
        let mut deletes: HashMap<&str, Vec<u64>> = HashMap::new();
        for write in writes.iter().filter(|w| w.outcome != Outcome::Refused) {
            for (i, op) in write.ops.iter().enumerate() {
                match op {
                    WriteOp::Create { path, data } | WriteOp::Set { path, data } => {
                        by_data.insert((path.as_str(), data.as_slice()), (write, i));
                    }
                    WriteOp::Delete { path } => deletes.entry(path.as_str()).or_default().push(write.call_ns),
                }
            }
        }
        for sent in deletes.values_mut() {
            sent.sort_unstable();
        }
        Written { by_data, deletes }
    }

    /// Why `node`, reported at `at_ns`, is no state a write made (`None`: it is one).
    fn never_written(&self, node: &Node, at_ns: u64) -> Option<String> {
        let data = shown(&node.data);
        let Some(&(write, i)) = self.by_data.get(&(node.path.as_str(), node.data.as_slice())) else {
            return Some(format!("data {data}, which no write to {} carried", node.path));
        };
        if write.call_ns >= at_ns {
            return Some(format!(
                "data {data} {:.3} s before the write that carried it ({} #{}) was sent",
                (write.call_ns - at_ns) as f64 / 1e9,
                write.process,
                write.n
            ));
        }
        let s = &node.stat;
        let create = matches!(write.ops[i], WriteOp::Create { .. });
        let (made, zxid) = match &write.outcome {
            // Every op of a `multi` has the same zxid: a create whose stat the server did not send made the node at
            // the zxid another op's stat shows.
            Outcome::Applied(stats) => (
                stats.get(i).copied().flatten(),
                stats.iter().flatten().next().map(|s| s.mzxid),
            ),
            _ => (None, None),
        };
        match made {
            None if create && zxid.is_some_and(|zxid| (s.czxid, s.mzxid) != (zxid, zxid)) => Some(format!(
                "data {data} at czxid {:#x}, mzxid {:#x}, but the multi that created it ({} #{}) had zxid {:#x}",
                s.czxid,
                s.mzxid,
                write.process,
                write.n,
                zxid.unwrap_or_default()
            )),
            Some(made) if (made.czxid, made.mzxid, made.version) != (s.czxid, s.mzxid, s.version) => Some(format!(
                "data {data} at czxid {:#x}, mzxid {:#x}, version {}, but the write that carried it ({} #{}) made \
                 czxid {:#x}, mzxid {:#x}, version {}",
                s.czxid, s.mzxid, s.version, write.process, write.n, made.czxid, made.mzxid, made.version
            )),
            Some(_) => None,
            None if create && (s.version != 0 || s.czxid != s.mzxid) => Some(format!(
                "data {data} at version {} (czxid {:#x}, mzxid {:#x}), but a create carried it ({} #{})",
                s.version, s.czxid, s.mzxid, write.process, write.n
            )),
            None if !create && s.version < 1 => Some(format!(
                "data {data} at version {}, but a set carried it ({} #{})",
                s.version, write.process, write.n
            )),
            None => None,
        }
    }

    /// Whether a delete of `path` was sent before `at_ns`.
    fn deleted_before(&self, path: &str, at_ns: u64) -> bool {
        self.deletes
            .get(path)
            .and_then(|sent| sent.first())
            .is_some_and(|&first| first < at_ns)
    }
}

/// Whether `a` is no older than `b`, as two states of one path: a later incarnation, or the same one with no stat
/// counter gone back.
fn not_older(a: &Stat, b: &Stat) -> bool {
    a.czxid > b.czxid
        || (a.czxid == b.czxid
            && a.mzxid >= b.mzxid
            && a.pzxid >= b.pzxid
            && a.version >= b.version
            && a.cversion >= b.cversion)
}

/// A node's data in a message (our data is a decimal write id).
fn shown(data: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(data))
}

/// A node in a message.
fn described(node: &Node) -> String {
    format!(
        "{} = {} (czxid {:#x}, mzxid {:#x}, pzxid {:#x}, version {}, cversion {}, children {})",
        node.path,
        shown(&node.data),
        node.stat.czxid,
        node.stat.mzxid,
        node.stat.pzxid,
        node.stat.version,
        node.stat.cversion,
        node.stat.num_children
    )
}

/// The rules on one cache's events; leaves nothing to say about its view but its events' consistency with it.
fn check_events(cache: &CacheRun, written: &Written<'_>, violations: &mut Vec<Violation>) {
    let name = &cache.name;
    let mut held: BTreeMap<&str, &Node> = BTreeMap::new();
    // The last state reported of each path, and whether that was its deletion.
    let mut last: HashMap<&str, (Stat, bool)> = HashMap::new();
    // The view is held to the events received before it was taken.
    let mut view = match &cache.view {
        Some((at, View::Nodes(nodes))) => Some((*at, nodes)),
        _ => None,
    };
    for event in &cache.events {
        let at = event.at_ns;
        if view.is_some_and(|(view_at, _)| view_at < at) {
            if let Some((_, nodes)) = view.take() {
                adds_up(name, nodes, &held, violations);
            }
        }
        match &event.change {
            Change::Created(node) => {
                let path = node.path.as_str();
                if let Some(was) = held.get(path) {
                    violations.push(format!(
                        "cache {name}: reported {} created while it held {}",
                        described(node),
                        described(was)
                    ));
                }
                match last.get(path) {
                    Some((gone, true)) if node.stat.czxid <= gone.czxid => violations.push(format!(
                        "cache {name}: reported {} created after it reported the node of czxid {:#x} deleted: not a \
                         later node",
                        described(node),
                        gone.czxid
                    )),
                    Some((seen, false)) if !not_older(&node.stat, seen) => violations.push(format!(
                        "cache {name}: reported {} created (again) older than the state it reported before (czxid \
                         {:#x}, mzxid {:#x}, version {})",
                        described(node),
                        seen.czxid,
                        seen.mzxid,
                        seen.version
                    )),
                    _ => {}
                }
                if let Some(why) = written.never_written(node, at) {
                    violations.push(format!("cache {name}: reported {} created with {why}", node.path));
                }
                held.insert(path, node);
                last.insert(path, (node.stat, false));
            }
            Change::Changed { old, new } => {
                let path = new.path.as_str();
                if held.get(path) != Some(&old) || old.path != new.path {
                    violations.push(format!(
                        "cache {name}: reported a change from {}, which is not what it held ({})",
                        described(old),
                        held.get(path)
                            .map_or_else(|| "nothing".to_owned(), |n| described(n))
                    ));
                }
                if !not_older(&new.stat, &old.stat) || new == old {
                    violations.push(format!(
                        "cache {name}: reported a change of {} from {} to {}: not a later state",
                        path,
                        described(old),
                        described(new)
                    ));
                }
                if let Some(why) = written.never_written(new, at) {
                    violations.push(format!("cache {name}: reported {path} changed to {why}"));
                }
                held.insert(path, new);
                last.insert(path, (new.stat, false));
            }
            Change::Deleted(node) => {
                let path = node.path.as_str();
                if held.get(path) != Some(&node) {
                    violations.push(format!(
                        "cache {name}: reported {} deleted, which is not what it held ({})",
                        described(node),
                        held.get(path)
                            .map_or_else(|| "nothing".to_owned(), |n| described(n))
                    ));
                }
                if !written.deleted_before(path, at) {
                    violations.push(format!(
                        "cache {name}: reported {path} deleted, but no delete of it had been sent"
                    ));
                }
                held.remove(path);
                last.insert(path, (node.stat, true));
            }
            Change::Reset => held.clear(),
            Change::Initialized | Change::Ended => {}
        }
    }
    if let Some((_, nodes)) = view {
        adds_up(name, nodes, &held, violations);
    }
}

/// The view against what the events before it add up to.
fn adds_up(name: &str, nodes: &[Node], held: &BTreeMap<&str, &Node>, violations: &mut Vec<Violation>) {
    let view: BTreeMap<&str, &Node> = nodes.iter().map(|n| (n.path.as_str(), n)).collect();
    if view != *held {
        violations.push(format!(
            "cache {name}: its events do not add up to its final view: {}",
            differences(&view, held, "view", "events")
        ));
    }
}

/// The final view against the server's tree.
fn check_view(cache: &CacheRun, server: &[Node], violations: &mut Vec<Violation>) {
    let name = &cache.name;
    match &cache.view {
        Some((_, View::Nodes(nodes))) => {
            let view: BTreeMap<&str, &Node> = nodes.iter().map(|n| (n.path.as_str(), n)).collect();
            let tree: BTreeMap<&str, &Node> = server.iter().map(|n| (n.path.as_str(), n)).collect();
            if view != tree {
                violations.push(format!(
                    "cache {name}: the final view differs from the server's tree: {}",
                    differences(&view, &tree, "cache", "server")
                ));
            }
        }
        Some((at, View::Uninitialized)) if at.saturating_sub(cache.started_ns) > FIRST_READ_NS => violations
            .push(format!(
                "cache {name}: still on its first read {:.1} s after it started",
                (at - cache.started_ns) as f64 / 1e9
            )),
        _ => {}
    }
}

/// How two trees differ, in words: the number of paths and the first three.
fn differences(a: &BTreeMap<&str, &Node>, b: &BTreeMap<&str, &Node>, a_is: &str, b_is: &str) -> String {
    let mut paths: Vec<&str> = a.keys().chain(b.keys()).copied().collect();
    paths.sort_unstable();
    paths.dedup();
    let differ: Vec<String> = paths
        .into_iter()
        .filter(|p| a.get(p) != b.get(p))
        .map(|p| {
            let side = |n: Option<&&Node>| n.map_or_else(|| "nothing".to_owned(), |n| described(n));
            format!("{a_is} {}, {b_is} {}", side(a.get(p)), side(b.get(p)))
        })
        .collect();
    let more = if differ.len() > 3 {
        format!("; … {} more", differ.len() - 3)
    } else {
        String::new()
    };
    format!(
        "{} path(s): {}{more}",
        differ.len(),
        differ.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
    )
}

#[cfg(test)]
mod tests {
    //! Every rule is shown to pass a correct history and to catch a violating one (negative controls), among them
    //! the two ways a cache that does not re-sync after a reconnection fails: it misses what changed meanwhile, and
    //! a cache made of a stale read reports a state going back.
    use super::*;
    use crate::workloads::cache::history::Event;

    const MS: u64 = 1_000_000;

    fn stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ctime: 1,
            mtime: 1,
            version,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 2,
            num_children: 0,
        }
    }

    fn node(path: &str, data: &str, stat: Stat) -> Node {
        Node {
            path: path.to_owned(),
            data: data.as_bytes().to_vec(),
            stat,
        }
    }

    fn write(n: u64, call_ms: u64, ops: Vec<WriteOp>, outcome: Outcome) -> Write {
        Write {
            process: "0-0".to_owned(),
            n,
            call_ns: call_ms * MS,
            ops,
            outcome,
        }
    }

    fn create(path: &str, data: &str) -> WriteOp {
        WriteOp::Create {
            path: path.to_owned(),
            data: data.as_bytes().to_vec(),
        }
    }

    fn set(path: &str, data: &str) -> WriteOp {
        WriteOp::Set {
            path: path.to_owned(),
            data: data.as_bytes().to_vec(),
        }
    }

    fn delete(path: &str) -> WriteOp {
        WriteOp::Delete {
            path: path.to_owned(),
        }
    }

    fn applied(stats: &[Option<Stat>]) -> Outcome {
        Outcome::Applied(stats.to_vec())
    }

    fn cache(events: Vec<(u64, Change)>, view: Option<Vec<Node>>) -> CacheRun {
        CacheRun {
            name: "1-0#1".to_owned(),
            started_ns: 0,
            events: events
                .into_iter()
                .map(|(at, change)| Event {
                    at_ns: at * MS,
                    change,
                })
                .collect(),
            view: view.map(|nodes| (100 * MS, View::Nodes(nodes))),
        }
    }

    /// /a created (zxid 2), set (3), deleted, created again (5, by a write with no answer), set again (6, by a
    /// `multi` with no answer).
    fn writes() -> Vec<Write> {
        vec![
            write(1, 1, vec![create("/a", "1")], applied(&[Some(stat(2, 2, 0))])),
            write(2, 2, vec![set("/a", "2")], applied(&[Some(stat(2, 3, 1))])),
            write(3, 3, vec![delete("/a")], applied(&[None])),
            write(4, 4, vec![create("/a", "4")], Outcome::Unknown),
            write(5, 5, vec![set("/a", "5"), create("/b", "5")], Outcome::Unknown),
            write(6, 6, vec![set("/a", "6")], Outcome::Refused),
            write(
                7,
                7,
                vec![create("/c", "7"), set("/b", "7")],
                applied(&[None, Some(stat(8, 9, 1))]),
            ),
        ]
    }

    fn a1() -> Node {
        node("/a", "1", stat(2, 2, 0))
    }
    fn a2() -> Node {
        node("/a", "2", stat(2, 3, 1))
    }
    fn a4() -> Node {
        node("/a", "4", stat(5, 5, 0))
    }
    fn a5() -> Node {
        node("/a", "5", stat(5, 6, 1))
    }

    /// A correct stream: every write seen (one change collapsed into the delete), ending as the server.
    fn good() -> Vec<(u64, Change)> {
        vec![
            (10, Change::Created(a1())),
            (11, Change::Initialized),
            (12, Change::Changed { old: a1(), new: a2() }),
            (13, Change::Deleted(a2())),
            (14, Change::Created(a4())),
            (15, Change::Changed { old: a4(), new: a5() }),
        ]
    }

    fn check(events: Vec<(u64, Change)>, view: Vec<Node>, server: &[Node]) -> Vec<Violation> {
        let history = History {
            writes: writes(),
            caches: vec![cache(events, Some(view))],
        };
        check_cache(&history, Some(server))
    }

    fn caught(v: &[Violation], what: &str) {
        assert!(v.iter().any(|v| v.contains(what)), "{what}: {v:?}");
    }

    #[test]
    fn a_cache_that_follows_every_write_passes() {
        assert_eq!(check(good(), vec![a5()], &[a5()]), Vec::<String>::new());
        // Two quick writes read as one: the create, then straight to the second set's state.
        let collapsed = vec![
            (10, Change::Created(a4())),
            (11, Change::Changed { old: a4(), new: a5() }),
        ];
        assert_eq!(check(collapsed, vec![a5()], &[a5()]), Vec::<String>::new());
        // A delete and a create read as one change (a later incarnation).
        let recreated = vec![
            (10, Change::Created(a2())),
            (14, Change::Changed { old: a2(), new: a4() }),
        ];
        assert_eq!(check(recreated, vec![a4()], &[a4()]), Vec::<String>::new());
    }

    #[test]
    fn a_cache_that_missed_the_last_changes_is_caught() {
        // What a cache that neither re-arms its watch nor reads again after a reconnection ends with.
        let missed = good()[..4].to_vec();
        let v = check(missed, vec![], &[a5()]);
        assert_eq!(v.len(), 1, "{v:?}");
        caught(
            &v,
            "the final view differs from the server's tree: 1 path(s): cache nothing, server /a = \"5\"",
        );
        // Its view, not only its events: a view that lost a node its events reported.
        let v = check(good(), vec![], &[a5()]);
        caught(&v, "its events do not add up to its final view");
        caught(&v, "the final view differs");
        // No view at all, or no server tree.
        let history = History {
            writes: writes(),
            caches: vec![cache(good(), None)],
        };
        caught(&check_cache(&history, None), "no cache recorded a final view");
        caught(&check_cache(&history, None), "the server's tree was not read");
    }

    #[test]
    fn events_out_of_zxid_order_are_caught() {
        // A change back to an older state (a stale read applied after a newer one).
        let mut back = good();
        back.push((16, Change::Changed { old: a5(), new: a4() }));
        caught(&check(back, vec![a4()], &[a4()]), "not a later state");
        // Created again after its deletion, with the deleted node's czxid.
        let mut again = good()[..4].to_vec();
        again.push((14, Change::Created(a2())));
        caught(&check(again, vec![a2()], &[a2()]), "not a later node");
        // Replayed after a reset older than what was reported before it.
        let reset = vec![
            (10, Change::Created(a2())),
            (11, Change::Reset),
            (12, Change::Created(a1())),
        ];
        caught(
            &check(reset, vec![a1()], &[a1()]),
            "older than the state it reported before",
        );
    }

    #[test]
    fn events_that_do_not_add_up_are_caught() {
        let twice = vec![(10, Change::Created(a1())), (11, Change::Created(a2()))];
        caught(&check(twice, vec![a2()], &[a2()]), "created while it held");
        let from_nothing = vec![(12, Change::Changed { old: a1(), new: a2() })];
        caught(
            &check(from_nothing, vec![a2()], &[a2()]),
            "not what it held (nothing)",
        );
        let not_held = vec![(10, Change::Created(a1())), (13, Change::Deleted(a2()))];
        caught(
            &check(not_held, vec![], &[]),
            "deleted, which is not what it held",
        );
        let nothing_changed = vec![
            (10, Change::Created(a1())),
            (11, Change::Changed { old: a1(), new: a1() }),
        ];
        caught(&check(nothing_changed, vec![a1()], &[a1()]), "not a later state");
    }

    #[test]
    fn states_that_never_existed_are_caught() {
        let expect = |node: Node, what: &str| {
            caught(
                &check(
                    vec![(20, Change::Created(node.clone()))],
                    vec![node.clone()],
                    &[node],
                ),
                what,
            )
        };
        // Data never written; written by a refused write; written to another path.
        expect(node("/a", "9", stat(2, 2, 0)), "no write to /a carried");
        expect(node("/a", "6", stat(2, 7, 2)), "no write to /a carried");
        expect(node("/c", "1", stat(2, 2, 0)), "no write to /c carried");
        // An acknowledged write's data with another version or mzxid than the write made.
        expect(
            node("/a", "2", stat(2, 4, 2)),
            "made czxid 0x2, mzxid 0x3, version 1",
        );
        // A write with no answer: a create's data must be at version 0, a set's at 1 or more.
        expect(node("/a", "4", stat(5, 6, 1)), "but a create carried it");
        expect(node("/a", "5", stat(5, 5, 0)), "but a set carried it");
        // A create in an acknowledged `multi` with no stat of its own: at the zxid of the multi's other op.
        expect(
            node("/c", "7", stat(8, 8, 0)),
            "the multi that created it (0-0 #7) had zxid 0x9",
        );
        assert_eq!(
            check(
                vec![(20, Change::Created(node("/c", "7", stat(9, 9, 0))))],
                vec![node("/c", "7", stat(9, 9, 0))],
                &[node("/c", "7", stat(9, 9, 0))]
            ),
            Vec::<String>::new()
        );
        // Reported before its write was sent.
        caught(
            &check(vec![(4, Change::Created(a5()))], vec![a5()], &[a5()]),
            "before the write that carried it",
        );
        // Deleted with no delete sent before (or at all).
        let early = vec![(2, Change::Created(a1())), (2, Change::Deleted(a1()))];
        caught(&check(early, vec![], &[]), "no delete of it had been sent");
        let b = node("/b", "5", stat(5, 5, 0));
        let never = vec![(10, Change::Created(b.clone())), (11, Change::Deleted(b))];
        caught(&check(never, vec![], &[]), "reported /b deleted, but no delete");
    }

    #[test]
    fn a_cache_stuck_on_its_first_read_is_caught() {
        let mut stuck = cache(vec![], None);
        stuck.view = Some((FIRST_READ_NS + 1, View::Uninitialized));
        let history = History {
            writes: writes(),
            caches: vec![stuck.clone(), cache(good(), Some(vec![a5()]))],
        };
        caught(&check_cache(&history, Some(&[a5()])), "still on its first read");
        stuck.view = Some((FIRST_READ_NS - 1, View::Uninitialized));
        let history = History {
            writes: writes(),
            caches: vec![stuck, cache(good(), Some(vec![a5()]))],
        };
        assert_eq!(check_cache(&history, Some(&[a5()])), Vec::<String>::new());
    }
}
