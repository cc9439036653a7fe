//! The `cache` workload's history files: what each contender process wrote and what each of its caches reported,
//! one line per fact, written (one `write` each) as it happens, so that a killed process leaves what it did.
//!
//! A process's file (`cache-<slot>-<launch>.history`):
//! * `call <n> <ns> <op> [; <op>]…` before write `n` is sent, `<op>` being `create <path> <data>`,
//!   `set <path> <data>` or `delete <path>` (several: one `multi`);
//! * `ok <n> <ns> <result> [; <result>]…` once it was applied, a result per op: `stat <czxid> <mzxid> <version>`
//!   (a create's or a set's), `nostat` (a create in a `multi` whose stat the server did not send) or `deleted`;
//! * `refused <n> <ns> <why>` (the server refused it: nothing applied), `unknown <n> <ns> <why>` (no answer: it
//!   may have been applied, or not);
//! * `cache <k> <ns> <kind>` when the process's `k`-th cache starts (`tree`: `zklock::Cache::tree`; `naive`: the
//!   negative control's cache, `naive.rs`);
//! * `ev <k> <ns> created <node>`, `ev <k> <ns> changed <old node> <new node>`, `ev <k> <ns> deleted <node>`,
//!   `ev <k> <ns> initialized`, `ev <k> <ns> reset`, `ev <k> <ns> ended`: each event cache `k` handed out, as it
//!   was received;
//! * `view <k> <ns> <count>` then `node <k> <node>` per node: cache `k`'s content at the end (one `write`), or
//!   `view <k> <ns> uninitialized`.
//!
//! `<node>` is `<path> <data> <czxid> <mzxid> <pzxid> <ctime> <mtime> <version> <cversion> <aversion>
//! <ephemeralOwner> <dataLength> <numChildren>`, `<data>` in hex (`-` when empty). The campaign writes the tree's
//! root it made in `cache-prepare.history` (as a write), and the server's tree read after `sync` once every
//! contender ended in `cache-server.tree` (`node 0 <node>` lines).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use zookeeper_client::Stat;

/// A node as read: path, data and stat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub path: String,
    pub data: Vec<u8>,
    pub stat: Stat,
}

/// What a cache reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Created(Node),
    Changed { old: Node, new: Node },
    Deleted(Node),
    Initialized,
    Reset,
    Ended,
}

/// One event of a cache, with when the process received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub at_ns: u64,
    pub change: Change,
}

/// A cache's content at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// Every node it held.
    Nodes(Vec<Node>),
    /// It had not finished its first read.
    Uninitialized,
}

/// One cache of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheRun {
    /// `<slot>-<launch>#<k>`.
    pub name: String,
    pub started_ns: u64,
    pub events: Vec<Event>,
    /// Its content at the end, and when it was taken (`None`: the process did not live that long).
    pub view: Option<(u64, View)>,
}

/// One operation of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    Create { path: String, data: Vec<u8> },
    Set { path: String, data: Vec<u8> },
    Delete { path: String },
}

impl WriteOp {
    pub fn path(&self) -> &str {
        match self {
            WriteOp::Create { path, .. } | WriteOp::Set { path, .. } | WriteOp::Delete { path } => path,
        }
    }
}

/// What became of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied; per op, the stat it made (`None`: a delete, or a stat the server did not send).
    Applied(Vec<Option<Stat>>),
    /// Refused by the server: nothing applied.
    Refused,
    /// No answer: applied or not.
    Unknown,
}

/// One write (a single request or a `multi`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// `<slot>-<launch>` (or `prepare`) and the write's number in it.
    pub process: String,
    pub n: u64,
    pub call_ns: u64,
    pub ops: Vec<WriteOp>,
    pub outcome: Outcome,
}

/// Everything a campaign's caches and writers recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub writes: Vec<Write>,
    pub caches: Vec<CacheRun>,
}

/// A history file, appended one line (one `write`) at a time.
pub struct Recorder {
    file: Mutex<std::fs::File>,
}

