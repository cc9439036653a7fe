//! Retrying ZooKeeper operations across connection loss, with bounded exponential backoff.
//!
//! `zookeeper-client` reconnects by itself; a request that was in flight when the connection broke fails with
//! `ConnectionLoss` and may or may not have been applied. Idempotent operations (reads, deletes of our own node,
//! creates of persistent parents) are simply sent again after a pause; the one non-idempotent operation — creating
//! our sequential node — is recovered by looking for our unique id instead (see `contention.rs`).

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use zookeeper_client as zk;

use crate::error::{Error, Result};

/// How to retry an operation that failed because the connection to ZooKeeper was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Pause before the first retry; it doubles on every further attempt.
    pub initial_backoff: Duration,
    /// Upper bound for one pause.
    pub max_backoff: Duration,
    /// Give up after this many attempts (`None`: keep trying until the session expires or the client closes,
    /// which `zookeeper-client` decides after failing to reconnect within the session timeout).
    pub max_attempts: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(1),
            max_attempts: None,
        }
    }
}

impl RetryPolicy {
    /// The pause before retry number `attempt` (1-based), with ±25 % jitter so that many clients that lost the
    /// same server do not all come back in the same millisecond.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(16);
        let base = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        let jitter = rand::thread_rng().gen_range(0.75..1.25);
        base.mul_f64(jitter)
    }

    /// Counts one more attempt after a connection loss and pauses; fails once the policy gives up.
    ///
    /// Every retry after a connection loss passes here: the one place of `zklock_connection_loss_retries_total` (see
    /// the crate documentation).
    pub(crate) async fn pause(&self, attempt: &mut u32) -> Result<()> {
        *attempt += 1;
        if self.max_attempts.is_some_and(|max| *attempt >= max) {
            return Err(Error::ConnectionLoss { attempts: *attempt });
        }
        metrics::counter!("zklock_connection_loss_retries_total").increment(1);
        tokio::time::sleep(self.backoff(*attempt)).await;
        Ok(())
    }

    /// Runs `op` until it succeeds, fails with anything but connection loss (including a request in flight when
    /// the connection broke), or the policy gives up. Only for idempotent operations.
    ///
    /// An error ZooKeeper answers is [`Error::ZooKeeper`] without an operation or path: [`run_at`](Self::run_at)
    /// names them.
    pub async fn run<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, zk::Error>>,
    {
        self.run_at("", "", op).await
    }

    /// [`run`](Self::run) for the ZooKeeper operation `name` (`create`, `getData`…) on `path`: an error ZooKeeper
    /// answers names them (`not authorized to create /locks/a`).
    pub async fn run_at<T, F, Fut>(&self, name: &'static str, path: &str, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, zk::Error>>,
    {
        let mut attempt = 0;
        loop {
            match op().await {
                Err(err) if is_connection_loss(&err) => {
                    tracing::debug!(%err, op = name, path, "connection lost; retrying");
                    self.pause(&mut attempt).await?;
                }
                other => return other.map_err(|err| Error::zk(name, path, err)),
            }
        }
    }
}

/// Whether a request failed because the connection broke, so that it may or may not have been applied.
///
/// `zookeeper-client` reports `ConnectionLoss` for requests made while disconnected; a request in flight when the
/// connection is reset or times out fails with the underlying error wrapped in `Error::Custom` (e.g. "no response
/// from connection in 4000ms"). Both mean the same thing to a recipe.
pub(crate) fn is_connection_loss(err: &zk::Error) -> bool {
    matches!(err, zk::Error::ConnectionLoss | zk::Error::Custom(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_bounded() {
        let policy = RetryPolicy::default();
        for attempt in 1..40 {
            let pause = policy.backoff(attempt);
            assert!(
                pause <= policy.max_backoff.mul_f64(1.25),
                "attempt {attempt}: {pause:?}"
            );
        }
        assert!(policy.backoff(1) < Duration::from_millis(13));
        assert!(policy.backoff(5) >= Duration::from_millis(120));
    }
}
