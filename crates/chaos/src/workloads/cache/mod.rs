//! The `cache` workload: every contender writes to a small tree — creates, sets and deletes, alone or in a
//! `multi` — while it keeps a [`zklock::Cache::tree`] of it on a [reconnecting](zklock::Session::reconnecting)
//! session of its own, and records every write it sends (with the data it carries, a write id unique across the
//! campaign, and the stat the server returned) and every event its cache hands out (`history.rs`). The writers stop
//! 5 s before the end (faults stopped well before: the last session timeout + 8 s of the campaign are fault-free);
//! 1.5 s before the end each cache records its content. Once every contender ended, the campaign reads the tree
//! after `sync` ([`record_server_tree`]), and the checker (`checker/cache.rs`) holds each cache's events and final
//! view to what was written and what the server holds.
//!
//! The tree: `<path>` (made by the campaign, [`prepare`]) and under it `a`, `b`, `c`, `d`, `d/x`, `d/y`, written
//! until the writers stop, and `t0`…`t7`, written until their retirement: `t<j>` is last written `j` seconds before
//! the faults stop (the campaign keeps its last session timeout + 8 s fault-free). Later writes would hide a change
//! a cache missed while it was disconnected; a node retired during the faults keeps the last state written, and a
//! cache that missed it ends with a wrong view. All persistent. A write chooses from the cache's view (a node it
//! holds is set or deleted, one it does not is created; one choice in ten is the other way, which the server
//! refuses), so most writes apply; a third are `multi`s of 2–3 operations.
//!
//! Beside each tree cache, on its session, the process keeps a children cache and a node cache of the same path
//! (`Follower::Tree::companions`): one watch mode per path and session on ZooKeeper before 3.9, so their watches
//! must not take the tree cache's place.
//!
//! `--no-fencing` (`args.naive`), the negative control: the process keeps the naive cache of `naive.rs` instead,
//! on its writer's sessions, which never reads the tree again after its first read: it does nothing after a
//! reconnection, and follows a new session with its watch only.

pub mod history;
mod naive;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rand::seq::SliceRandom;
use rand::Rng;
use zklock::{CacheEvent, Error};
use zookeeper_client::{Acls, Client, CreateMode, MultiWriteError, MultiWriteResult, Stat};

use self::history::{node_text, ops_text, results_text, History, Node, Recorder, WriteOp};
use super::{Contender, Turn, Workload};
use crate::checker::{self, Violation};
use crate::clock::now_ns;
use crate::history::{Action, Kind, Op};
use crate::worker_args::WorkerArgs;

/// The nodes under the tree's root that writers create, set and delete: until the writers stop…
const PATHS: &[&str] = &["a", "b", "c", "d", "d/x", "d/y"];
/// …and until their retirement, `t<j>` `j` seconds before the faults stop.
const RETIRING: &[&str] = &["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"];
/// What the campaign keeps fault-free at its end beyond the session timeout (`campaign/setup.rs`, `quiet`).
const QUIET_BEYOND_SESSION_NS: u64 = 8_000_000_000;
/// The writers stop this long before the end…
const FINAL_NS: u64 = 5_000_000_000;
/// …and each cache records its content this long before the end.
const REPORT_NS: u64 = 1_500_000_000;

/// One contender process of the `cache` workload.
#[derive(Default)]
pub struct CacheWorkload {
    recorder: Option<Arc<Recorder>>,
    follower: Option<Follower>,
    /// Caches started so far.
    caches: u64,
    /// Writes sent so far.
    writes: u64,
}

/// The cache a process keeps: `zklock::Cache`, or the negative control's.
enum Follower {
    Tree {
        k: u64,
        session: zklock::Session,
        cache: zklock::Cache,
        /// A children cache and a node cache of the same path on the same session, started after the tree cache:
        /// on ZooKeeper before 3.9 (and the embedded server) a session has one watch mode per path, and a cache
        /// whose watch took the tree cache's place would leave it deaf below the path (the tree cache's history
        /// shows it). Not recorded: they are there to be beside it.
        companions: [zklock::Cache; 2],
        initialized: Arc<AtomicBool>,
        recorder: tokio::task::JoinHandle<()>,
    },
    Naive {
        k: u64,
        cache: naive::NaiveCache,
    },
}

impl Follower {
    fn k(&self) -> u64 {
        match self {
            Follower::Tree { k, .. } | Follower::Naive { k, .. } => *k,
        }
    }

