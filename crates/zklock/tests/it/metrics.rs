//! The recipes' metrics (names in the crate documentation), seen by `metrics-util`'s `DebuggingRecorder`.
//!
//! Each test installs its own recorder with `metrics::with_local_recorder` around a current-thread runtime: every
//! task of the test — the recipes' lost-signal monitors and zookeeper-client's connection tasks included — runs on
//! the thread the recorder is installed on, so tests running in parallel never see each other's figures, and no
//! global recorder is set. The servers are the shared embedded one (in its own runtime: it records nothing).

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use metrics::{KeyName, SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use zklock::{Error, LeaderElection, LostReason, Mutex, Queue, RwLock, Semaphore, Session};
use zklock_testkit::{opcode, unique_path, Proxy};

use crate::support::*;

const WAIT: &str = "zklock_acquire_wait_seconds";
const HOLD: &str = "zklock_hold_seconds";
const LOST: &str = "zklock_guards_lost_total";
const SUSPENDED: &str = "zklock_guards_suspended_total";
const RESUMED: &str = "zklock_guards_resumed_total";
const RETRIES: &str = "zklock_connection_loss_retries_total";
const LEADER: &str = "zklock_leader";
const DEPTH: &str = "zklock_queue_depth";

/// A metric's identity: kind, name and labels (sorted).
type Key = (MetricKind, String, Vec<(String, String)>);

/// What a test recorded so far. The debugging recorder drains on every snapshot, so the snapshots are added up.
#[derive(Default)]
struct Recorded {
    counters: HashMap<Key, u64>,
    histograms: HashMap<Key, Vec<f64>>,
    /// A gauge's value at each snapshot. The debugging recorder swaps a gauge to 0 when it takes a snapshot, so a
    /// gauge moved by increments is the sum of its snapshots, and one that is set is the first snapshot after it.
    gauges: HashMap<Key, Vec<f64>>,
}

impl Recorded {
    fn take(&mut self, snapshotter: &Snapshotter) -> &Self {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let (kind, key) = key.into_parts();
            let (name, labels) = key.into_parts();
            let mut labels: Vec<(String, String)> = labels
                .into_iter()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let id = (kind, name.as_str().to_owned(), labels);
            match value {
                DebugValue::Counter(n) => *self.counters.entry(id).or_default() += n,
                DebugValue::Histogram(values) => self
                    .histograms
                    .entry(id)
                    .or_default()
                    .extend(values.into_iter().map(|v| v.into_inner())),
                DebugValue::Gauge(value) => self.gauges.entry(id).or_default().push(value.into_inner()),
            }
        }
        self
    }

    fn id(kind: MetricKind, name: &str, labels: &[(&str, &str)]) -> Key {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        (kind, name.to_owned(), labels)
    }

    /// The samples of a histogram with exactly these labels.
    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        let id = Self::id(MetricKind::Histogram, name, labels);
        self.histograms.get(&id).cloned().unwrap_or_default()
    }

    /// A counter with exactly these labels (0 if never incremented).
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let id = Self::id(MetricKind::Counter, name, labels);
        self.counters.get(&id).copied().unwrap_or(0)
    }

    /// A gauge moved by increments, with exactly these labels (`None` if never moved).
    fn gauge_moved(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let id = Self::id(MetricKind::Gauge, name, labels);
        self.gauges.get(&id).map(|values| values.iter().sum())
    }

    /// A gauge that is set, with exactly these labels, as the last snapshot saw it (`None` if never set).
    fn gauge_set(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let id = Self::id(MetricKind::Gauge, name, labels);
        self.gauges.get(&id).and_then(|values| values.last().copied())
    }

    /// Every counter of this name, whatever its labels.
    fn counter_total(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .filter(|((_, n, _), _)| n == name)
            .map(|(_, v)| v)
            .sum()
    }
}

/// Runs `test` on a current-thread runtime with a recorder of its own; `test` gets the recorder's snapshotter.
fn with_recorder<F: Future<Output = ()>>(test: impl FnOnce(Snapshotter) -> F) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    metrics::with_local_recorder(&recorder, || runtime.block_on(test(snapshotter)));
}

