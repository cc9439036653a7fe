//! `zklock serve --metrics ADDR`: the figures of `mntr`, in Prometheus text format, at `http://ADDR/metrics`,
//! scraped here with a hand-written HTTP/1.1 request over a plain TCP connection (what Prometheus sends, less).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use zookeeper_client as zk;

use crate::logs::Serve;
use crate::support::*;

/// An HTTP response: status code, headers (names lower-cased), body.
struct Response {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

/// `METHOD PATH` on `addr`, one request per connection.
async fn http(addr: SocketAddr, method: &str, path: &str) -> Response {
    let raw = timeout(EVENTUALLY, async {
        let mut socket = TcpStream::connect(addr)
            .await
            .expect("connect to the metrics address");
        let request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        socket
            .write_all(request.as_bytes())
            .await
            .expect("send the request");
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.expect("read the response");
        raw
    })
    .await
    .expect("the metrics endpoint answered in time");
    let raw = text(&raw);
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not HTTP: {raw:?}"));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// One scrape, parsed: every sample's value by its name (with its labels, if any, as written).
async fn scrape(addr: SocketAddr) -> HashMap<String, f64> {
    let response = http(addr, "GET", "/metrics").await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.headers.get("content-type").map(String::as_str),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    samples(&response.body)
}

/// The samples of a Prometheus text exposition, by name: each of a family a `# TYPE` line (gauge or counter, a
/// counter's name ending in `_total`) declared before it, and none twice.
fn samples(exposition: &str) -> HashMap<String, f64> {
    let mut samples = HashMap::new();
    let mut typed = Vec::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(["gauge", "counter", "summary"].contains(&kind), "{line}");
            // Prometheus's naming rule for counters.
            assert!(
                kind != "counter" || name.ends_with("_total"),
                "counter {name} ends in _total"
            );
            typed.push(name.to_owned());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (name, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("a sample: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line:?}"));
        let family = name.split('{').next().unwrap();
        // A summary's samples are its name with `_sum` and `_count` after it.
        let summary = |suffix| {
            family
                .strip_suffix(suffix)
                .filter(|f| typed.iter().any(|t| t == f))
        };
        let family = summary("_sum").or(summary("_count")).unwrap_or(family);
        assert!(
            typed.iter().any(|t| t == family),
            "{family} has a # TYPE line before it"
        );
        assert!(samples.insert(name.to_owned(), value).is_none(), "{name} twice");
    }
    samples
}

/// `mntr`'s answer as key/value pairs.
async fn mntr(addr: SocketAddr) -> HashMap<String, String> {
    let answer = tokio::task::spawn_blocking(move || {
        zklock_testkit::four_letter_word(addr, "mntr", EVENTUALLY).expect("mntr")
    })
    .await
    .unwrap();
    answer
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The scrape reports what `mntr` reports, and follows the tree: nodes, ephemerals, watches, sessions,
/// connections, the zxid, latency.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_the_figures_of_mntr_and_follow_the_tree() {
    // `mntr` is off by default (4lw.commands.whitelist): this test compares against it.
    let (_dir, config) = temp_file("zoo.cfg", "4lw.commands.whitelist=mntr\n");
    let config = config.to_str().unwrap();
    let serve = Serve::start(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--config",
        config,
    ])
    .await;
    let (addr, metrics) = (serve.addr, serve.metrics.expect("the metrics address"));

    // Nobody connected: nothing moves between the two reads, so they agree exactly.
    let before = scrape(metrics).await;
    let words = mntr(addr).await;
    for key in [
        "zk_max_latency",
        "zk_min_latency",
        "zk_packets_received",
        "zk_packets_sent",
        "zk_num_alive_connections",
        "zk_outstanding_requests",
        "zk_znode_count",
        "zk_watch_count",
        "zk_ephemerals_count",
        "zk_approximate_data_size",
        "zk_global_sessions",
    ] {
        let said: f64 = words[key]
            .parse()
            .unwrap_or_else(|_| panic!("{key}: {}", words[key]));
        // Prometheus names a counter with `_total` after it.
        let name = match key {
            "zk_packets_received" | "zk_packets_sent" => format!("{key}_total"),
            _ => key.to_owned(),
        };
        assert_eq!(before.get(&name), Some(&said), "{name}: mntr says {said}");
    }
    let zxid = i64::from_str_radix(words["zk_last_zxid"].trim_start_matches("0x"), 16).unwrap();
    assert_eq!(before["zk_last_zxid"], zxid as f64);
    assert!(!words["zk_version"].contains("1970"), "{}", words["zk_version"]);
    assert!(before.contains_key(&format!(
        "zk_info{{version=\"{}\",server_state=\"standalone\"}}",
        words["zk_version"]
    )));
    assert!(before.contains_key("zk_uptime"));
    assert_eq!(before["zk_global_sessions"], 0.0);
    assert_eq!(before["zk_num_alive_connections"], 0.0);
    assert_eq!(before["zk_ephemerals_count"], 0.0);