    fn holds(&self, path: &str) -> bool {
        match self {
            Follower::Tree { cache, .. } => cache.get(path).is_some(),
            Follower::Naive { cache, .. } => cache.holds(path),
        }
    }

    /// Every node held (`None` before the first read is done).
    fn view(&self) -> Option<Vec<Node>> {
        match self {
            Follower::Tree {
                cache, initialized, ..
            } => initialized.load(Ordering::SeqCst).then(|| {
                cache
                    .nodes()
                    .into_iter()
                    .map(|n| Node {
                        path: n.path,
                        data: n.data.to_vec(),
                        stat: n.stat,
                    })
                    .collect()
            }),
            Follower::Naive { cache, .. } => cache.view(),
        }
    }

    /// Whether it stopped and a new one is needed (a naive cache follows the next session itself).
    fn ended(&self) -> bool {
        match self {
            Follower::Tree { cache, .. } => cache.ended().is_some(),
            Follower::Naive { .. } => false,
        }
    }

    /// Stops it; a tree cache's session is closed.
    async fn close(self, timeout: Duration) {
        if let Follower::Tree {
            session,
            cache,
            companions,
            recorder,
            ..
        } = self
        {
            drop((cache, companions));
            let _ = tokio::time::timeout(Duration::from_secs(1), recorder).await;
            let _ = tokio::time::timeout(timeout, session.close()).await;
        }
    }
}

impl Workload for CacheWorkload {
    const RECORDS: bool = false;

    fn open(&mut self, args: &WorkerArgs) -> Result<()> {
        let file = args
            .history
            .as_deref()
            .context("the cache workload needs --history")?;
        self.recorder = Some(Arc::new(Recorder::open(file)?));
        Ok(())
    }

    /// A process started after the reports has nothing to add.
    fn until(&self, args: &WorkerArgs) -> u64 {
        args.until_ns - REPORT_NS
    }

    /// One write, once the cache runs; after the writers' end, a pause.
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let stop_ns = cx.args.until_ns - FINAL_NS;
        if now_ns() >= stop_ns {
            let report_ns = self.until(cx.args);
            tokio::time::sleep(
                Duration::from_nanos(report_ns.saturating_sub(now_ns())).min(Duration::from_millis(100)),
            )
            .await;
            return Ok(Turn::Idle);
        }
        self.follow(cx, zk).await?;
        let pause = Duration::from_millis(cx.rng.gen_range(5..40));
        let turn = self.write(cx, zk).await;
        tokio::time::sleep(pause).await;
        turn
    }

    /// Records the cache's content, waits for the end, closes the cache.
    async fn finish(&mut self, cx: &mut Contender<'_>) {
        let recorder = Arc::clone(self.recorder.as_ref().expect("opened before the first operation"));
        if let Some(follower) = &self.follower {
            let (k, at) = (follower.k(), now_ns());
            match follower.view() {
                Some(nodes) => {
                    let mut text = format!("view {k} {at} {}\n", nodes.len());
                    for n in &nodes {
                        text += &format!("node {k} {}\n", node_text(&n.path, &n.data, &n.stat));
                    }
                    recorder.write(&text);
                }
                None => recorder.line(&format!("view {k} {at} uninitialized")),
            }
        }
        let rest = Duration::from_nanos(cx.args.until_ns.saturating_sub(now_ns()));
        tokio::time::sleep(rest).await;
        if let Some(follower) = self.follower.take() {
            follower.close(cx.timeout).await;
        }
    }
}

impl CacheWorkload {
    fn recorder(&self) -> Arc<Recorder> {
        Arc::clone(self.recorder.as_ref().expect("opened before the first operation"))
    }