/// How long the holder works while the waiter waits.
const WORK: Duration = Duration::from_millis(100);

/// The holder holds the lock for its work ([`WORK`]) while a waiter waits: the waiter's acquire wait and the holder's
/// hold are both at least that; a try that finds the lock taken is `busy`. Nothing was lost and nothing retried.
#[test]
fn acquire_wait_and_hold_are_recorded() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let dir = unique_path("metrics-wait");
        let (a, b) = (client(&hosts).await, client(&hosts).await);
        let holder = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        assert!(
            Mutex::new(&b, &dir).unwrap().try_lock().await.unwrap().is_none(),
            "taken"
        );
        let waiting = waiting_lock(&b, &dir).await;
        // The work itself (not a wait for anything): the interval both figures must cover.
        let work = Instant::now();
        tokio::time::sleep(WORK).await;
        let worked = work.elapsed().as_secs_f64();
        holder.release().await.unwrap();
        let waiter = eventually("the waiter's turn", waiting).await.unwrap().unwrap();
        waiter.release().await.unwrap();

        let mut recorded = Recorded::default();
        let recorded = recorded.take(&snapshotter);
        let waits = recorded.samples(WAIT, &[("recipe", "mutex"), ("outcome", "acquired")]);
        assert_eq!(waits.len(), 2, "the holder's and the waiter's acquire: {waits:?}");
        assert!(
            waits.iter().any(|w| *w >= worked),
            "the waiter waited through the holder's work ({worked} s): {waits:?}"
        );
        let busy = recorded.samples(WAIT, &[("recipe", "mutex"), ("outcome", "busy")]);
        assert_eq!(busy.len(), 1, "the try_lock: {busy:?}");
        let holds = recorded.samples(HOLD, &[("recipe", "mutex")]);
        assert_eq!(holds.len(), 2, "both guards were released: {holds:?}");
        assert!(
            holds.iter().any(|h| *h >= worked),
            "the holder held through its work ({worked} s): {holds:?}"
        );
        assert_eq!(recorded.counter_total(LOST), 0, "nothing was lost");
        assert_eq!(recorded.counter(RETRIES, &[]), 0, "nothing was retried");
    });
}

/// Each recipe's waits and holds carry its own label; a timeout is `timeout`, and a dropped guard's hold counts too.
#[test]
fn every_recipe_is_labelled() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let (a, b) = (client(&hosts).await, client(&hosts).await);
        let rwlock = unique_path("metrics-rwlock");
        let read = RwLock::new(&a, &rwlock).unwrap().read().await.unwrap();
        let timed_out = RwLock::new(&b, &rwlock)
            .unwrap()
            .write_timeout(Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(timed_out, Error::Timeout);
        read.release().await.unwrap();
        let write = RwLock::new(&b, &rwlock).unwrap().write().await.unwrap();
        drop(write);
        let leadership = LeaderElection::new(&a, &unique_path("metrics-election"))
            .unwrap()
            .campaign()
            .await
            .unwrap();
        leadership.release().await.unwrap();
        let lease = Semaphore::new(&a, &unique_path("metrics-semaphore"), 2)
            .unwrap()
            .acquire()
            .await
            .unwrap();
        lease.release().await.unwrap();

        let mut recorded = Recorded::default();
        let recorded = recorded.take(&snapshotter);
        for recipe in [
            "rwlock_read",
            "rwlock_write",
            "election",
            "semaphore",
            "semaphore_gate",
        ] {
            let waits = recorded.samples(WAIT, &[("recipe", recipe), ("outcome", "acquired")]);
            assert_eq!(waits.len(), 1, "{recipe}: {waits:?}");
            let holds = recorded.samples(HOLD, &[("recipe", recipe)]);
            assert_eq!(holds.len(), 1, "{recipe}: {holds:?}");
        }
        let timeouts = recorded.samples(WAIT, &[("recipe", "rwlock_write"), ("outcome", "timeout")]);
        assert_eq!(timeouts.len(), 1, "{timeouts:?}");
        // The deadline is set just before the measured call, and timers fire at the deadline or after it.
        assert!(timeouts[0] >= 0.045, "a timeout waits its time: {timeouts:?}");
        assert!(recorded
            .samples(WAIT, &[("recipe", "mutex"), ("outcome", "acquired")])
            .is_empty());
    });
}

