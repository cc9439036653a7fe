//! What the section reports: the contenders ([`Contender`]) and one row per (server, contender, N)
//! ([`WaitersRow`]).

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::scale::servers::ServerKind;

/// A lock implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contender {
    /// `zklock::Mutex`, released with `release().await`.
    Zklock,
    /// Apache Curator 5.4's `InterProcessMutex` (`CuratorPeer.java`, `bench waiters`), one JVM.
    Curator,
    /// zookeeper-client 0.11's `Client::lock` (Curator names), released by dropping it.
    ZookeeperClient,
    /// The design documents' naive lock ([`crate::naive`]): every release wakes every waiter.
    Naive,
}

impl Contender {
    /// Every contender.
    pub const ALL: [Contender; 4] = [
        Contender::Zklock,
        Contender::Curator,
        Contender::ZookeeperClient,
        Contender::Naive,
    ];

    /// The name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Contender::Zklock => "zklock",
            Contender::Curator => "Curator",
            Contender::ZookeeperClient => "zookeeper-client",
            Contender::Naive => "naive lock",
        }
    }

    /// From the command line's spelling.
    pub fn parse(name: &str) -> Result<Contender> {
        Ok(match name {
            "zklock" => Contender::Zklock,
            "curator" => Contender::Curator,
            "zookeeper-client" => Contender::ZookeeperClient,
            "naive" => Contender::Naive,
            other => bail!("--contenders: {other}? (zklock, curator, zookeeper-client, naive)"),
        })
    }
}

/// One row of the waiters section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitersRow {
    /// The server.
    pub server: ServerKind,
    /// The lock.
    pub contender: Contender,
    /// Sessions queued on the lock.
    pub waiters: usize,
    /// `ok`, or why there are no figures (`failed: …`, `skipped: …`).
    pub status: String,
    /// Hand-offs timed.
    pub handoffs: u64,
    /// Length of the timed window, seconds.
    pub seconds: f64,
    /// Hand-off latency, median, ms.
    pub p50_ms: Option<f64>,
    /// Hand-off latency, 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Hand-offs of the counting run.
    pub count_handoffs: u64,
    /// Watch notifications the server sent per release.
    pub notifications_per_release: Option<f64>,
    /// Bytes the server sent to all clients per acquisition.
    pub bytes_per_acquisition: Option<f64>,
    /// Requests (pings excluded) the clients sent per acquisition.
    pub requests_per_acquisition: Option<f64>,
    /// Requests per acquisition by kind (`create`, `getChildren`, …), from the counting run.
    #[serde(default)]
    pub requests_by_kind: std::collections::BTreeMap<String, f64>,
    /// Notifications per release by event type (`NodeDeleted`, `NodeDataChanged`, …), from the counting run.
    #[serde(default)]
    pub notifications_by_type: std::collections::BTreeMap<String, f64>,
    /// Seconds to connect and queue everybody (timed run).
    pub setup_seconds: Option<f64>,
    /// `W` of this server, measured just before this row's timed run: p50 of a sequential `delete` round trip with
    /// zookeeper-client ([`floor`](crate::scale::floor)), ms.
    #[serde(default)]
    pub w_ms: Option<f64>,
    /// The same with each delete sent `--hold-ms` after the one before ended ([`floor::measure_after`](crate::scale::floor::measure_after)): what a
    /// delete costs a machine that has been idle as long as a holder holds, ms (`None` when `--hold-ms` is 0).
    #[serde(default)]
    pub w_idle_ms: Option<f64>,
}

impl WaitersRow {
    pub(super) fn empty(
        server: ServerKind,
        contender: Contender,
        waiters: usize,
        status: String,
    ) -> WaitersRow {
        WaitersRow {
            server,
            contender,
            waiters,
            status,
            handoffs: 0,
            seconds: 0.0,
            p50_ms: None,
            p99_ms: None,
            count_handoffs: 0,
            notifications_per_release: None,
            bytes_per_acquisition: None,
            requests_per_acquisition: None,
            requests_by_kind: Default::default(),
            notifications_by_type: Default::default(),
            setup_seconds: None,
            w_ms: None,
            w_idle_ms: None,
        }
    }

    /// Whether the row has figures.
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }

    /// The hand-off p50 as a multiple of `W`.
    pub fn p50_over_w(&self) -> Option<f64> {
        match (self.p50_ms, self.w_ms) {
            (Some(p50), Some(w)) if w > 0.0 => Some(p50 / w),
            _ => None,
        }
    }
}