    /// Starts the process's cache if it has none running; a naive cache whose session ended follows `zk`'s.
    async fn follow(&mut self, cx: &Contender<'_>, zk: &Client) -> zklock::Result<()> {
        if let Some(Follower::Naive { cache, .. }) = &mut self.follower {
            if cache.ended() {
                cache.follow(zk.clone());
            }
            return Ok(());
        }
        if self.follower.as_ref().is_some_and(|f| !f.ended()) {
            return Ok(());
        }
        let (args, recorder) = (cx.args, self.recorder());
        let k = self.caches + 1;
        let follower = if args.naive {
            recorder.line(&format!("cache {k} {} naive", now_ns()));
            Follower::Naive {
                k,
                cache: naive::NaiveCache::start(zk.clone(), args.path.clone(), k, recorder),
            }
        } else {
            let connector = Client::connector().with_session_timeout(cx.timeout);
            let session = tokio::time::timeout(
                cx.timeout * 2,
                zklock::Session::reconnecting(connector, &args.connect),
            )
            .await
            .map_err(|_| Error::Timeout)??;
            let start = |cache: zklock::CacheBuilder| {
                if args.one_shot {
                    cache.one_shot_watches()
                } else {
                    cache
                }
                .start()
            };
            let cache = start(zklock::Cache::tree(&session, &args.path)?);
            let companions = [
                start(zklock::Cache::children(&session, &args.path)?),
                start(zklock::Cache::node(&session, &args.path)?),
            ];
            let initialized = Arc::new(AtomicBool::new(false));
            recorder.line(&format!("cache {k} {} tree", now_ns()));
            let events = cache.events();
            let task = tokio::spawn(record_events(events, k, recorder, Arc::clone(&initialized)));
            Follower::Tree {
                k,
                session,
                cache,
                companions,
                initialized,
                recorder: task,
            }
        };
        self.caches = k;
        if let Some(old) = self.follower.replace(follower) {
            old.close(cx.timeout).await;
        }
        Ok(())
    }

    /// One write, recorded before it is sent and when its outcome is known.
    async fn write(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        self.writes += 1;
        let n = self.writes;
        let args = cx.args;
        let id =
            ((args.client as i64 + 1) << 40) | ((args.launch as i64 & 0xffff) << 24) | (n as i64 & 0xff_ffff);
        let ops = self.choose(cx, id.to_string().as_bytes());
        let recorder = self.recorder();
        recorder.line(&format!("call {n} {} {}", now_ns(), ops_text(&ops)));
        let outcome = match tokio::time::timeout(cx.timeout, perform(zk, &ops)).await {
            Ok(outcome) => outcome,
            Err(_) => Written::Unknown("timed out".to_owned()),
        };
        let at = now_ns();
        match outcome {
            Written::Applied(stats) => {
                recorder.line(&format!("ok {n} {at} {}", results_text(&ops, &stats)));
                Ok(Turn::Done)
            }
            Written::Refused(why) => {
                recorder.line(&format!("refused {n} {at} {why}"));
                Ok(Turn::Done)
            }
            Written::Unknown(why) => {
                recorder.line(&format!("unknown {n} {at} {why}"));
                Ok(Turn::Idle)
            }
        }
    }

    /// What to write: one operation (two turns in three) or a `multi` of 2–3 on distinct paths, each chosen from
    /// what the cache holds (a held node is set or deleted, another created; one choice in ten the other way).
    fn choose(&self, cx: &mut Contender<'_>, data: &[u8]) -> Vec<WriteOp> {
        let rng = &mut cx.rng;
        let count = if rng.gen_range(0..3) == 0 {
            rng.gen_range(2..=3)
        } else {
            1
        };
        let faults_end = cx.args.until_ns - cx.timeout.as_nanos() as u64 - QUIET_BEYOND_SESSION_NS;
        let now = now_ns();
        let live: Vec<&str> = PATHS
            .iter()
            .copied()
            .chain(
                RETIRING
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| now + j as u64 * 1_000_000_000 < faults_end)
                    .map(|(_, name)| *name),
            )
            .collect();
        let mut chosen: Vec<&str> = live.choose_multiple(rng, count).copied().collect();
        chosen.sort_unstable();
        let mut ops: Vec<WriteOp> = chosen
            .into_iter()
            .map(|name| {
                let path = format!("{}/{name}", cx.args.path);
                let held = self.follower.as_ref().is_some_and(|f| f.holds(&path));
                let held = held != (rng.gen_range(0..10) == 0);
                if !held {
                    WriteOp::Create {
                        path,
                        data: data.to_vec(),
                    }
                } else if rng.gen_range(0..10) < 7 {
                    WriteOp::Set {
                        path,
                        data: data.to_vec(),
                    }
                } else {
                    WriteOp::Delete { path }
                }
            })
            .collect();
        // Deletes first, deepest first; then creates and sets, parents first.
        ops.sort_by_key(|op| match op {
            WriteOp::Delete { path } => (0, std::cmp::Reverse(path.clone()), String::new()),
            other => (1, std::cmp::Reverse(String::new()), other.path().to_owned()),
        });
        ops
    }
}

