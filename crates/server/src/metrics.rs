//! The server's figures — what `mntr` reports — read in one place ([`Figures::read`]) and told two ways: as
//! `mntr`'s tab-separated pairs (`fourlw.rs`) and in Prometheus text format over HTTP ([`serve`], started by
//! [`Server::serve_metrics`](crate::Server::serve_metrics), which `zklock serve --metrics ADDR` uses).
//!
//! # Why an endpoint that renders on each scrape, and not the `metrics` facade with an exporter
//!
//! The figures already live in the server's state (the tree, the session and watch tables, the connections'
//! outboxes, the latency counters below). Rendering them when Prometheus asks, under the same lock `mntr` takes,
//! gives every scrape the state of that instant and computes each figure in exactly one place. The `metrics`
//! facade with `metrics-exporter-prometheus` would instead need the server to copy every figure into a
//! process-wide recorder — on a timer, so a scrape would see figures up to one period old, and through a global
//! that an embedded server (several of them run in one test process) must not install. So the endpoint is a small
//! HTTP/1 service on hyper, the well-kept HTTP implementation tokio's ecosystem builds on, and the text format
//! (a few `# HELP`/`# TYPE` lines and numbers) is written here.
//!
//! # Names
//!
//! Each Prometheus metric is named as the `mntr` key it mirrors (`zk_znode_count`, `zk_watch_count`, …; a counter
//! with `_total` after it, as Prometheus names counters: `zk_packets_received_total`), with the same value and
//! unit (latencies in milliseconds, uptime in milliseconds, sizes in bytes), so a figure can be checked against
//! `echo mntr | nc host port` (`mntr` must be in `4lw.commands.whitelist`). The two text keys become labels of
//! `zk_info`. `zk_pending_output_bytes` and `zk_slow_connections_closed` are ours. The file descriptor counts are the
//! process's (`/proc/self/fd`, and the soft `RLIMIT_NOFILE` from `/proc/self/limits`), as ZooKeeper's are its JVM's.
//! The log's fsyncs, which ZooKeeper's Prometheus provider exports as the summary `fsynctime` (milliseconds):
//! `fsynctime_count` and `fsynctime_sum` here (no quantiles), with `zk_max_fsync_time` (ours) and `mntr`'s
//! `zk_fsync_threshold_exceed_count` (fsyncs over a second).

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::latency::LatencyFigures;
use crate::shared::Shared;
use crate::state::State;

/// Version we report: the ZooKeeper release whose behaviour we match, tagged as ours. No build date (ZooKeeper
/// adds one): a fixed one would be false, and a real one would make builds differ.
pub const VERSION: &str = concat!("3.8.0-zklock-", env!("CARGO_PKG_VERSION"));

/// ZooKeeper's answer to most words while it is not serving.
pub const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// What `mntr` reports, read at one instant under the state lock.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Figures {
    /// `zk_version`.
    pub version: &'static str,
    /// `zk_server_state`: always `standalone`.
    pub server_state: &'static str,
    /// `zk_min_latency`, `zk_avg_latency`, `zk_max_latency`.
    pub latency: LatencyFigures,
    /// `zk_packets_received`: requests received since start.
    pub packets_received: u64,
    /// `zk_packets_sent`: replies and notifications queued since start.
    pub packets_sent: u64,
    /// `zk_num_alive_connections`: open client connections (four-letter words and HTTP not counted).
    pub alive_connections: usize,
    /// `zk_outstanding_requests`: requests whose reply is not written yet (most wait for their fsync).
    pub outstanding_requests: usize,
    /// `zk_znode_count`: nodes in the tree, counted as ZooKeeper counts them (its node map holds the root twice).
    pub znode_count: usize,
    /// `zk_watch_count`: watches set.
    pub watch_count: usize,
    /// `zk_ephemerals_count`: ephemeral nodes.
    pub ephemerals_count: usize,
    /// `zk_approximate_data_size`: bytes of paths and data in the tree.
    pub approximate_data_size: usize,
    /// `zk_uptime`: milliseconds since the server started.
    pub uptime_ms: u64,
    /// `zk_global_sessions`: open sessions.
    pub global_sessions: usize,
    /// `zk_last_zxid`: the last zxid applied.
    pub last_zxid: i64,
    /// `zk_pending_output_bytes` (ours): bytes of replies and notifications queued on every connection and not yet
    /// written.
    pub pending_output_bytes: usize,
    /// `zk_slow_connections_closed` (ours): connections closed since start because their client did not read its
    /// notifications (`maxClientPendingNotificationBytes`).
    pub slow_connections_closed: u64,
    /// `zk_open_file_descriptor_count` and `zk_max_file_descriptor_count`: the process's open descriptors and its
    /// limit (0 where `/proc` cannot tell).
    pub file_descriptors: (u64, u64),
    /// The log's fsyncs since start (all zero without a data directory's log, or with `forceSync=no`).
    pub fsync: zklock_storage::FsyncFigures,
}