impl Recorder {
    pub fn open(path: &str) -> Result<Recorder> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {path}"))?;
        Ok(Recorder {
            file: Mutex::new(file),
        })
    }

    /// Appends `text` (one or more whole lines, each ending in a newline) with one `write`; a history that cannot
    /// be written ends the process (status 1): nothing it did after could be judged.
    pub fn write(&self, text: &str) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = file.write_all(text.as_bytes()) {
            eprintln!("zklock-chaos: writing the history: {err}");
            std::process::exit(1);
        }
    }

    /// Appends one line.
    pub fn line(&self, text: &str) {
        self.write(&format!("{text}\n"));
    }
}

/// `data` in hex, `-` when empty.
pub fn hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".to_owned();
    }
    data.iter()
        .fold(String::with_capacity(data.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text == "-" {
        return Some(Vec::new());
    }
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A node's fields in a line.
pub fn node_text(path: &str, data: &[u8], s: &Stat) -> String {
    format!(
        "{path} {} {} {} {} {} {} {} {} {} {} {} {}",
        hex(data),
        s.czxid,
        s.mzxid,
        s.pzxid,
        s.ctime,
        s.mtime,
        s.version,
        s.cversion,
        s.aversion,
        s.ephemeral_owner,
        s.data_length,
        s.num_children
    )
}

/// Fields a node takes in a line.
const NODE_FIELDS: usize = 13;

fn parse_node(f: &[&str]) -> Option<Node> {
    let [path, data, rest @ ..] = f else {
        return None;
    };
    let n: Vec<i64> = rest.iter().map(|s| s.parse().ok()).collect::<Option<_>>()?;
    let [czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, ephemeral_owner, data_length, num_children] =
        n[..]
    else {
        return None;
    };
    Some(Node {
        path: (*path).to_owned(),
        data: unhex(data)?,
        stat: Stat {
            czxid,
            mzxid,
            pzxid,
            ctime,
            mtime,
            version: version as i32,
            cversion: cversion as i32,
            aversion: aversion as i32,
            ephemeral_owner,
            data_length: data_length as i32,
            num_children: num_children as i32,
        },
    })
}

/// A write's operations in its `call` line.
pub fn ops_text(ops: &[WriteOp]) -> String {
    let each: Vec<String> = ops
        .iter()
        .map(|op| match op {
            WriteOp::Create { path, data } => format!("create {path} {}", hex(data)),
            WriteOp::Set { path, data } => format!("set {path} {}", hex(data)),
            WriteOp::Delete { path } => format!("delete {path}"),
        })
        .collect();
    each.join(" ; ")
}

/// An applied write's results in its `ok` line.
pub fn results_text(ops: &[WriteOp], stats: &[Option<Stat>]) -> String {
    let each: Vec<String> = ops
        .iter()
        .zip(stats)
        .map(|(op, stat)| match (op, stat) {
            (WriteOp::Delete { .. }, _) => "deleted".to_owned(),
            (_, Some(s)) => format!("stat {} {} {}", s.czxid, s.mzxid, s.version),
            (_, None) => "nostat".to_owned(),
        })
        .collect();
    each.join(" ; ")
}

fn parse_ops(f: &[&str]) -> Option<Vec<WriteOp>> {
    f.split(|s| *s == ";")
        .map(|op| match op {
            ["create", path, data] => Some(WriteOp::Create {
                path: (*path).to_owned(),
                data: unhex(data)?,
            }),
            ["set", path, data] => Some(WriteOp::Set {
                path: (*path).to_owned(),
                data: unhex(data)?,
            }),
            ["delete", path] => Some(WriteOp::Delete {
                path: (*path).to_owned(),
            }),
            _ => None,
        })
        .collect()
}

fn parse_results(f: &[&str]) -> Option<Vec<Option<Stat>>> {
    f.split(|s| *s == ";")
        .map(|result| match result {
            ["stat", czxid, mzxid, version] => Some(Some(result_stat(
                czxid.parse().ok()?,
                mzxid.parse().ok()?,
                version.parse().ok()?,
            ))),
            ["nostat"] | ["deleted"] => Some(None),
            _ => None,
        })
        .collect()
}

/// A stat with only what a write's result says filled in (czxid, mzxid, version): the rest is not compared.
fn result_stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
    Stat {
        czxid,
        mzxid,
        pzxid: -1,
        ctime: 0,
        mtime: 0,
        version,
        cversion: 0,
        aversion: 0,
        ephemeral_owner: 0,
        data_length: 0,
        num_children: 0,
    }
}

/// Parses one process's file (`process`: `<slot>-<launch>` or `prepare`) into `history`. A torn last line (a
/// killed process) is skipped: a call never fully written was never sent, and an answer never fully written leaves
/// its write unknown; a view whose nodes are not all there is no view.
pub fn parse_process(process: &str, text: &str, history: &mut History) {
    let mut writes: BTreeMap<u64, Write> = BTreeMap::new();
    let mut caches: BTreeMap<u64, CacheRun> = BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(n), Some(at)) = (
            f.get(1).and_then(|s| s.parse::<u64>().ok()),
            f.get(2).and_then(|s| s.parse::<u64>().ok()),
        ) else {
            continue;
        };
        let rest = &f[3.min(f.len())..];
        match f[0] {
            "call" => {
                if let Some(ops) = parse_ops(rest) {
                    writes.insert(
                        n,
                        Write {
                            process: process.to_owned(),
                            n,
                            call_ns: at,
                            ops,
                            outcome: Outcome::Unknown,
                        },
                    );
                }
            }
            "ok" => {
                if let (Some(write), Some(stats)) = (writes.get_mut(&n), parse_results(rest)) {
                    if stats.len() == write.ops.len() {
                        write.outcome = Outcome::Applied(stats);
                    }
                }
            }
            "refused" => {
                if let Some(write) = writes.get_mut(&n) {
                    write.outcome = Outcome::Refused;
                }
            }
            "cache" => {
                caches.insert(
                    n,
                    CacheRun {
                        name: format!("{process}#{n}"),
                        started_ns: at,
                        events: Vec::new(),
                        view: None,
                    },
                );
            }
            "ev" => {
                let change = match rest {
                    ["created", node @ ..] if node.len() == NODE_FIELDS => {
                        parse_node(node).map(Change::Created)
                    }
                    ["deleted", node @ ..] if node.len() == NODE_FIELDS => {
                        parse_node(node).map(Change::Deleted)
                    }
                    ["changed", nodes @ ..] if nodes.len() == 2 * NODE_FIELDS => {
                        let (old, new) = nodes.split_at(NODE_FIELDS);
                        parse_node(old)
                            .zip(parse_node(new))
                            .map(|(old, new)| Change::Changed { old, new })
                    }
                    ["initialized"] => Some(Change::Initialized),
                    ["reset"] => Some(Change::Reset),
                    ["ended", ..] => Some(Change::Ended),
                    _ => None,
                };
                if let (Some(cache), Some(change)) = (caches.get_mut(&n), change) {
                    cache.events.push(Event { at_ns: at, change });
                }
            }
            "view" => {
                let view = match rest {
                    ["uninitialized"] => Some(View::Uninitialized),
                    [count] => count.parse::<usize>().ok().and_then(|count| {
                        let mut nodes = Vec::with_capacity(count);
                        for _ in 0..count {
                            let f: Vec<&str> = lines.peek()?.split_whitespace().collect();
                            match &f[..] {
                                ["node", _, node @ ..] if node.len() == NODE_FIELDS => {
                                    nodes.push(parse_node(node)?);
                                    lines.next();
                                }
                                _ => return None,
                            }
                        }
                        Some(View::Nodes(nodes))
                    }),
                    _ => None,
                };
                if let (Some(cache), Some(view)) = (caches.get_mut(&n), view) {
                    cache.view = Some((at, view));
                }
            }
            _ => {}
        }
    }
    history.writes.extend(writes.into_values());
    history.caches.extend(caches.into_values());
}

