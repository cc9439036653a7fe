//! `zklock elect --metrics ADDR`: Prometheus metrics over HTTP while the process campaigns — whether it leads (the
//! gauge `zklock_elect_leader{path}`), the term's fencing token, and every metric the library records (acquire
//! waits, guards lost, suspended and resumed: `zklock::describe_metrics`), through the `metrics` facade and its
//! Prometheus exporter.

use std::net::SocketAddr;

use crate::exit::{self, Failure};

/// Starts serving the metrics at `http://addr/metrics` (on the current tokio runtime), with this process not leading
/// `path`.
pub fn serve(addr: SocketAddr, path: &str) -> exit::Result<()> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|err| Failure::new(exit::OS_ERROR, format!("cannot serve metrics at {addr}: {err}")))?;
    zklock::describe_metrics();
    metrics::describe_gauge!(
        LEADER,
        "1 while this process leads the election at the label path, else 0."
    );
    metrics::describe_gauge!(
        TOKEN,
        "The fencing token of this process's term while it leads, else 0."
    );
    leading(path, None);
    tracing::info!(%addr, "serving metrics at http://{addr}/metrics");
    Ok(())
}

/// This process leads `path` with the term's `token` (`Some`), or does not (`None`). Without `serve` a no-op.
pub fn leading(path: &str, token: Option<i64>) {
    let labels = [("path", path.to_owned())];
    metrics::gauge!(LEADER, &labels).set(f64::from(u8::from(token.is_some())));
    metrics::gauge!(TOKEN, &labels).set(token.unwrap_or(0) as f64);
}

const LEADER: &str = "zklock_elect_leader";
const TOKEN: &str = "zklock_elect_fencing_token";