/// A held guard whose node somebody deletes is counted by reason; a waiter whose node is deleted (its acquire fails)
/// and a released guard are not.
#[test]
fn lost_guards_are_counted_by_reason() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let dir = unique_path("metrics-lost");
        let (a, b, admin) = (client(&hosts).await, client(&hosts).await, client(&hosts).await);
        let mut recorded = Recorded::default();

        let holder = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        let waiting = spawn_waiting(Session::new(&b), |session| {
            let waiter = Mutex::new(session, &dir).unwrap();
            async move { waiter.lock().await.map(|_| ()) }
        })
        .await;
        let queue = children(&admin, &dir).await;
        let holder_name = holder.path().rsplit('/').next().unwrap().to_owned();
        let waiter_node = queue.iter().find(|c| **c != holder_name).unwrap();
        admin.delete(&format!("{dir}/{waiter_node}"), None).await.unwrap();
        let err = eventually("the waiter to fail", waiting)
            .await
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, Error::NodeDeleted { .. }), "{err:?}");
        assert_eq!(
            recorded.take(&snapshotter).counter_total(LOST),
            0,
            "a waiter is no guard"
        );

        admin.delete(holder.path(), None).await.unwrap();
        assert_eq!(
            eventually("the lost signal", holder.lost()).await,
            LostReason::NodeDeleted
        );
        let lost = recorded.take(&snapshotter);
        assert_eq!(lost.counter(LOST, &[("reason", "node_deleted")]), 1);
        assert_eq!(lost.counter_total(LOST), 1);
        assert_eq!(holder.release().await, Err(Error::Lost(LostReason::NodeDeleted)));

        let released = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        released.release().await.unwrap();
        assert_eq!(
            recorded.take(&snapshotter).counter_total(LOST),
            1,
            "a release is no loss"
        );
    });
}

/// A create whose reply is lost (the proxy drops it and cuts the connection) is recovered by a retry, and counted.
#[test]
fn retries_after_connection_loss_are_counted() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let dir = unique_path("metrics-retry");
        let proxy = Proxy::start(first_server(&hosts)).await.unwrap();
        let client = client(&proxy.connect_string()).await;
        let mut recorded = Recorded::default();
        assert_eq!(recorded.take(&snapshotter).counter(RETRIES, &[]), 0);
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let guard = eventually(
            "the lock despite the lost reply",
            Mutex::new(&client, &dir).unwrap().lock(),
        )
        .await
        .unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let retries = recorded.take(&snapshotter).counter(RETRIES, &[]);
        assert!(retries >= 1, "the lost create was retried: {retries}");
        guard.release().await.unwrap();
    });
}

/// Lets the tasks woken so far run (on this current-thread runtime) until `done` holds; bounded in turns.
async fn settle(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never settled");
}

/// `zklock_leader{path}` is 1 from the campaign's success until the leadership is released (or lost: its node
/// deleted), and 0 for a candidate that never led; each election has its own `path` label.
#[test]
fn the_leader_gauge_follows_leadership() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let (a, b, admin) = (client(&hosts).await, client(&hosts).await, client(&hosts).await);
        let (dir, other) = (unique_path("metrics-leader"), unique_path("metrics-leader-other"));
        let mut recorded = Recorded::default();
        let leadership = LeaderElection::new(&a, &dir).unwrap().campaign().await.unwrap();
        let leading = |recorded: &mut Recorded, path: &str| {
            recorded.take(&snapshotter).gauge_moved(LEADER, &[("path", path)])
        };
        assert_eq!(leading(&mut recorded, &dir), Some(1.0));
        assert_eq!(
            leading(&mut recorded, &other),
            None,
            "another election's label is untouched"
        );
        // The next candidate (another session of this process) leads once the first resigns.
        let election = LeaderElection::new(&b, &dir).unwrap();
        let next = tokio::spawn(async move { election.campaign().await });
        await_children(&admin, &dir, "the second candidate", |c| c.len() == 2).await;
        assert_eq!(
            leading(&mut recorded, &dir),
            Some(1.0),
            "a candidate is not counted"
        );
        let ended = leadership.lost();
        leadership.release().await.unwrap();
        assert_eq!(ended.await, LostReason::Released);
        let next = eventually("the next leader", next).await.unwrap().unwrap();
        settle(|| leading(&mut recorded, &dir) == Some(1.0)).await;
        // Lost (its node deleted by somebody else): 0.
        let ended = next.lost();
        admin.delete(next.path(), None).await.unwrap();
        assert_eq!(
            eventually("the lost signal", ended).await,
            LostReason::NodeDeleted
        );
        settle(|| leading(&mut recorded, &dir) == Some(0.0)).await;
        drop(next);
    });
}