/// The `node 0 <node>` lines of a tree (`cache-server.tree`).
pub fn tree_text(nodes: &[Node]) -> String {
    nodes
        .iter()
        .map(|n| format!("node 0 {}\n", node_text(&n.path, &n.data, &n.stat)))
        .collect()
}

/// Parses `node 0 <node>` lines.
pub fn parse_tree(text: &str) -> Vec<Node> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match &f[..] {
                ["node", _, node @ ..] if node.len() == NODE_FIELDS => parse_node(node),
                _ => None,
            }
        })
        .collect()
}

/// Every history file of a campaign's directory (`cache-*.history`), and the server's tree (`cache-server.tree`;
/// `None` when it was not read).
pub fn load(dir: &Path) -> Result<(History, Option<Vec<Node>>)> {
    let mut files: BTreeMap<(u64, u64), (String, std::path::PathBuf)> = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(process) = name
            .strip_prefix("cache-")
            .and_then(|n| n.strip_suffix(".history"))
        else {
            continue;
        };
        // `prepare` first, then by slot and launch.
        let key = match process.split_once('-') {
            Some((slot, launch)) => (
                slot.parse::<u64>().map_or(u64::MAX, |s| s + 1),
                launch.parse().unwrap_or(0),
            ),
            None => (0, 0),
        };
        files.insert(key, (process.to_owned(), path));
    }
    let mut history = History::default();
    for (process, path) in files.values() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        parse_process(process, &text, &mut history);
    }
    let server = match std::fs::read_to_string(dir.join("cache-server.tree")) {
        Ok(text) => Some(parse_tree(&text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err).context("reading cache-server.tree"),
    };
    Ok((history, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ctime: 5,
            mtime: 6,
            version,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 2,
            num_children: 0,
        }
    }

    #[test]
    fn lines_round_trip_and_torn_ones_are_skipped() {
        let a = Node {
            path: "/r/a".to_owned(),
            data: b"17".to_vec(),
            stat: stat(3, 4, 1),
        };
        let ops = vec![
            WriteOp::Create {
                path: "/r/b".to_owned(),
                data: b"18".to_vec(),
            },
            WriteOp::Delete {
                path: "/r/c".to_owned(),
            },
        ];
        let node = |n: &Node| node_text(&n.path, &n.data, &n.stat);
        let text = format!(
            "call 1 10 {}\nok 1 11 {}\ncall 2 12 set /r/a 3139\ncache 1 13 tree\nev 1 14 created {}\n\
             ev 1 15 changed {} {}\nev 1 16 initialized\nview 1 17 1\nnode 1 {}\ncall 3 18 delete /r/a\nev 1 19 del",
            ops_text(&ops),
            results_text(&ops, &[Some(stat(5, 5, 0)), None]),
            node(&a),
            node(&a),
            node(&a),
            node(&a),
        );
        let mut history = History::default();
        parse_process("0-0", &text, &mut history);
        assert_eq!(history.writes.len(), 3);
        assert_eq!(history.writes[0].ops, ops);
        let Outcome::Applied(stats) = &history.writes[0].outcome else {
            panic!("{:?}", history.writes[0])
        };
        assert_eq!(stats[0].map(|s| (s.czxid, s.mzxid, s.version)), Some((5, 5, 0)));
        assert_eq!((stats.len(), stats[1]), (2, None));
        assert_eq!(history.writes[1].outcome, Outcome::Unknown);
        let cache = &history.caches[0];
        assert_eq!(cache.name, "0-0#1");
        assert_eq!(cache.events.len(), 3, "the torn last line is skipped");
        assert_eq!(cache.events[0].change, Change::Created(a.clone()));
        assert_eq!(cache.view, Some((17, View::Nodes(vec![a.clone()]))));
        assert_eq!(parse_tree(&tree_text(std::slice::from_ref(&a))), [a]);
        // A view whose nodes are not all there is no view.
        let mut torn = History::default();
        parse_process("0-1", "cache 1 1 tree\nview 1 2 2\nnode 1 /r 2d", &mut torn);
        assert_eq!(torn.caches[0].view, None);
    }
}
