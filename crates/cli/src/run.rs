//! `zklock run PATH -- CMD...`: a cluster-wide `flock` — with a mutex (the default), either side of a read/write
//! lock (`--shared`, `--write`), or one of the N leases of a semaphore (`--leases N`).
//!
//! The three kinds of lock are the library's `Mutex`, `RwLock` and `Semaphore`, each with its own node layout
//! (Curator's), and none of them excludes another: a mutex holder and a reader on one PATH would both run. The
//! library decides, in one place for every recipe, who may share a directory (`zklock::Error::InUse`): a `run` of
//! another kind on PATH — or a Curator or kazoo recipe zklock cannot be ordered with, or another recipe's
//! directory — makes `run` refuse with exit 64 and say what is there. Each acquire looks after its own node was
//! created, and ZooKeeper orders all creates, so of two conflicting `run`s the later one refuses (both may refuse;
//! never both run). kazoo's `Lock`, `WriteLock` and `ReadLock` nodes are contenders `run` queues behind, by sequence
//! number.

use std::future::pending;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock::{Error, Guard, Listener, Mutex, NodeKind, QueueEvent, Role, RwLock, Semaphore, Session};
use zookeeper_client::{SessionState, StateWatcher};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::outage::Connection;
use crate::supervise::{self, Interrupts};

/// Runs the command under the lock; returns the process exit status.
pub async fn run(args: RunArgs) -> exit::Result {
    supervise::refuse_nested("run", &args.path, args.nonblock || args.timeout.is_some())?;
    supervise::with_session(&args.connect, async |client, interrupts| {
        run_with(&args, client, interrupts).await
    })
    .await
}

/// The lock `zklock run` takes on PATH.
enum Lock {
    /// Plain `run`.
    Mutex(Mutex),
    /// `--shared`.
    Read(RwLock),
    /// `--write`.
    Write(RwLock),
    /// `--leases N`.
    Lease(Semaphore),
}

/// How long to wait for the lock.
#[derive(Clone, Copy)]
enum Wait {
    /// `--nonblock`.
    Never,
    /// `--timeout`.
    AtMost(Duration),
    Forever,
}

impl Lock {
    /// The lock on `args.path`, whose node holds `data`.
    fn new(args: &RunArgs, session: Session, data: String) -> zklock::Result<Lock> {
        Ok(if args.shared {
            Lock::Read(RwLock::new(session, &args.path)?.with_data(data))
        } else if args.write {
            Lock::Write(RwLock::new(session, &args.path)?.with_data(data))
        } else if let Some(leases) = args.leases {
            // At most u32::MAX: fits a usize on every platform we build for.
            Lock::Lease(Semaphore::new(session, &args.path, leases as usize)?.with_data(data))
        } else {
            Lock::Mutex(Mutex::new(session, &args.path)?.with_data(data))
        })
    }

    /// The guard, or `None` if busy (`Wait::Never`).
    async fn acquire(&self, wait: Wait) -> zklock::Result<Option<Guard>> {
        match (self, wait) {
            (Lock::Mutex(mutex), Wait::Never) => mutex.try_lock().await,
            (Lock::Mutex(mutex), Wait::AtMost(d)) => mutex.lock_timeout(d).await.map(Some),
            (Lock::Mutex(mutex), Wait::Forever) => mutex.lock().await.map(Some),
            (Lock::Read(lock), Wait::Never) => lock.try_read().await,
            (Lock::Read(lock), Wait::AtMost(d)) => lock.read_timeout(d).await.map(Some),
            (Lock::Read(lock), Wait::Forever) => lock.read().await.map(Some),
            (Lock::Write(lock), Wait::Never) => lock.try_write().await,
            (Lock::Write(lock), Wait::AtMost(d)) => lock.write_timeout(d).await.map(Some),
            (Lock::Write(lock), Wait::Forever) => lock.write().await.map(Some),
            (Lock::Lease(semaphore), Wait::Never) => semaphore.try_acquire().await,
            (Lock::Lease(semaphore), Wait::AtMost(d)) => semaphore.acquire_timeout(d).await.map(Some),
            (Lock::Lease(semaphore), Wait::Forever) => semaphore.acquire().await.map(Some),
        }
    }

    /// What we hold, in messages.
    fn what(&self, path: &str) -> String {
        match self {
            Lock::Mutex(_) => format!("the lock on {path}"),
            Lock::Read(_) => format!("the read lock on {path}"),
            Lock::Write(_) => format!("the write lock on {path}"),
            Lock::Lease(semaphore) => format!("a lease of {path} (one of {})", semaphore.leases()),
        }
    }

    fn session(&self) -> &Session {
        match self {
            Lock::Mutex(mutex) => mutex.session(),
            Lock::Read(lock) | Lock::Write(lock) => lock.session(),
            Lock::Lease(semaphore) => semaphore.session(),
        }
    }

    /// Why `--nonblock` gave up, saying who holds PATH (one more look; a race with a release only makes it vaguer).
    async fn busy(&self, path: &str) -> String {
        let holders = match zklock::inspect(self.session(), path).await {
            Ok(Some(found)) => found
                .participants
                .into_iter()
                .filter(|p| p.role == Role::Holder)
                .map(|p| p.kind)
                .collect(),
            _ => Vec::new(),
        };
        let readers = holders
            .iter()
            .filter(|kind| matches!(kind, NodeKind::Read | NodeKind::KazooRead))
            .count();
        let by = match (holders.len(), readers) {
            (0, _) => "queued for by another contender".to_owned(),
            (n, r) if n == r => format!("read-locked by {r} reader(s)"),
            _ => "locked by another holder".to_owned(),
        };
        match self {
            Lock::Mutex(_) | Lock::Write(_) => format!("{path} is {by} (--nonblock)"),
            Lock::Read(_) => format!("{path} is write-locked, or a writer is queued for it (--nonblock)"),
            Lock::Lease(semaphore) => format!(
                "no lease of {path} is free (all {} taken, or another acquirer is ahead) (--nonblock)",
                semaphore.leases()
            ),
        }
    }
}

