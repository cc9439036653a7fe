//! One direction of a network link (bytes from A to B) and what the network does to it now.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;

/// What one direction of a link does to the bytes sent over it.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Condition {
    /// Bytes flow.
    #[default]
    Pass,
    /// Bytes stop: connections stay open, nothing sent is delivered, a close is not passed on, new connections
    /// are accepted but not connected through. When the direction passes again, what was held is delivered in
    /// order (as TCP retransmits after a partition heals), unless an end gave up on the connection meanwhile.
    Stop,
    /// Bytes are late: see [`Slowness`].
    Slow(Slowness),
}

/// A slow, lossy direction, as a TCP stream shows it: every chunk of bytes (one read from the sender's socket) is
/// delivered `delay ± jitter` after it was sent; a chunk is "lost" with probability `loss` and then delivered only
/// after a retransmission timeout (200 ms, doubled at each further loss of the same chunk), holding back every
/// byte behind it. Order within one connection is kept — TCP cannot reorder — but chunks of different connections
/// (ZooKeeper's quorum and election connections, two clients) overtake each other freely.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slowness {
    /// The one-way latency.
    pub delay: Duration,
    /// A uniform spread of ± this much around `delay`.
    pub jitter: Duration,
    /// The probability, 0 to 1, that a chunk is lost once (and again, each retransmission).
    pub loss: f64,
}

/// The retransmission timeout a lost chunk waits first (Linux's minimum RTO).
const FIRST_RTO: Duration = Duration::from_millis(200);
/// A chunk is lost at most this many times in a row (the last retransmission always arrives).
const MAX_LOSSES: u32 = 4;

impl Slowness {
    /// When a chunk sent at `sent` is delivered.
    pub(crate) fn due(&self, sent: Instant, rng: &mut impl Rng) -> Instant {
        let jitter = self.jitter.as_secs_f64();
        let spread = if jitter > 0.0 {
            rng.gen_range(-jitter..=jitter)
        } else {
            0.0
        };
        let mut late = Duration::from_secs_f64((self.delay.as_secs_f64() + spread).max(0.0));
        let mut rto = FIRST_RTO;
        for _ in 0..MAX_LOSSES {
            if !rng.gen_bool(self.loss.clamp(0.0, 1.0)) {
                break;
            }
            late += rto;
            rto *= 2;
        }
        sent + late
    }
}

/// One direction of a link, shared by every proxied connection that carries bytes that way (for ZooKeeper
/// members: the quorum and the election connection between two members, whoever opened them).
#[derive(Debug)]
pub struct Direction {
    condition: watch::Sender<Condition>,
    delivered: AtomicU64,
}

impl Direction {
    /// A direction that passes bytes.
    pub fn new() -> Arc<Direction> {
        Arc::new(Direction {
            condition: watch::Sender::new(Condition::Pass),
            delivered: AtomicU64::new(0),
        })
    }

    /// Changes what the direction does, at once for every connection carrying it.
    pub fn set(&self, condition: Condition) {
        tracing::debug!(?condition, "link direction");
        self.condition.send_replace(condition);
    }

    /// What the direction does now.
    pub fn condition(&self) -> Condition {
        *self.condition.borrow()
    }

    /// Bytes delivered this way so far, over every connection.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::SeqCst)
    }

    pub(crate) fn count(&self, bytes: usize) {
        self.delivered.fetch_add(bytes as u64, Ordering::SeqCst);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Condition> {
        self.condition.subscribe()
    }

    /// Waits while the direction is stopped.
    pub(crate) async fn open(&self) {
        let _ = self.subscribe().wait_for(|c| *c != Condition::Stop).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_lossless_chunk_is_due_within_the_jitter() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let slow = Slowness {
            delay: Duration::from_millis(100),
            jitter: Duration::from_millis(20),
            loss: 0.0,
        };
        let now = Instant::now();
        for _ in 0..1000 {
            let late = slow.due(now, &mut rng) - now;
            assert!(
                late >= Duration::from_millis(80) && late <= Duration::from_millis(120),
                "{late:?}"
            );
        }
    }

    #[test]
    fn lost_chunks_wait_for_retransmission() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let slow = Slowness {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.3,
        };
        let now = Instant::now();
        let lates: Vec<Duration> = (0..10_000).map(|_| slow.due(now, &mut rng) - now).collect();
        let lost = lates.iter().filter(|l| **l >= FIRST_RTO).count();
        // 30 % lost at least once, within sampling error.
        assert!((2700..3300).contains(&lost), "{lost}");
        assert!(lates
            .iter()
            .all(|l| *l <= Duration::from_millis(200 + 400 + 800 + 1600)));
        assert!(
            lates.iter().any(|l| *l >= Duration::from_millis(600)),
            "no second loss"
        );
    }
}
