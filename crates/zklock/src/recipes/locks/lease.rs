//! kazoo's `NonBlockingLease`: a lease on a task for a stretch of wall-clock time, taken at once or not at all — "run
//! this hourly job on one host, and on the same one while it lives".
//!
//! Layout (kazoo's, so that kazoo's and our holders share a lease): a lock at `<path>` (kazoo `Lock` nodes: ours are
//! [kazoo-named](crate::Mutex::with_kazoo_names)) guards `<path>/lease_holder`, whose data is the JSON
//! `{"version": 1, "holder": "<identifier>", "end": "<UTC, %Y-%m-%dT%H:%M:%S>"}`. Under the lock, a contender
//! takes the lease when there is no holder node, when the holder is itself (a renewal), or when the end has passed
//! by its clock: it replaces the holder node with its own.
//!
//! The end is wall-clock time on each holder's clock, as in kazoo: the lease is exclusive only as far as the
//! clocks agree. The fencing token (the holder node's creation zxid, higher for every later lease, renewals
//! included) is what a protected resource can check whatever the clocks say.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, LostReason, Result};
use crate::base::path::child_path;
use crate::recipes::locks::mutex::Mutex;
use crate::session::cas::{Committed, Write};
use crate::session::Session;

/// The version of kazoo's lease data this reads and writes.
const VERSION: i64 = 1;

/// A lease at a path for a duration, taken only if free (kazoo's `NonBlockingLease`).
///
/// ```no_run
/// # async fn example(session: zklock::Session) -> zklock::Result<()> {
/// use std::time::Duration;
/// let lease = zklock::NonBlockingLease::new(&session, "/leases/hourly-cleanup", Duration::from_secs(70 * 60))?
///     .with_identifier("cleanup on host-a");
/// if let Some(held) = lease.try_obtain().await? {
///     println!("ours until {:?}, token {}", held.ends_at(), held.fencing_token());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NonBlockingLease {
    session: Session,
    path: String,
    duration: Duration,
    identifier: String,
}

/// A lease obtained: ours until [`ends_at`](ObtainedLease::ends_at) by our clock.
#[derive(Debug)]
pub struct ObtainedLease {
    session: Session,
    holder_path: String,
    token: i64,
    ends_at: SystemTime,
}

/// kazoo's lease data.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    version: i64,
    holder: String,
    end: String,
}

impl NonBlockingLease {
    /// A lease on `path` (made, with its parents, on first use) for `duration` from each obtain. The identifier is a
    /// fresh uuid unless [given](NonBlockingLease::with_identifier).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse.
    pub fn new(session: impl Into<Session>, path: &str, duration: Duration) -> Result<NonBlockingLease> {
        Ok(NonBlockingLease {
            session: session.into(),
            path: crate::base::path::validate(path)?,
            duration,
            identifier: uuid::Uuid::new_v4().simple().to_string(),
        })
    }

    /// The holder's identifier (kazoo's default is the host name): an obtain by the holder renews its lease.
    pub fn with_identifier(mut self, identifier: &str) -> NonBlockingLease {
        identifier.clone_into(&mut self.identifier);
        self
    }

    /// Takes the lease if it is free, ours (renewed: a new end, a new token) or past its end; `None` if another
    /// holder has it, or the holder node is of another version of kazoo's format.
    ///
    /// # Errors
    /// [`Error::InUse`] if the holder node's data is not kazoo's lease data; the end of the session; what ZooKeeper
    /// answers.
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it releases the lock; the lease is then taken or not.
    pub async fn try_obtain(&self) -> Result<Option<ObtainedLease>> {
        let session = &self.session.pinned_usable().await?;
        let lock = Mutex::new(session, &self.path)?
            .with_kazoo_names(true)
            .with_data(self.identifier.as_bytes());
        let guard = lock.lock().await?;
        let obtained = self.obtain_locked(session).await;
        guard.release().await?;
        obtained
    }

    async fn obtain_locked(&self, session: &Session) -> Result<Option<ObtainedLease>> {
        let holder_path = child_path(&self.path, "lease_holder");
        let now = SystemTime::now();
        let current = session.get(&holder_path).await?;
        if let Some((data, _)) = &current {
            let held: Holder = serde_json::from_slice(data).map_err(|_| Error::InUse {
                path: holder_path.clone(),
                node: String::from_utf8_lossy(data).into_owned(),
                what: "a lease holder node whose data is not kazoo's lease JSON",
            })?;
            if held.version != VERSION {
                return Ok(None);
            }
            let end = humantime::parse_rfc3339_weak(&held.end).map_err(|_| Error::InUse {
                path: holder_path.clone(),
                node: held.end.clone(),
                what: "a lease holder node whose end is not a %Y-%m-%dT%H:%M:%S time",
            })?;
            if held.holder != self.identifier && now < end {
                return Ok(None);
            }
        }
        // kazoo keeps whole seconds: so do we, and our lease ends when others see it end.
        let ends_at = truncated_to_seconds(now + self.duration);
        let end = humantime::format_rfc3339_seconds(ends_at).to_string();
        let data = serde_json::to_vec(&Holder {
            version: VERSION,
            holder: self.identifier.clone(),
            end: end.trim_end_matches('Z').to_owned(),
        })
        .expect("lease data serializes");
        let mut writes = Vec::with_capacity(2);
        if let Some((_, stat)) = &current {
            writes.push(Write::Delete(&holder_path, Some(stat.version)));
        }
        // Under the lock nobody else writes the holder node: after a lost reply, a holder node there is ours.
        writes.push(Write::Create(
            &holder_path,
            &data,
            zookeeper_client::CreateMode::Persistent,
        ));
        let stat = match session.commit_once(&writes, true).await? {
            Committed::Done { stat: Some(stat), .. } => stat,
            // A `multi`'s create answers without a stat: the node is ours under the lock, so its stat is ours too.
            Committed::Done { stat: None, .. } => session
                .exists(&holder_path)
                .await?
                .ok_or_else(|| Error::zk("exists", &holder_path, zookeeper_client::Error::NoNode))?,
            Committed::Refused { index, error } => return Err(Committed::refused(index, error, &writes)),
        };
        Ok(Some(ObtainedLease {
            session: session.clone(),
            holder_path,
            token: stat.czxid,
            ends_at,
        }))
    }
}

impl ObtainedLease {
    /// The fencing token: the creation zxid of our holder node, higher for every later lease (renewals included).
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// When the lease ends, by our clock.
    pub fn ends_at(&self) -> SystemTime {
        self.ends_at
    }

    /// Completes when the lease ends: its end passes by our clock, or its holder node is deleted or replaced (a
    /// renewal by another `ObtainedLease` replaces it too). Cheap to call many times.
    pub async fn lost(&self) -> LostReason {
        let until_end = self.ends_at.duration_since(SystemTime::now()).unwrap_or_default();
        let replaced = async {
            loop {
                match self.session.watch_exists(&self.holder_path).await {
                    Ok((Some(stat), watcher)) if stat.czxid == self.token => {
                        // Any notification is a reason to look again; an ended session leaves the time to decide.
                        if self
                            .session
                            .await_change(watcher, &self.holder_path)
                            .await
                            .is_err()
                        {
                            std::future::pending::<()>().await;
                        }
                    }
                    Ok(_) => return,
                    Err(_) => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            () = tokio::time::sleep(until_end) => {}
            () = replaced => {}
        }
        LostReason::LeaseEnded
    }
}

fn truncated_to_seconds(time: SystemTime) -> SystemTime {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs())
}