/// How often the connection to ZooKeeper may drop before our node exists; after that, the server is taken to refuse
/// our create. A server closes the connection, without an answer, on a request larger than its `jute.maxbuffer`,
/// and the library sends a create lost with its connection again (it may have been applied): such a create would
/// be sent, and the connection dropped, over and over while the session lives on, and `run` would wait for ever
/// (or say "timed out" for a lock that may be free). A connection that breaks now and then costs one drop; three
/// within the few round trips before our node exists is no hiccup.
const DROPS_BEFORE_CREATED: u32 = 3;

/// Our first create under PATH, watched: whether a node of ours exists yet (the library's [`QueueEvent::Created`];
/// with `--leases`, the gate node's, which holds the same data as the lease's), and how often the connection to
/// ZooKeeper dropped before it did.
#[derive(Default)]
struct Creation {
    created: Arc<AtomicBool>,
    drops: AtomicU32,
}

impl Creation {
    /// The session's listener that tells us our node exists.
    fn listener(&self) -> Listener {
        let created = Arc::clone(&self.created);
        Listener::new(move |event| {
            if matches!(event, QueueEvent::Created { .. }) {
                created.store(true, Ordering::Relaxed);
            }
        })
    }

    /// Counts the drops of the connection (`states`, from now on) while no node of ours exists; completes at
    /// [`DROPS_BEFORE_CREATED`], and never once our node exists or the session has ended (the acquire says why).
    async fn refused(&self, mut states: StateWatcher) {
        let mut last = states.state();
        loop {
            let state = states.changed().await;
            if self.created.load(Ordering::Relaxed) || state.is_terminated() {
                return pending().await;
            }
            // Only the newest state is kept: the same one twice had a drop (and a reconnection) in between.
            if (state == SessionState::Disconnected || state == last)
                && self.drops.fetch_add(1, Ordering::Relaxed) + 1 >= DROPS_BEFORE_CREATED
            {
                return;
            }
            last = state;
        }
    }

    /// The drops of the connection counted before our node existed; 0 once it exists.
    fn drops(&self) -> u32 {
        if self.created.load(Ordering::Relaxed) {
            0
        } else {
            self.drops.load(Ordering::Relaxed)
        }
    }

    /// `run`'s failure when our node could not be made, the connection dropping: exit 69, naming the likely cause.
    fn failure(&self, path: &str, data_len: usize) -> Failure {
        Failure::new(
            exit::UNAVAILABLE,
            format!(
                "cannot lock {path}: ZooKeeper closed the connection {} time(s) before our node there was created \
                 — a server closes it, without an answer, on a request larger than its jute.maxbuffer (our node's \
                 data is {data_len} bytes: --describe TEXT or --no-describe stores less), or the network to it fails",
                self.drops.load(Ordering::Relaxed)
            ),
        )
    }
}

async fn run_with(
    args: &RunArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let creation = Creation::default();
    let session = crate::zk::session(client, &args.connect.security, &args.acl)?
        .with_lost_policy(supervise::lost_policy(
            client.session_timeout(),
            args.kill_after,
            args.on_suspend,
        ))
        .with_listener(creation.listener());
    let data = supervise::describe(
        &args.command,
        args.describe.describe.as_deref(),
        args.describe.no_describe,
    );
    let data_len = data.len();
    let lock = Lock::new(args, session, data).map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
    let wait = if args.nonblock {
        Wait::Never
    } else if let Some(secs) = args.timeout {
        // Finite and at most a year: checked by `values::seconds`.
        Wait::AtMost(Duration::from_secs_f64(secs))
    } else {
        Wait::Forever
    };
    let acquired = tokio::select! {
        acquired = lock.acquire(wait) => acquired,
        () = creation.refused(client.state_watcher()) => return Err(creation.failure(&args.path, data_len)),
        signal = interrupts.recv() => {
            return Err(supervise::interrupted(signal, format!("{signal} while waiting for {}", args.path)));
        }
    };
    let guard = match acquired {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            return Err(Failure::conflict(
                args.conflict.status(),
                lock.busy(&args.path).await,
            ))
        }
        // The time ran out before our node was made, the connection dropping meanwhile: that is what to say.
        Err(Error::Timeout) if creation.drops() > 0 => return Err(creation.failure(&args.path, data_len)),
        Err(Error::Timeout) => {
            let message = format!(
                "timed out after {}s waiting for {}",
                args.timeout.unwrap_or_default(),
                args.path
            );
            return Err(Failure::conflict(args.conflict.status(), message));
        }
        Err(err @ Error::InUse { .. }) => return Err(supervise::in_use(&err, "zklock run")),
        Err(err @ Error::Mismatch { .. }) => return Err(Failure::new(exit::USAGE, err.to_string())),
        Err(err) => {
            let message = format!("cannot lock {}: {err}{}", args.path, crate::zk::refused(&err));
            return Err(Failure::new(exit::UNAVAILABLE, message));
        }
    };
    supervise::hold(
        guard,
        &args.path,
        &lock.what(&args.path),
        &args.command,
        args.kill_after,
        args.on_suspend,
        &Connection::follow(client, &args.connect.hosts),
        interrupts,
    )
    .await
    .result()
}
