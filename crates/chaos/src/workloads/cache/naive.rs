//! The negative control's cache (`--no-fencing`): a tree cache as one writes it on first try with
//! `zookeeper-client` — one persistent recursive watch, a first read of the tree, then a read of what each event
//! names — that never reads the tree again. After a reconnection it does nothing (`zookeeper-client` 0.11.2 does
//! not re-register persistent watches, so it hears of no change after its first disconnection); when its session
//! ends it follows the process's next one by adding its watch there, keeping what it held (so it misses what
//! changed while it had no session). The checker must find its final view wrong. It records its events in the same
//! history as `zklock::Cache`'s, as one cache across the sessions it follows.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use zookeeper_client::{AddWatchMode, Client, EventType, Stat};

use super::history::{node_text, Node, Recorder};
use crate::clock::now_ns;

/// The nodes held, by path.
type Nodes = BTreeMap<String, (Vec<u8>, Stat)>;

/// A running naive cache (its task stops when it is dropped).
pub struct NaiveCache {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// What the cache and its task share.
struct Shared {
    root: String,
    k: u64,
    recorder: Arc<Recorder>,
    nodes: Mutex<Nodes>,
    /// Its one full read is done.
    initialized: AtomicBool,
    /// The session it followed ended (or its watch could not be added).
    ended: AtomicBool,
}

impl Drop for NaiveCache {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NaiveCache {
    /// Starts following `root` on `client`'s session, as cache `k` of `recorder`'s history.
    pub fn start(client: Client, root: String, k: u64, recorder: Arc<Recorder>) -> NaiveCache {
        let shared = Arc::new(Shared {
            root,
            k,
            recorder,
            nodes: Mutex::default(),
            initialized: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        });
        let task = tokio::spawn(run(Arc::clone(&shared), client));
        NaiveCache { shared, task }
    }

    /// Follows `client`'s session (the process's next one) once the last has ended: adds the watch there and reads
    /// nothing again, unless its first read was never done.
    pub fn follow(&mut self, client: Client) {
        self.task.abort();
        self.shared.ended.store(false, Ordering::SeqCst);
        self.task = tokio::spawn(run(Arc::clone(&self.shared), client));
    }

    pub fn holds(&self, path: &str) -> bool {
        self.shared.nodes().contains_key(path)
    }

    /// Every node held (`None` before the first read is done).
    pub fn view(&self) -> Option<Vec<Node>> {
        self.shared.initialized.load(Ordering::SeqCst).then(|| {
            self.shared
                .nodes()
                .iter()
                .map(|(path, (data, stat))| Node {
                    path: path.clone(),
                    data: data.clone(),
                    stat: *stat,
                })
                .collect()
        })
    }

    /// Whether the session it followed ended.
    pub fn ended(&self) -> bool {
        self.shared.ended.load(Ordering::SeqCst)
    }
}

/// Follows one session, then says it ended.
async fn run(shared: Arc<Shared>, client: Client) {
    shared.follow(&client).await;
    shared
        .recorder
        .line(&format!("ev {} {} ended", shared.k, now_ns()));
    shared.ended.store(true, Ordering::SeqCst);
}

impl Shared {
    fn nodes(&self) -> std::sync::MutexGuard<'_, Nodes> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watch, read the tree (the first time only), then read what each event names until the session ends. A
    /// disconnection is ignored: that is the fault this cache stands for.
    async fn follow(&self, client: &Client) {
        let Ok(mut watcher) = client.watch(&self.root, AddWatchMode::PersistentRecursive).await else {
            return;
        };
        if !self.initialized.load(Ordering::SeqCst) {
            let mut todo = vec![self.root.clone()];
            while let Some(path) = todo.pop() {
                let Some(Some((_, stat))) = self.read(client, &path).await else {
                    continue;
                };
                if stat.num_children > 0 {
                    match client.list_children(&path).await {
                        Ok(names) => todo.extend(names.iter().map(|name| zklock::child_path(&path, name))),
                        Err(_) => return, // not read: the next session's cache reads it all
                    }
                }
            }
            self.initialized.store(true, Ordering::SeqCst);
            self.recorder
                .line(&format!("ev {} {} initialized", self.k, now_ns()));
        }
        loop {
            let event = watcher.changed().await;
            match event.event_type {
                EventType::Session if event.session_state.is_terminated() => return,
                EventType::NodeCreated | EventType::NodeDeleted => {
                    let parent = match event.path.rsplit_once('/') {
                        Some(("", _)) | None => "/",
                        Some((parent, _)) => parent,
                    };
                    if event.path != self.root {
                        self.read(client, parent).await;
                    }
                    self.read(client, &event.path).await;
                }
                EventType::NodeDataChanged => {
                    self.read(client, &event.path).await;
                }
                _ => {}
            }
        }
    }

    /// Reads `path` and applies what it found, recording the event it makes; `None` when the read failed (a read
    /// lost to a disconnection is not made again).
    async fn read(&self, client: &Client, path: &str) -> Option<Option<(Vec<u8>, Stat)>> {
        let read = match client.get_data(path).await {
            Ok(found) => Some(found),
            Err(zookeeper_client::Error::NoNode) => None,
            Err(_) => return None,
        };
        self.apply(path, read.clone());
        Some(read)
    }

    /// What `state.rs` of `zklock::Cache` does: created, changed (data or stat differ), deleted with every
    /// descendant held.
    fn apply(&self, path: &str, read: Option<(Vec<u8>, Stat)>) {
        let mut nodes = self.nodes();
        let (k, at) = (self.k, now_ns());
        match read {
            None => {
                let prefix = format!("{path}/");
                let mut gone: Vec<String> =
                    nodes.keys().filter(|p| p.starts_with(&prefix)).cloned().collect();
                gone.reverse();
                if nodes.contains_key(path) {
                    gone.push(path.to_owned());
                }
                for p in gone {
                    if let Some((data, stat)) = nodes.remove(&p) {
                        self.recorder
                            .line(&format!("ev {k} {at} deleted {}", node_text(&p, &data, &stat)));
                    }
                }
            }
            Some((data, stat)) => match nodes.get_mut(path) {
                Some(held) if held.1 == stat && held.0 == data => {}
                Some(held) => {
                    let old = node_text(path, &held.0, &held.1);
                    *held = (data, stat);
                    let new = node_text(path, &held.0, &held.1);
                    self.recorder.line(&format!("ev {k} {at} changed {old} {new}"));
                }
                None => {
                    self.recorder
                        .line(&format!("ev {k} {at} created {}", node_text(path, &data, &stat)));
                    nodes.insert(path.to_owned(), (data, stat));
                }
            },
        }
    }
}
