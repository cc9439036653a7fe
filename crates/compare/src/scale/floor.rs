//! `W`, the physical floor of a lock hand-off on one server: the p50 of a sequential `delete` round trip with
//! `zookeeper-client`, from this process (the load generator's one thread), on the same server as the hand-offs.
//! A hand-off cannot be shorter: the holder's delete must be durable before the server notifies the next waiter.
//! Each waiters row is reported as a ratio to the `W` of its server, measured in the same run.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use zookeeper_client::{self as zk, Acls, CreateMode};

use super::servers::{ServerKind, ServerUnderTest};
use super::sessions::connect;

/// `W` of one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteFloor {
    /// The server.
    pub server: ServerKind,
    /// Deletes timed.
    pub samples: usize,
    /// p50 of a sequential `delete` round trip, ms: `W`.
    pub p50_ms: Option<f64>,
    /// p99 of the same, ms.
    pub p99_ms: Option<f64>,
}

/// Deletes timed for `W` (one after the other; each node created untimed first).
pub const DELETES: usize = 300;

/// Measures `W` on `server`: `deletes` persistent nodes, each created and then deleted, the delete timed.
pub async fn measure(server: &ServerUnderTest, deletes: usize) -> Result<WriteFloor> {
    measure_after(server, deletes, Duration::ZERO).await
}

/// Like [`measure`], with a pause of `idle` between each create and its timed delete: the delete then finds the
/// machine as a hand-off after a holder's `--hold-ms` finds it (threads parked, caches cold), not warm from the
/// request before.
pub async fn measure_after(server: &ServerUnderTest, deletes: usize, idle: Duration) -> Result<WriteFloor> {
    let client = connect(&server.hosts()).await?;
    let dir = zklock_bench::fresh_path("/compare-scale-floor");
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create(&dir, b"", &persistent).await?;
    let mut samples: Vec<Duration> = Vec::with_capacity(deletes);
    let path = format!("{dir}/n");
    for _ in 0..deletes {
        client.create(&path, b"", &persistent).await?;
        if !idle.is_zero() {
            tokio::time::sleep(idle).await;
        }
        let started = Instant::now();
        client.delete(&path, None).await?;
        samples.push(started.elapsed());
    }
    match client.delete(&dir, None).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(e) => return Err(e.into()),
    }
    zklock_bench::close(client).await;
    Ok(WriteFloor {
        server: server.kind,
        samples: samples.len(),
        p50_ms: super::measure::quantile_ms(&samples, 0.5),
        p99_ms: super::measure::quantile_ms(&samples, 0.99),
    })
}
