//! Reply latencies: recorded by the connections' outboxes, reported by `srvr`, `stat`, `mntr` and the metrics
//! endpoint (`metrics.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Reply latencies since the server started: each reply's time from being queued (right after its request was
/// read and handled) to being written to the socket, which includes the wait for the fsync of a write. Four
/// relaxed atomic updates per reply; read by `srvr`, `stat`, `mntr` and the metrics endpoint.
#[derive(Debug)]
pub struct Latency {
    count: AtomicU64,
    total_micros: AtomicU64,
    min_micros: AtomicU64,
    max_micros: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            count: AtomicU64::new(0),
            total_micros: AtomicU64::new(0),
            min_micros: AtomicU64::new(u64::MAX),
            max_micros: AtomicU64::new(0),
        }
    }
}

impl Latency {
    /// Counts one reply that took `latency`.
    pub fn record(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_micros.fetch_add(micros, Ordering::Relaxed);
        self.min_micros.fetch_min(micros, Ordering::Relaxed);
        self.max_micros.fetch_max(micros, Ordering::Relaxed);
    }

    /// The figures as ZooKeeper reports them: whole milliseconds for min and max, a fraction for the average; all
    /// 0 before the first reply.
    pub fn read(&self) -> LatencyFigures {
        let count = self.count.load(Ordering::Relaxed);
        if count == 0 {
            return LatencyFigures::default();
        }
        let total = self.total_micros.load(Ordering::Relaxed);
        LatencyFigures {
            min_ms: self.min_micros.load(Ordering::Relaxed) / 1000,
            avg_ms: total as f64 / count as f64 / 1000.0,
            max_ms: self.max_micros.load(Ordering::Relaxed) / 1000,
        }
    }
}

/// Reply latency in milliseconds, as `srvr` (`Latency min/avg/max`) and `mntr` report it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct LatencyFigures {
    /// The shortest, in whole milliseconds.
    pub min_ms: u64,
    /// The average.
    pub avg_ms: f64,
    /// The longest, in whole milliseconds.
    pub max_ms: u64,
}

impl LatencyFigures {
    /// The average as ZooKeeper prints it (`0.0`, `0.1234`).
    pub fn avg_text(&self) -> String {
        let text = format!("{:.4}", self.avg_ms);
        let text = text.trim_end_matches('0');
        if text.ends_with('.') {
            format!("{text}0")
        } else {
            text.to_owned()
        }
    }
}
