//! `zklock run PATH -- CMD...`: a cluster-wide `flock` — with a mutex (the default), either side of a read/write
//! lock (`--shared`, `--write`), or one of the N leases of a semaphore (`--leases N`).
//!
//! The three kinds of lock are the library's `Mutex`, `RwLock` and `Semaphore`, each with its own node layout
//! (Curator's), and none of them excludes another: a mutex holder and a reader on one PATH would both run. So `run`
//! refuses to mix them on one PATH (exit 2, [`other_kind`]): it looks before it queues, to fail fast, and again once
//! it holds, before the command starts. The second look is what makes it safe. Of two `run`s of different kinds on
//! one PATH, each looks after its own node was created, on its own session (which reads its own writes), and
//! ZooKeeper orders all creates: so the one whose node came later sees the other's node — unless that one is gone,
//! and then so is its command — and refuses. (Both may refuse; never both run.)

use std::time::Duration;

use zklock::{Error, Guard, Mutex, NodeKind, Recipe, RwLock, Semaphore, Session};

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

/// The kinds of lock that `run` does not let share a PATH.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mutex,
    ReadWrite,
    Semaphore,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Mutex => "a mutex (zklock run without --shared, --write or --leases)",
            Kind::ReadWrite => "a read/write lock (zklock run --shared or --write)",
            Kind::Semaphore => "a semaphore (zklock run --leases)",
        }
    }
}

/// The semaphore's own children of its directory: the lease nodes' and the acquirers' directories (the layout of
/// Curator's `InterProcessSemaphoreV2`, as `zklock::Semaphore` documents it).
const SEMAPHORE_CHILDREN: [&str; 2] = ["leases", "locks"];

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

    fn kind(&self) -> Kind {
        match self {
            Lock::Mutex(_) => Kind::Mutex,
            Lock::Read(_) | Lock::Write(_) => Kind::ReadWrite,
            Lock::Lease(_) => Kind::Semaphore,
        }
    }

    fn session(&self) -> &Session {
        match self {
            Lock::Mutex(mutex) => mutex.session(),
            Lock::Read(lock) | Lock::Write(lock) => lock.session(),
            Lock::Lease(semaphore) => semaphore.session(),
        }
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

    /// Why `--nonblock` gave up.
    fn busy(&self, path: &str) -> String {
        match self {
            Lock::Mutex(_) | Lock::Write(_) => format!("{path} is locked by another holder (--nonblock)"),
            Lock::Read(_) => format!("{path} is write-locked, or a writer is queued for it (--nonblock)"),
            Lock::Lease(semaphore) => format!(
                "no lease of {path} is free (all {} taken, or another acquirer is ahead) (--nonblock)",
                semaphore.leases()
            ),
        }
    }
}

/// Whether another kind of `run` lock uses `path`: what it is, if so.
async fn other_kind(lock: &Lock, path: &str) -> zklock::Result<Option<String>> {
    let session = lock.session();
    let kind = lock.kind();
    if kind == Kind::Semaphore {
        // `inspect` shows a semaphore's leases, not other contenders beside its directories: look at the children.
        let client = session.client();
        let children = match session.retry().run(|| client.list_children(path)).await {
            Ok(children) => children,
            Err(Error::ZooKeeper(zookeeper_client::Error::NoNode)) => return Ok(None),
            Err(err) => return Err(err),
        };
        return Ok(children
            .into_iter()
            .find(|child| !SEMAPHORE_CHILDREN.contains(&child.as_str()))
            .map(|child| {
                format!(
                    "a mutex or a read/write lock (zklock run without --leases) or another recipe: it has the node \
                     {child:?}, which a semaphore does not make"
                )
            }));
    }
    let Some(found) = zklock::inspect(session, path).await? else {
        return Ok(None);
    };
    if matches!(found.recipe, Recipe::Semaphore { .. }) {
        return Ok(Some(Kind::Semaphore.name().to_owned()));
    }
    let other = found.participants.iter().find_map(|p| match (kind, p.kind) {
        (Kind::Mutex, NodeKind::Read | NodeKind::Write) => Some(Kind::ReadWrite),
        (Kind::ReadWrite, NodeKind::Lock) => Some(Kind::Mutex),
        _ => None,
    });
    Ok(other.map(|other| other.name().to_owned()))
}

/// [`other_kind`], as `run`'s failure: a usage error when another kind uses PATH; 3 when ZooKeeper fails; a signal
/// ends the look (128 + N).
async fn refuse_other_kind(lock: &Lock, path: &str, interrupts: &mut Interrupts) -> exit::Result<()> {
    let found = tokio::select! {
        found = other_kind(lock, path) => found,
        signal = interrupts.recv() => {
            return Err(supervise::interrupted(signal, format!("{signal} while looking at {path}")));
        }
    };
    match found {
        Ok(None) => Ok(()),
        Ok(Some(other)) => Err(Failure::new(
            exit::USAGE,
            format!(
                "{path} is in use by {other}; different kinds of lock on one path do not exclude each other, so \
                 zklock run does not mix them: use the same kind as the others (or another path)"
            ),
        )),
        Err(err) => Err(Failure::new(exit::FAILURE, format!("looking at {path}: {err}"))),
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
    // Fail fast rather than queue where we would be refused anyway.
    refuse_other_kind(&lock, &args.path, interrupts).await?;
    let wait = if args.nonblock {
        Wait::Never
    } else if let Some(secs) = args.timeout {
        // Finite and at most a year: checked by `cli::seconds`.
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
        Ok(None) => return Err(Failure::conflict(args.conflict.status(), lock.busy(&args.path))),
        Err(Error::Timeout) => {
            let message = format!(
                "timed out after {}s waiting for {}",
                args.timeout.unwrap_or_default(),
                args.path
            );
            return Err(Failure::conflict(args.conflict.status(), message));
        }
        Err(err) => {
            let message = format!("cannot lock {}: {err}{}", args.path, crate::zk::refused(&err));
            return Err(Failure::new(exit::FAILURE, message));
        }
    };
    // The look that makes mixing safe (see the module documentation): after our node exists, before the command.
    if let Err(failure) = refuse_other_kind(&lock, &args.path, interrupts).await {
        let _ = guard.release().await;
        return Err(failure);
    }
    supervise::run_while_held(
        guard,
        &args.path,
        &lock.what(&args.path),
        &args.command,
        args.kill_after,
        client.session_timeout(),
        interrupts,
    )
    .await
}