    // One session: three persistent nodes, one ephemeral, one watch.
    let client = client(&addr.to_string()).await;
    let dir = "/metrics-test";
    client.create(dir, b"", &persistent()).await.unwrap();
    client
        .create(&format!("{dir}/a"), b"0123456789", &persistent())
        .await
        .unwrap();
    client
        .create(&format!("{dir}/b"), b"", &persistent())
        .await
        .unwrap();
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    client.create(&format!("{dir}/e"), b"", &ephemeral).await.unwrap();
    let (_, _watcher) = client
        .check_and_watch_stat(&format!("{dir}/missing"))
        .await
        .unwrap();

    // Every reply above has been received, so each figure is settled.
    let after = scrape(metrics).await;
    assert_eq!(
        after["zk_znode_count"],
        before["zk_znode_count"] + 4.0,
        "{after:?}"
    );
    assert_eq!(after["zk_ephemerals_count"], 1.0);
    assert_eq!(after["zk_watch_count"], before["zk_watch_count"] + 1.0);
    assert_eq!(after["zk_global_sessions"], 1.0);
    assert_eq!(after["zk_num_alive_connections"], 1.0);
    assert_eq!(
        after["zk_last_zxid"],
        before["zk_last_zxid"] + 5.0,
        "a session and four creates"
    );
    assert!(after["zk_approximate_data_size"] >= before["zk_approximate_data_size"] + 10.0);
    assert!(after["zk_packets_received_total"] >= before["zk_packets_received_total"] + 5.0);

    assert!(after["zk_avg_latency"] > 0.0, "replies are timed: {after:?}");
    // The log's fsyncs: five writes made durable, each batch with one fsync, timed; none slow on this disk.
    assert!(
        after["fsynctime_count"] >= before["fsynctime_count"] + 1.0,
        "{after:?}"
    );
    assert!(after["fsynctime_sum"] > before["fsynctime_sum"], "{after:?}");
    assert!(after["zk_max_fsync_time"] > 0.0 && after["zk_max_fsync_time"] <= after["fsynctime_sum"]);
    // The process's descriptors: the client's connection among them, under the limit.
    let (open, max) = (
        after["zk_open_file_descriptor_count"],
        after["zk_max_file_descriptor_count"],
    );
    assert!(
        open > before["zk_open_file_descriptor_count"] - 1.0 && open > 3.0 && max >= open,
        "{open} of {max}"
    );
    let words = mntr(addr).await;
    assert_eq!(words["zk_fsync_threshold_exceed_count"], "0");
    assert_ne!(words["zk_max_file_descriptor_count"], "0");
    assert!(after["zk_max_latency"] >= after["zk_min_latency"]);
    assert!(after["zk_uptime"] >= before["zk_uptime"]);

    // Anything else is refused plainly.
    assert_eq!(http(metrics, "GET", "/").await.status, 404);
    let post = http(metrics, "POST", "/metrics").await;
    assert_eq!(post.status, 405);
    assert_eq!(post.headers.get("allow").map(String::as_str), Some("GET, HEAD"));

    drop(client);
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
}

/// A metrics address in use stops `zklock serve` at start: exit 71 and a message naming the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metrics_address_in_use_is_an_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = timeout(
        Duration::from_secs(60),
        zklock(&["serve", "--listen", "127.0.0.1:0", "--metrics", &address]).output(),
    )
    .await
    .expect("zklock serve gave up in time")
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::OS_ERROR), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "zklock serve: cannot serve metrics on {address}: address in use"
        )),
        "{stderr}"
    );
}