/// The process's open file descriptors and its soft limit, from `/proc` (0 for what it cannot tell).
fn file_descriptors() -> (u64, u64) {
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count() as u64);
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line["Max open files".len()..]
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    (open, limit)
}

/// `zk_znode_count` (and `srvr`'s node count): ZooKeeper's node map holds the root twice ("" and "/"), so its
/// count is one higher than ours.
pub fn znode_count(st: &State) -> usize {
    st.tree.node_count() + 1
}

/// `zk_outstanding_requests` (and `srvr`'s `Outstanding`): replies queued on every connection, not yet written.
pub fn outstanding_requests(st: &State) -> usize {
    st.conns
        .values()
        .map(|c| c.outbox.outstanding.load(Ordering::Relaxed))
        .sum()
}

impl Figures {
    /// Reads every figure; the caller holds the state lock (`st`).
    pub(crate) fn read(shared: &Shared, st: &State) -> Figures {
        Figures {
            version: VERSION,
            server_state: "standalone",
            latency: shared.latency.read(),
            packets_received: st.counters.received,
            packets_sent: st.counters.sent,
            alive_connections: st.conns.len(),
            outstanding_requests: outstanding_requests(st),
            znode_count: znode_count(st),
            watch_count: st.watches.total(),
            ephemerals_count: st.tree.ephemeral_count(),
            approximate_data_size: st.tree.data_size(),
            uptime_ms: u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            global_sessions: st.sessions.len(),
            last_zxid: st.last_zxid,
            pending_output_bytes: st
                .conns
                .values()
                .map(|c| c.outbox.pending_bytes.load(Ordering::Relaxed))
                .sum(),
            slow_connections_closed: shared.notification_limit.closed.load(Ordering::Relaxed),
            file_descriptors: file_descriptors(),
            fsync: st.storage().map(|s| s.fsync_figures()).unwrap_or_default(),
        }
    }

    /// `mntr`'s answer: ZooKeeper's tab-separated key/value lines, in its order.
    pub fn mntr(&self) -> String {
        let pairs: [(&str, String); 21] = [
            ("zk_version", self.version.to_owned()),
            ("zk_server_state", self.server_state.to_owned()),
            ("zk_avg_latency", self.latency.avg_text()),
            ("zk_max_latency", self.latency.max_ms.to_string()),
            ("zk_min_latency", self.latency.min_ms.to_string()),
            ("zk_packets_received", self.packets_received.to_string()),
            ("zk_packets_sent", self.packets_sent.to_string()),
            ("zk_num_alive_connections", self.alive_connections.to_string()),
            ("zk_outstanding_requests", self.outstanding_requests.to_string()),
            ("zk_znode_count", self.znode_count.to_string()),
            ("zk_watch_count", self.watch_count.to_string()),
            ("zk_ephemerals_count", self.ephemerals_count.to_string()),
            ("zk_approximate_data_size", self.approximate_data_size.to_string()),
            (
                "zk_open_file_descriptor_count",
                self.file_descriptors.0.to_string(),
            ),
            (
                "zk_max_file_descriptor_count",
                self.file_descriptors.1.to_string(),
            ),
            ("zk_fsync_threshold_exceed_count", self.fsync.slow.to_string()),
            ("zk_uptime", self.uptime_ms.to_string()),
            ("zk_global_sessions", self.global_sessions.to_string()),
            ("zk_last_zxid", format!("0x{:x}", self.last_zxid)),
            // Ours, after ZooKeeper's keys.
            ("zk_pending_output_bytes", self.pending_output_bytes.to_string()),
            (
                "zk_slow_connections_closed",
                self.slow_connections_closed.to_string(),
            ),
        ];
        let mut s = String::new();
        for (k, v) in pairs {
            let _ = writeln!(s, "{k}\t{v}");
        }
        s
    }