/// Records each event `events` hands out (`initialized` set at the first `Initialized`), then its end.
async fn record_events(
    mut events: zklock::Events,
    k: u64,
    recorder: Arc<Recorder>,
    initialized: Arc<AtomicBool>,
) {
    let text = |n: &zklock::CachedNode| node_text(&n.path, &n.data, &n.stat);
    while let Some(event) = events.next().await {
        let at = now_ns();
        let what = match &event {
            CacheEvent::Created(node) => format!("created {}", text(node)),
            CacheEvent::Changed { old, new } => format!("changed {} {}", text(old), text(new)),
            CacheEvent::Deleted(node) => format!("deleted {}", text(node)),
            CacheEvent::Initialized => {
                initialized.store(true, Ordering::SeqCst);
                "initialized".to_owned()
            }
            CacheEvent::Reset => "reset".to_owned(),
            other => format!("unknown-event {other:?}").replace('\n', " "),
        };
        recorder.line(&format!("ev {k} {at} {what}"));
    }
    recorder.line(&format!("ev {k} {} ended", now_ns()));
}

/// What became of a write.
enum Written {
    /// Applied: per op, the stat it made (`None` for a delete, or a create's stat the server did not send).
    Applied(Vec<Option<Stat>>),
    /// Refused by the server: nothing applied.
    Refused(String),
    /// No answer: applied or not.
    Unknown(String),
}

/// The node options of every node the workload creates.
fn persistent() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// Whether `err` says the server refused the request (nothing applied), not that its outcome is unknown.
fn refusal(err: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as E;
    matches!(err, E::NodeExists | E::NoNode | E::NotEmpty | E::BadVersion)
}

/// Sends `ops`: one request, or a `multi` of them.
async fn perform(zk: &Client, ops: &[WriteOp]) -> Written {
    let single = |result: std::result::Result<Option<Stat>, zookeeper_client::Error>| match result {
        Ok(stat) => Written::Applied(vec![stat]),
        Err(err) if refusal(&err) => Written::Refused(err.to_string().replace(' ', "_")),
        Err(err) => Written::Unknown(err.to_string()),
    };
    if let [op] = ops {
        return match op {
            WriteOp::Create { path, data } => {
                single(zk.create(path, data, &persistent()).await.map(|(s, _)| Some(s)))
            }
            WriteOp::Set { path, data } => single(zk.set_data(path, data, None).await.map(Some)),
            WriteOp::Delete { path } => single(zk.delete(path, None).await.map(|()| None)),
        };
    }
    let mut multi = zk.new_multi_writer();
    for op in ops {
        let added = match op {
            WriteOp::Create { path, data } => multi.add_create(path, data, &persistent()),
            WriteOp::Set { path, data } => multi.add_set_data(path, data, None),
            WriteOp::Delete { path } => multi.add_delete(path, None),
        };
        if let Err(err) = added {
            return Written::Refused(format!("not sent: {err}").replace(' ', "_"));
        }
    }
    match multi.commit().await {
        Ok(results) => Written::Applied(
            results
                .into_iter()
                .map(|r| match r {
                    MultiWriteResult::Create { stat, .. } | MultiWriteResult::SetData { stat } => {
                        (!stat.is_invalid()).then_some(stat)
                    }
                    _ => None,
                })
                .collect(),
        ),
        Err(MultiWriteError::OperationFailed { index, source }) => {
            Written::Refused(format!("op {index}: {source}").replace(' ', "_"))
        }
        Err(MultiWriteError::RequestFailed { source }) => Written::Unknown(source.to_string()),
    }
}

/// Creates the tree's root (and its parents) before the contenders start, and records it as a write in
/// `cache-prepare.history`.
pub async fn prepare(connect: &str, path: &str, dir: &Path) -> Result<()> {
    let client = session(connect)
        .await
        .context("connecting to create the cache's tree")?;
    let mut at = String::new();
    let parents: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for part in &parents[..parents.len().saturating_sub(1)] {
        at = format!("{at}/{part}");
        match client.create(&at, b"", &persistent()).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(err) => return Err(err).with_context(|| format!("creating {at}")),
        }
    }
    let ops = [WriteOp::Create {
        path: path.to_owned(),
        data: b"root".to_vec(),
    }];
    let recorder = Recorder::open(&dir.join("cache-prepare.history").display().to_string())?;
    recorder.line(&format!("call 0 {} {}", now_ns(), ops_text(&ops)));
    let (stat, _) = client
        .create(path, b"root", &persistent())
        .await
        .with_context(|| format!("creating {path}"))?;
    recorder.line(&format!(
        "ok 0 {} {}",
        now_ns(),
        results_text(&ops, &[Some(stat)])
    ));
    Ok(())
}