/// `zklock_queue_depth{path}` is the number of items the last listing saw, claimed ones included.
#[test]
fn the_queue_depth_gauge_is_the_last_listing() {
    with_recorder(|snapshotter| async move {
        let hosts = embedded().await;
        let a = client(&hosts).await;
        let dir = unique_path("metrics-depth");
        let queue = Queue::new(&a, &dir).unwrap();
        let mut recorded = Recorded::default();
        let mut depth = || recorded.take(&snapshotter).gauge_set(DEPTH, &[("path", &dir)]);
        for item in [b"1", b"2", b"3"] {
            queue.put(item).await.unwrap();
        }
        assert_eq!(depth(), None, "a put lists nothing");
        assert_eq!(queue.len().await.unwrap(), 3);
        assert_eq!(depth(), Some(3.0));
        assert_eq!(queue.take().await.unwrap(), b"1");
        assert_eq!(depth(), Some(3.0), "the take saw three items, then took one");
        let claimed = queue.take_safe().await.unwrap();
        assert_eq!(depth(), Some(2.0));
        assert_eq!(
            queue.len().await.unwrap(),
            2,
            "a claimed item is still in the queue"
        );
        claimed.complete().await.unwrap();
        assert_eq!(queue.try_take().await.unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(queue.try_take().await.unwrap(), None);
        assert_eq!(depth(), Some(0.0));
    });
}

/// What a recorder was told by `describe_*`: name, unit, help text.
#[derive(Default)]
struct Descriptions(std::sync::Mutex<Vec<(String, Option<metrics::Unit>, String)>>);

impl Descriptions {
    fn add(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        let entry = (name.as_str().to_owned(), unit, help.to_string());
        self.0.lock().unwrap().push(entry);
    }
}

impl metrics::Recorder for Descriptions {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.add(name, unit, help);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.add(name, unit, help);
    }
    fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
        self.add(name, unit, help);
    }
    fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::noop()
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}

/// `describe_metrics` gives every metric the recipes record its unit and help text; a recorder it was not called
/// on has none (the control).
#[test]
fn every_metric_is_described() {
    let control = Descriptions::default();
    metrics::with_local_recorder(&control, || {
        metrics::counter!(LOST).increment(1);
    });
    assert!(control.0.lock().unwrap().is_empty());

    let recorder = Descriptions::default();
    metrics::with_local_recorder(&recorder, zklock::describe_metrics);
    let described = recorder.0.lock().unwrap().clone();
    let expected = [
        (WAIT, metrics::Unit::Seconds),
        (HOLD, metrics::Unit::Seconds),
        (LOST, metrics::Unit::Count),
        (SUSPENDED, metrics::Unit::Count),
        (RESUMED, metrics::Unit::Count),
        (RETRIES, metrics::Unit::Count),
        (LEADER, metrics::Unit::Count),
        (DEPTH, metrics::Unit::Count),
    ];
    assert_eq!(described.len(), expected.len(), "{described:?}");
    for (name, unit) in expected {
        let Some((_, got, help)) = described.iter().find(|(n, _, _)| n == name) else {
            panic!("{name} is not described: {described:?}")
        };
        assert_eq!(*got, Some(unit), "{name}");
        assert!(help.len() > 20, "{name}: {help:?}");
    }
}