    /// The figures in Prometheus text format (version 0.0.4), named as their `mntr` keys.
    pub fn prometheus(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP zk_info The server's version and state (mntr's zk_version and zk_server_state).\n\
             # TYPE zk_info gauge\n\
             zk_info{{version=\"{}\",server_state=\"{}\"}} 1",
            label_value(self.version),
            label_value(self.server_state)
        );
        let l = &self.latency;
        let f = &self.fsync;
        let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
        let rows: [(&str, &str, &str, String); 20] = [
            ("zk_avg_latency", "gauge", "Average reply latency since start, in milliseconds (from the reply being queued to its being written, fsync included).", l.avg_ms.to_string()),
            ("zk_max_latency", "gauge", "Longest reply latency since start, in whole milliseconds.", l.max_ms.to_string()),
            ("zk_min_latency", "gauge", "Shortest reply latency since start, in whole milliseconds.", l.min_ms.to_string()),
            ("zk_packets_received_total", "counter", "Requests received since start.", self.packets_received.to_string()),
            ("zk_packets_sent_total", "counter", "Replies and notifications sent since start.", self.packets_sent.to_string()),
            ("zk_num_alive_connections", "gauge", "Open client connections.", self.alive_connections.to_string()),
            ("zk_outstanding_requests", "gauge", "Requests whose reply is not written yet.", self.outstanding_requests.to_string()),
            ("zk_znode_count", "gauge", "Nodes in the tree, counted as ZooKeeper counts them (the root twice).", self.znode_count.to_string()),
            ("zk_watch_count", "gauge", "Watches set.", self.watch_count.to_string()),
            ("zk_ephemerals_count", "gauge", "Ephemeral nodes.", self.ephemerals_count.to_string()),
            ("zk_approximate_data_size", "gauge", "Bytes of paths and data in the tree.", self.approximate_data_size.to_string()),
            ("zk_uptime", "gauge", "Milliseconds since the server started.", self.uptime_ms.to_string()),
            ("zk_global_sessions", "gauge", "Open sessions.", self.global_sessions.to_string()),
            ("zk_last_zxid", "gauge", "The last zxid applied.", self.last_zxid.to_string()),
            ("zk_pending_output_bytes", "gauge", "Bytes of replies and notifications queued on every connection, not yet written.", self.pending_output_bytes.to_string()),
            ("zk_slow_connections_closed_total", "counter", "Connections closed because their client did not read its notifications.", self.slow_connections_closed.to_string()),
            ("zk_open_file_descriptor_count", "gauge", "File descriptors the server process has open.", self.file_descriptors.0.to_string()),
            ("zk_max_file_descriptor_count", "gauge", "The server process's limit of open file descriptors (soft RLIMIT_NOFILE).", self.file_descriptors.1.to_string()),
            ("zk_max_fsync_time", "gauge", "Longest fsync of the transaction log since start, in milliseconds.", ms(f.max_us)),
            ("zk_fsync_threshold_exceed_count_total", "counter", "Fsyncs of the transaction log that took longer than a second.", f.slow.to_string()),
        ];
        for (name, kind, help, value) in rows {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        }
        // ZooKeeper's summary, without its quantiles: one fsync per batch of writes made durable.
        let _ = writeln!(
            s,
            "# HELP fsynctime The transaction log's fsyncs, in milliseconds.\n# TYPE fsynctime summary\n\
             fsynctime_sum {}\nfsynctime_count {}",
            ms(f.total_us),
            f.count
        );
        s
    }
}

/// A label value as the text format wants it: backslash, double quote and line feed escaped.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// At most this many scrape connections at once; more are closed at once (a scraper needs one).
const MAX_CONNECTIONS: usize = 64;

