//! Retrying ZooKeeper operations across connection loss, with bounded exponential backoff.
//!
//! `zookeeper-client` reconnects by itself; a request that was in flight when the connection broke fails with
//! `ConnectionLoss` and may or may not have been applied. Idempotent operations (reads, deletes of our own node,
//! creates of persistent parents) are simply sent again after a pause; the one non-idempotent operation — creating
//! our sequential node — is recovered by looking for our unique id instead (see `engine/`).

use std::future::Future;
use std::time::{Duration, Instant};

use rand::Rng;
use zookeeper_client as zk;

use crate::base::error::{Error, Result};

/// How to retry an operation that failed because the connection to ZooKeeper was lost.
///
/// Made with [`Default`] and the `with_*` builders (the fields stay readable and settable):
/// ```
/// use std::time::Duration;
/// let policy = zklock::RetryPolicy::default()
///     .with_max_attempts(Some(5))
///     .with_max_elapsed(Some(Duration::from_secs(2)));
/// assert_eq!(policy.max_elapsed, Some(Duration::from_secs(2)));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Pause before the first retry; it doubles on every further attempt.
    pub initial_backoff: Duration,
    /// Upper bound for one pause.
    pub max_backoff: Duration,
    /// Give up after this many attempts (`None`: keep trying until the session expires or the client closes,
    /// which `zookeeper-client` decides after failing to reconnect within the session timeout).
    pub max_attempts: Option<u32>,
    /// Give up once an operation has gone this long without an answer from ZooKeeper (Curator's
    /// `RetryUntilElapsed`; `None`: no time limit, the operation ends when the session does). The clock starts
    /// when a step of the operation sends its first request (a create, a read, a transaction — each step with
    /// its retries has the whole budget), so an operation that waits (for a lock, an item) between steps is not
    /// cut short by its waiting. No pause runs past the budget, no retry
    /// starts after it, and a request still waiting for its reply when it runs out — `zookeeper-client` holds
    /// requests made while it is disconnected until it reconnects — is abandoned: [`Error::RetryBudgetSpent`]
    /// (how many attempts over how long), and the request may or may not be applied later.
    pub max_elapsed: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(1),
            max_attempts: None,
            max_elapsed: None,
        }
    }
}

/// The connection losses in a row of one operation, counted by [`RetryPolicy::pause`] against the policy's
/// `max_attempts`, and the time since its last answer, against `max_elapsed`. A new one (`default`) starts both
/// from now: made when an operation starts, and again when a request of it is answered.
#[derive(Debug)]
pub(crate) struct Attempts {
    /// Losses so far.
    count: u32,
    /// Since when the operation has had no answer.
    since: Instant,
}

impl Default for Attempts {
    fn default() -> Self {
        Attempts {
            count: 0,
            since: Instant::now(),
        }
    }
}

impl Attempts {
    /// The error of an operation whose time budget ran out while a request of it waited for its reply: this
    /// count, and one more attempt (the abandoned one).
    pub(crate) fn timed_out(&self) -> Error {
        Error::RetryBudgetSpent {
            attempts: self.count + 1,
            elapsed: self.since.elapsed(),
            unanswered: true,
        }
    }

    /// The error of an operation whose time budget ran out after its last attempt lost the connection.
    fn budget_spent(&self) -> Error {
        Error::RetryBudgetSpent {
            attempts: self.count,
            elapsed: self.since.elapsed(),
            unanswered: false,
        }
    }

    /// Counts an attempt that did not lose its connection (but must be made again) against `max_attempts`.
    pub(crate) fn count_one(&mut self) {
        self.count += 1;
    }

    /// What is left of `budget` (`None`: no time limit; `Some(ZERO)`: spent).
    fn left(&self, budget: Option<Duration>) -> Option<Duration> {
        budget.map(|budget| budget.saturating_sub(self.since.elapsed()))
    }
}

impl RetryPolicy {
    /// This policy with the first pause `initial_backoff`.
    pub fn with_initial_backoff(mut self, initial_backoff: Duration) -> Self {
        self.initial_backoff = initial_backoff;
        self
    }

    /// This policy with pauses of at most `max_backoff`.
    pub fn with_max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// This policy giving up after `max_attempts` attempts (`None`: no limit).
    pub fn with_max_attempts(mut self, max_attempts: Option<u32>) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// This policy giving up `max_elapsed` after the first connection loss (`None`: no time limit).
    pub fn with_max_elapsed(mut self, max_elapsed: Option<Duration>) -> Self {
        self.max_elapsed = max_elapsed;
        self
    }

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
    pub(crate) async fn pause(&self, attempts: &mut Attempts) -> Result<()> {
        attempts.count += 1;
        if self.max_attempts.is_some_and(|max| attempts.count >= max) {
            return Err(Error::ConnectionLoss {
                attempts: attempts.count,
            });
        }
        let mut pause = self.backoff(attempts.count);
        if let Some(left) = attempts.left(self.max_elapsed) {
            if left.is_zero() {
                tracing::debug!(attempts = attempts.count, "the retry time budget is spent");
                return Err(attempts.budget_spent());
            }
            pause = pause.min(left);
        }
        metrics::counter!(crate::base::metrics::RETRIES).increment(1);
        tokio::time::sleep(pause).await;
        // The pause may have used up the budget: then no retry starts.
        if attempts.left(self.max_elapsed).is_some_and(|left| left.is_zero()) {
            return Err(attempts.budget_spent());
        }
        Ok(())
    }

    /// `request` (one or more requests sent together), if its answer comes within what is left of the time
    /// budget; `None` if it does not (then the operation ends: [`Attempts::timed_out`]).
    pub(crate) async fn within<F: Future>(&self, attempts: &Attempts, request: F) -> Option<F::Output> {
        match attempts.left(self.max_elapsed) {
            Some(left) => tokio::time::timeout(left, request).await.ok(),
            None => Some(request.await),
        }
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
        let mut attempts = Attempts::default();
        loop {
            let Some(reply) = self.within(&attempts, op()).await else {
                return Err(attempts.timed_out());
            };
            match reply {
                Err(err) if is_connection_loss(&err) => {
                    tracing::debug!(%err, op = name, path, "connection lost; retrying");
                    self.pause(&mut attempts).await?;
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

/// Whether `err` says the connection broke under the request: [`Error::is_connection_loss`], or a ZooKeeper error
/// that [`is_connection_loss`] takes for one (a request in flight when the connection was reset fails with
/// `zk::Error::Custom`). It may or may not have been applied, and the session may be alive.
pub(crate) fn broke_connection(err: &Error) -> bool {
    err.is_connection_loss() || err.zookeeper().is_some_and(is_connection_loss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_time_budget_ends_the_pauses() {
        let budget = Duration::from_millis(50);
        let policy = RetryPolicy::default().with_max_elapsed(Some(budget));
        let mut attempts = Attempts::default();
        let mut given_up = None;
        for _ in 0..1000 {
            if let Err(err) = policy.pause(&mut attempts).await {
                given_up = Some(err);
                break;
            }
        }
        assert!(attempts.since.elapsed() >= budget, "gave up early");
        assert!(
            matches!(given_up, Some(Error::RetryBudgetSpent { attempts, unanswered: false, .. }) if attempts >= 2),
            "{given_up:?}"
        );
        // The control: without a budget the same number of pauses all pass.
        let unlimited = RetryPolicy::default().with_max_backoff(Duration::from_millis(1));
        let mut attempts = Attempts::default();
        for _ in 0..20 {
            assert_eq!(unlimited.pause(&mut attempts).await, Ok(()));
        }
    }

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
