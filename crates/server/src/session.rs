//! Sessions: ids, passwords, timeout negotiation and tick-bucketed expiry.
//!
//! Ids are `0x01 << 56 | (ms since epoch, low 40 bits) << 16`, then incremented (ZooKeeper's scheme with
//! server id 1). The fixed top byte keeps ids away from 0, and from 0xFF and 0x80, which mark TTL nodes and
//! containers in `ephemeralOwner`. Seeding from the clock makes ids unique across restarts even before
//! anything is persisted; recovered sessions move the counter past themselves as well.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant;

use crate::watch::ConnId;

/// Top byte of every session id we issue.
const SERVER_ID: i64 = 1;

/// One session.
#[derive(Debug, Clone)]
pub struct Session {
    /// Session id.
    pub id: i64,
    /// Negotiated timeout, ms.
    pub timeout_ms: i32,
    /// 16-byte password.
    pub passwd: Vec<u8>,
    /// The connection currently attached, if any.
    pub conn: Option<ConnId>,
    /// Expiry deadline, rounded up to the next tick (ZooKeeper's `ExpiryQueue` buckets). Changed only by
    /// [`Sessions::touch`], which keeps the buckets in step.
    expires_at: Instant,
}

/// All sessions.
///
/// Expiry, as ZooKeeper's `ExpiryQueue`: sessions are kept in buckets by deadline (deadlines are rounded up to a
/// tick, so a busy session's touches mostly land in the bucket it is already in and cost one comparison), and a
/// tick looks only at the buckets that are due — never at every session.
#[derive(Debug)]
pub struct Sessions {
    map: HashMap<i64, Session>,
    buckets: BTreeMap<Instant, HashSet<i64>>,
    next_id: i64,
    tick: Duration,
    origin: Instant,
}

/// The first session id to hand out when starting at wall-clock time `now_ms`.
pub fn initial_session_id(now_ms: i64) -> i64 {
    (SERVER_ID << 56) | ((now_ms & 0xff_ffff_ffff) << 16)
}

/// Fresh random password. Unlike ZooKeeper's (derived from the id with a fixed seed), it cannot be guessed.
pub fn new_password() -> Vec<u8> {
    rand::random::<[u8; 16]>().to_vec()
}

impl Sessions {
    /// An empty table issuing ids from `first_id`.
    pub fn new(tick: Duration, first_id: i64) -> Self {
        Sessions {
            map: HashMap::new(),
            buckets: BTreeMap::new(),
            next_id: first_id,
            tick: tick.max(Duration::from_millis(1)),
            origin: Instant::now(),
        }
    }

    /// Reserves the next id (the session itself is added when its txn is applied).
    pub fn next_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Rounds `now + timeout` up to the next tick boundary.
    fn deadline(&self, timeout_ms: i32) -> Instant {
        let tick = self.tick.as_millis().max(1) as u64;
        let due = Instant::now().saturating_duration_since(self.origin).as_millis() as u64
            + timeout_ms.max(0) as u64;
        self.origin + Duration::from_millis((due / tick + 1) * tick)
    }

    /// Adds (or replaces) a session, starting its timer now.
    pub fn insert(&mut self, id: i64, timeout_ms: i32, passwd: Vec<u8>) {
        let expires_at = self.deadline(timeout_ms);
        self.buckets.entry(expires_at).or_default().insert(id);
        let replaced = self.map.insert(
            id,
            Session {
                id,
                timeout_ms,
                passwd,
                conn: None,
                expires_at,
            },
        );
        if let Some(old) = replaced {
            if old.expires_at != expires_at {
                self.unbucket(id, old.expires_at);
            }
        }
        if id >= self.next_id && id >> 56 == SERVER_ID {
            self.next_id = id + 1;
        }
    }

    /// Removes a session.
    pub fn remove(&mut self, id: i64) -> Option<Session> {
        let session = self.map.remove(&id)?;
        self.unbucket(id, session.expires_at);
        Some(session)
    }

    /// Takes `id` out of the bucket of `deadline`, dropping the bucket when it empties.
    fn unbucket(&mut self, id: i64, deadline: Instant) {
        if let Some(bucket) = self.buckets.get_mut(&deadline) {
            bucket.remove(&id);
            if bucket.is_empty() {
                self.buckets.remove(&deadline);
            }
        }
    }

    /// Looks up a session.
    pub fn get(&self, id: i64) -> Option<&Session> {
        self.map.get(&id)
    }

    /// Looks up a session mutably.
    pub fn get_mut(&mut self, id: i64) -> Option<&mut Session> {
        self.map.get_mut(&id)
    }

    /// Restarts a session's timer (any packet from its client does this).
    pub fn touch(&mut self, id: i64) {
        let Some((timeout, old)) = self.map.get(&id).map(|s| (s.timeout_ms, s.expires_at)) else {
            return;
        };
        let deadline = self.deadline(timeout);
        if deadline == old {
            return;
        }
        self.unbucket(id, old);
        self.buckets.entry(deadline).or_default().insert(id);
        if let Some(s) = self.map.get_mut(&id) {
            s.expires_at = deadline;
        }
    }

    /// Sessions whose deadline has passed (they stay until [`Sessions::remove`]d), sorted. Looks only at the
    /// buckets that are due.
    pub fn expired(&self, now: Instant) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .buckets
            .range(..=now)
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// All sessions.
    pub fn iter(&self) -> impl Iterator<Item = &Session> {
        self.map.values()
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_a_safe_top_byte() {
        for now in [0, 1, 1_700_000_000_000, i64::MAX] {
            let id = initial_session_id(now);
            assert_eq!(id >> 56, 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn expiry_is_bucketed_by_tick() {
        let mut s = Sessions::new(Duration::from_millis(2000), initial_session_id(0));
        let id = s.next_id();
        s.insert(id, 4000, new_password());
        tokio::time::advance(Duration::from_millis(3999)).await;
        assert!(s.expired(Instant::now()).is_empty());
        tokio::time::advance(Duration::from_millis(2001)).await;
        assert_eq!(s.expired(Instant::now()), vec![id]);
    }

    #[tokio::test(start_paused = true)]
    async fn touches_move_a_session_between_buckets_and_remove_empties_them() {
        let mut s = Sessions::new(Duration::from_millis(100), initial_session_id(0));
        let (a, b) = (s.next_id(), s.next_id());
        s.insert(a, 1000, new_password());
        s.insert(b, 1000, new_password());
        for _ in 0..20 {
            tokio::time::advance(Duration::from_millis(250)).await;
            s.touch(a);
        }
        assert_eq!(s.expired(Instant::now()), vec![b], "a was touched, b was not");
        assert!(s.remove(b).is_some());
        assert_eq!(s.buckets.len(), 1, "one bucket left: a's");
        tokio::time::advance(Duration::from_millis(1200)).await;
        assert_eq!(s.expired(Instant::now()), vec![a]);
        s.remove(a);
        assert!(s.buckets.is_empty() && s.expired(Instant::now()).is_empty());
    }
}