/// A scraper must send a request's headers within this long of connecting (or of the previous response, on a
/// kept-alive connection). Short, so that connections holding partial requests free their slots soon: an attacker
/// must keep reconnecting to keep the endpoint full, and a scraper retrying gets in between.
const HEADER_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest a scrape connection lives, kept alive or not: after it, the connection is closed once the request in
/// progress (if any) is answered (Prometheus reconnects at its next scrape).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);

/// Serves `GET /metrics` on `listener` until the server shuts down.
pub(crate) async fn serve(shared: Arc<Shared>, listener: TcpListener) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    if conns.len() >= MAX_CONNECTIONS {
                        tracing::warn!(%peer, limit = MAX_CONNECTIONS, "too many metrics connections; closing");
                        continue;
                    }
                    let shared = shared.clone();
                    conns.spawn(async move {
                        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                            let response = respond(&shared, &request);
                            async move { Ok::<_, Infallible>(response) }
                        });
                        let connection = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT)
                            .serve_connection(TokioIo::new(socket), service);
                        tokio::pin!(connection);
                        let served = tokio::select! {
                            served = connection.as_mut() => served,
                            () = tokio::time::sleep(CONNECTION_LIFETIME) => {
                                connection.as_mut().graceful_shutdown();
                                // Bounded too: a response the client does not read does not keep the slot.
                                match tokio::time::timeout(HEADER_TIMEOUT, connection.as_mut()).await {
                                    Ok(served) => served,
                                    Err(_) => Ok(()),
                                }
                            }
                        };
                        if let Err(error) = served {
                            tracing::debug!(%peer, %error, "metrics connection failed");
                        }
                    });
                }
                Err(error) => {
                    // E.g. EMFILE: back off briefly instead of spinning.
                    tracing::warn!(%error, "accepting a metrics connection failed");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                        _ = shared.shutdown.cancelled() => break,
                    }
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shared.shutdown.cancelled() => break,
        }
    }
    conns.abort_all();
}

/// The answer to one HTTP request: the figures at `/metrics`; `/health` (liveness: 200 while the process answers)
/// and `/ready` (readiness: 200 while it serves, 503 once its log cannot be written), for a load balancer or an
/// orchestrator's probes; 404 elsewhere, 405 for anything but GET and HEAD; and, like `mntr`, ZooKeeper's
/// not-serving line (503) at `/metrics` once the log cannot be written.
fn respond<B>(shared: &Shared, request: &Request<B>) -> Response<String> {
    let path = request.uri().path();
    let (status, body) = if !matches!(path, "/metrics" | "/health" | "/ready") {
        (
            StatusCode::NOT_FOUND,
            "not found; served here: /metrics, /health, /ready\n".to_owned(),
        )
    } else if request.method() != Method::GET && request.method() != Method::HEAD {
        (StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".to_owned())
    } else if path == "/health" {
        (StatusCode::OK, "alive\n".to_owned())
    } else if shared.durable.failed() {
        (StatusCode::SERVICE_UNAVAILABLE, format!("{NOT_SERVING}\n"))
    } else if path == "/ready" {
        (StatusCode::OK, "serving\n".to_owned())
    } else {
        let figures = {
            let st = shared.lock();
            Figures::read(shared, &st)
        };
        (StatusCode::OK, figures.prometheus())
    };
    let content_type = if status == StatusCode::OK {
        "text/plain; version=0.0.4; charset=utf-8"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if status == StatusCode::METHOD_NOT_ALLOWED {
        headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::Latency;

    #[test]
    fn latency_is_reported_in_milliseconds_as_zookeeper_does() {
        let latency = Latency::default();
        assert_eq!(
            latency.read(),
            LatencyFigures::default(),
            "all 0 before any reply"
        );
        assert_eq!(latency.read().avg_text(), "0.0");
        latency.record(Duration::from_micros(500));
        latency.record(Duration::from_micros(2_500));
        let figures = latency.read();
        assert_eq!((figures.min_ms, figures.max_ms), (0, 2));
        assert_eq!(figures.avg_text(), "1.5");
        assert_eq!(figures.avg_ms.to_string(), "1.5");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(label_value("a\nb"), r"a\nb");
    }
}