async fn session(connect: &str) -> std::result::Result<Client, zookeeper_client::Error> {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect)
        .await
}

/// Reads the tree under `path` after a `sync` (once every contender ended) into `cache-server.tree`, for the
/// checker.
pub async fn record_server_tree(connect: &str, path: &str, dir: &Path) -> Result<()> {
    let client = session(connect).await.context("connecting to read the tree")?;
    client.sync(path).await.context("sync")?;
    let mut nodes = Vec::new();
    let mut todo = vec![path.to_owned()];
    while let Some(at) = todo.pop() {
        let (data, stat) = match client.get_data(&at).await {
            Ok(found) => found,
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(err) => return Err(err).with_context(|| format!("reading {at}")),
        };
        if stat.num_children > 0 {
            match client.list_children(&at).await {
                Ok(names) => todo.extend(names.iter().map(|name| zklock::child_path(&at, name))),
                Err(zookeeper_client::Error::NoNode) => {}
                Err(err) => return Err(err).with_context(|| format!("listing {at}")),
            }
        }
        nodes.push(Node { path: at, data, stat });
    }
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    std::fs::write(dir.join("cache-server.tree"), history::tree_text(&nodes))
        .context("writing cache-server.tree")?;
    Ok(())
}

/// How many writes were applied so far, in the histories of `dir` (for the campaign's progress lines).
pub fn answered(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("cache-") && n.ends_with(".history"))
        })
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|text| text.lines().filter(|l| l.starts_with("ok ")).count())
        .sum()
}

/// The campaign's judgement on the histories of `dir`: a line of figures, the violations, and the applied writes
/// as register records (their completion times, for the operation count and the recovery figures).
pub fn judge(dir: &Path) -> Result<(String, Vec<Violation>, Vec<Op>)> {
    let (history, server) = history::load(dir)?;
    let violations = checker::check_cache(&history, server.as_deref());
    Ok((
        summary(&history, server.as_deref()),
        violations,
        applied_ops(dir)?,
    ))
}

/// `cache: <writes> writes (<applied> applied, <refused> refused, <unknown> unknown), <events> events in <caches>
/// caches, <views> final views of <nodes> nodes`.
fn summary(history: &History, server: Option<&[Node]>) -> String {
    use self::history::{Outcome, View};
    let count = |f: fn(&Outcome) -> bool| history.writes.iter().filter(|w| f(&w.outcome)).count();
    let applied = count(|o| matches!(o, Outcome::Applied(_)));
    let refused = count(|o| *o == Outcome::Refused);
    let unknown = count(|o| *o == Outcome::Unknown);
    let events: usize = history.caches.iter().map(|c| c.events.len()).sum();
    let views = history
        .caches
        .iter()
        .filter(|c| matches!(c.view, Some((_, View::Nodes(_)))))
        .count();
    format!(
        "cache: {} writes ({applied} applied, {refused} refused, {unknown} unknown), {events} events in {} caches, \
         {views} final views compared with the server's {} nodes",
        history.writes.len(),
        history.caches.len(),
        server.map_or(0, <[Node]>::len)
    )
}

/// The applied writes of every process (not the campaign's own), as register records in time order.
fn applied_ops(dir: &Path) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(slot) = name
            .strip_prefix("cache-")
            .and_then(|n| n.strip_suffix(".history"))
            .and_then(|p| p.split_once('-'))
            .and_then(|(slot, _)| slot.parse::<u32>().ok())
        else {
            continue;
        };
        for line in std::fs::read_to_string(&path)?.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let ["ok", _, at, ..] = f[..] {
                if let Ok(at_ns) = at.parse() {
                    ops.push(Op {
                        seq: 0,
                        at_ns,
                        client: slot,
                        token: 0,
                        kind: Kind::Shared,
                        action: Action::Write,
                        value: 0,
                        accepted: true,
                        key: 0,
                    });
                }
            }
        }
    }
    ops.sort_by_key(|op| op.at_ns);
    for (i, op) in ops.iter_mut().enumerate() {
        op.seq = i as u64;
        op.token = i as i64; // each write its own "section": recovery counts the first one after a heal
    }
    Ok(ops)
}
