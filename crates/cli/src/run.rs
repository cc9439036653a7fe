//! `zklock run PATH -- CMD...`: a cluster-wide `flock` — with a mutex (the default), either side of a read/write
//! lock (`--shared`, `--write`), or one of the N leases of a semaphore (`--leases N`).
//!
//! The three kinds of lock are the library's `Mutex`, `RwLock` and `Semaphore`, each with its own node layout
//! (Curator's), and none of them excludes another: a mutex holder and a reader on one PATH would both run. The
//! library decides, in one place for every recipe, who may share a directory (`zklock::Error::InUse`): a `run` of
//! another kind on PATH — or a Curator or kazoo recipe zklock cannot be ordered with, or another recipe's
//! directory — makes `run` refuse with exit 2 and say what is there. Each acquire looks after its own node was
//! created, and ZooKeeper orders all creates, so of two conflicting `run`s the later one refuses (both may refuse;
//! never both run). kazoo's `Lock`, `WriteLock` and `ReadLock` nodes are contenders `run` queues behind, by sequence
//! number.

use std::time::Duration;

use zklock::{Error, Guard, Mutex, NodeKind, Role, RwLock, Semaphore, Session};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::supervise::{self, Interrupts};

/// Runs the command under the lock; returns the process exit status.
pub async fn run(args: RunArgs) -> exit::Result {
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
    fn new(args: &RunArgs, session: Session) -> zklock::Result<Lock> {
        let data = supervise::describe(
            &args.command,
            args.describe.describe.as_deref(),
            args.describe.no_describe,
        );
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

async fn run_with(
    args: &RunArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let session = crate::zk::session(client, &args.connect.security, &args.acl)?
        .with_lost_policy(supervise::lost_policy(client.session_timeout(), args.kill_after));
    let lock = Lock::new(args, session).map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
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
            return Err(Failure::new(exit::FAILURE, message));
        }
    };
    supervise::hold(
        guard,
        &args.path,
        &lock.what(&args.path),
        &args.command,
        args.kill_after,
        client.session_timeout(),
        interrupts,
    )
    .await
    .result()
}
