//! What a `run` or `elect` stopped by its watchdog says (issue 33.3): when the connection to ZooKeeper was down, the
//! outage — to which servers, for how long, and how long an outage the settings tolerate — rather than a guess at a
//! paused or starved process.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{Client, SessionState};

/// The connection of a `run` or `elect`: its servers, its session timeout, and since when it is down (followed in
/// the background for as long as this lives).
pub struct Connection {
    hosts: String,
    session_timeout: Duration,
    down_since: Arc<Mutex<Option<Instant>>>,
    follower: tokio::task::JoinHandle<()>,
}

impl Connection {
    /// Follows `client`'s connection to `hosts`.
    pub fn follow(client: &Client, hosts: &str) -> Connection {
        let down_since = Arc::new(Mutex::new(None));
        let mut states = client.state_watcher();
        let since = down_since.clone();
        let follower = tokio::spawn(async move {
            loop {
                let state = states.changed().await;
                let mut since = since.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                match state {
                    SessionState::Disconnected => {
                        since.get_or_insert_with(Instant::now);
                    }
                    state if state.is_terminated() => return,
                    _ => *since = None,
                }
            }
        });
        Connection {
            hosts: hosts.to_owned(),
            session_timeout: client.session_timeout(),
            down_since,
            follower,
        }
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The connection now, in a message: "the connection to HOSTS has been down for N s", or what else keeps the
    /// leader from confirming our session while we are connected.
    pub fn state_now(&self) -> String {
        let down_since = *self
            .down_since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match down_since {
            Some(since) => format!(
                "the connection to ZooKeeper at {} has been down for {:.1}s",
                self.hosts,
                since.elapsed().as_secs_f64()
            ),
            None => {
                "connected, but we could not confirm our session with the ZooKeeper leader in time".to_owned()
            }
        }
    }

    /// Why the watchdog had to stop the command holding `what` (after `kill_after` of grace; an outage of
    /// `tolerated` stops it).
    pub fn watchdog_cause(&self, what: &str, kill_after: Duration, tolerated: Duration) -> String {
        let down_since = *self
            .down_since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let timeout = self.session_timeout.as_secs_f64();
        match down_since {
            Some(since) => format!(
                "the connection to ZooKeeper at {} has been down for {:.1}s, so {what} could not be confirmed in \
                 time; the watchdog stopped the command before the session could expire. With a session timeout of \
                 {timeout:.1}s and --kill-after {:.1}s an outage of about {:.1}s stops the command: a longer \
                 --session-timeout (or a shorter --kill-after) tolerates a longer one",
                self.hosts,
                since.elapsed().as_secs_f64(),
                kill_after.as_secs_f64(),
                tolerated.as_secs_f64(),
            ),
            None => format!(
                "could not confirm {what} with the ZooKeeper leader in time while connected (was zklock paused or \
                 starved, or its server cut off from the leader?); the watchdog stopped the command"
            ),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.follower.abort();
    }
}
