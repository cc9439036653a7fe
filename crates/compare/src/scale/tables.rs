//! The report as Markdown tables, ready to paste into docs/benchmarks.md.

use std::fmt::Write as _;

use super::locks::LocksRow;
use super::servers::ServerKind;
use super::size::SizeRow;
use super::waiters::{Contender, WaitersRow};
use super::Report;

/// A figure with `digits` decimals, or "–".
fn cell(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "–".into(),
    }
}

/// A figure with about three significant digits.
fn sig(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            let digits = if v.abs() >= 100.0 {
                0
            } else if v.abs() >= 10.0 {
                1
            } else if v.abs() >= 1.0 {
                2
            } else {
                3
            };
            format!("{v:.digits$}")
        }
        _ => "–".into(),
    }
}

/// `a / b` as "1.23×", or "–".
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

fn header(out: &mut String, columns: &[&str]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let _ = write!(out, "|---|");
    for _ in 1..columns.len() {
        out.push_str("---:|");
    }
    out.push('\n');
}

fn row(out: &mut String, cells: &[String]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

/// A note under a table: why the run `what` on `server` has no (or not all) figures.
fn no_figures(out: &mut String, what: &str, server: ServerKind, status: &str) {
    let _ = writeln!(out, "\n- {what} on {}: {status}", server.label());
}

/// Every table of the report, with a heading per section and the targets at the end.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let meta = &report.meta;
    let _ = writeln!(
        out,
        "compare-scale{} of {}: {} CPUs, load average {} before, {} after; {:.0} s",
        if meta.options.as_ref().is_some_and(|o| o.quick) {
            " --quick"
        } else {
            ""
        },
        meta.date,
        meta.cpus,
        meta.load_before,
        meta.load_after,
        meta.seconds
    );
    if !report.waiters.is_empty() {
        waiters(&mut out, &report.waiters);
    }
    if !report.locks.is_empty() {
        locks(&mut out, &report.locks);
    }
    if !report.size.is_empty() {
        size(&mut out, &report.size);
    }
    for timeline in &report.timelines {
        out.push_str(&super::timeline::markdown(timeline));
    }
    targets(&mut out, report);
    out
}

fn find_waiters(
    rows: &[WaitersRow],
    server: ServerKind,
    contender: Contender,
    n: usize,
) -> Option<&WaitersRow> {
    rows.iter()
        .find(|r| r.server == server && r.contender == contender && r.waiters == n && r.ok())
}

fn waiters(out: &mut String, rows: &[WaitersRow]) {
    let _ = writeln!(out, "\n### Waiters: N sessions queued on one lock\n");
    header(
        out,
        &[
            "lock",
            "N",
            "hand-off p50 ms: ZooKeeper",
            "embedded",
            "W ms: ZooKeeper",
            "embedded",
            "W after the hold ms: ZooKeeper",
            "embedded",
            "p50 ÷ W: ZooKeeper",
            "embedded",
            "p99 ms: ZooKeeper",
            "embedded",
            "notifications / release: ZooKeeper",
            "embedded",
            "KiB read / acquisition: ZooKeeper",
            "embedded",
            "requests / acquisition: ZooKeeper",
            "embedded",
        ],
    );
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.waiters).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for contender in Contender::ALL {
        if !rows.iter().any(|r| r.contender == contender) {
            continue;
        }
        for &n in &sizes {
            let both = ServerKind::BOTH.map(|s| find_waiters(rows, s, contender, n));
            let pick = |f: &dyn Fn(&WaitersRow) -> Option<f64>| both.map(|r| r.and_then(f));
            let [p50, w, w_idle, over_w, p99, notes, kib, requests] = [
                pick(&|r| r.p50_ms).map(sig),
                pick(&|r| r.w_ms).map(sig),
                pick(&|r| r.w_idle_ms).map(sig),
                pick(&|r| r.p50_over_w()).map(|v| cell(v, 2)),
                pick(&|r| r.p99_ms).map(sig),
                pick(&|r| r.notifications_per_release).map(sig),
                pick(&|r| r.bytes_per_acquisition.map(|b| b / 1024.0)).map(sig),
                pick(&|r| r.requests_per_acquisition).map(sig),
            ];
            let mut cells = vec![contender.label().to_string(), n.to_string()];
            for pair in [p50, w, w_idle, over_w, p99, notes, kib, requests] {
                cells.extend(pair);
            }
            row(out, &cells);
        }
    }
    let _ = writeln!(
        out,
        "\nPer contended acquisition, by kind (the counting run): requests sent, and notifications received per \
         release.\n"
    );
    header(out, &["lock", "N", "server", "requests", "notifications"]);
    let kinds = |map: &std::collections::BTreeMap<String, f64>| {
        map.iter()
            .map(|(kind, n)| format!("{kind} {n:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for contender in Contender::ALL {
        for &n in &sizes {
            for server in ServerKind::BOTH {
                if let Some(r) = find_waiters(rows, server, contender, n) {
                    row(
                        out,
                        &[
                            contender.label().to_string(),
                            n.to_string(),
                            server.label().to_string(),
                            kinds(&r.requests_by_kind),
                            kinds(&r.notifications_by_type),
                        ],
                    );
                }
            }
        }
    }
    let problems: Vec<&WaitersRow> = rows.iter().filter(|r| !r.ok()).collect();
    if !problems.is_empty() {
        let _ = writeln!(out);
        for r in problems {
            let _ = writeln!(
                out,
                "- {} on {}, N = {}: {}",
                r.contender.label(),
                r.server.label(),
                r.waiters,
                r.status
            );
        }
    }
}

fn find_locks(rows: &[LocksRow], server: ServerKind, k: usize) -> Option<&LocksRow> {
    rows.iter()
        .find(|r| r.server == server && r.lock_paths == k && r.status == "ok")
}

fn locks(out: &mut String, rows: &[LocksRow]) {
    let sessions = rows.first().map_or(0, |r| r.sessions);
    let _ = writeln!(out, "\n### Many locks: K lock paths, {sessions} sessions\n");
    header(
        out,
        &[
            "lock paths K",
            "acquisitions/s: ZooKeeper",
            "embedded",
            "embedded / ZooKeeper",
            "server CPU ms per 1,000: ZooKeeper",
            "embedded",
            "load generator CPU ms per 1,000: ZooKeeper",
            "embedded",
        ],
    );
    let mut ks: Vec<usize> = rows.iter().map(|r| r.lock_paths).collect();
    ks.sort_unstable();
    ks.dedup();
    for k in ks {
        let [zk, emb] = ServerKind::BOTH.map(|s| find_locks(rows, s, k));
        let rate = |r: Option<&LocksRow>| r.and_then(|r| r.acquisitions_per_sec);
        let cpu = |r: Option<&LocksRow>| r.and_then(|r| r.server_cpu_ms_per_1000);
        let load_cpu = |r: Option<&LocksRow>| r.and_then(|r| r.load_cpu_ms_per_1000);
        row(
            out,
            &[
                k.to_string(),
                cell(rate(zk), 0),
                cell(rate(emb), 0),
                ratio(rate(emb), rate(zk)),
                cell(cpu(zk), 0),
                cell(cpu(emb), 0),
                cell(load_cpu(zk), 0),
                cell(load_cpu(emb), 0),
            ],
        );
    }
    for r in rows.iter().filter(|r| r.status != "ok") {
        no_figures(out, &format!("K = {}", r.lock_paths), r.server, &r.status);
    }
}

fn find_size(rows: &[SizeRow], server: ServerKind, znodes: usize) -> Option<&SizeRow> {
    rows.iter()
        .find(|r| r.server == server && r.znodes == znodes && r.ok())
}

/// A column of the size tables: one figure of both servers, or their ratio.
enum SizeColumn {
    /// `label: ZooKeeper` and `embedded`, each figure shown by the function.
    Both(
        &'static str,
        fn(&SizeRow) -> Option<f64>,
        fn(Option<f64>) -> String,
    ),
    /// `embedded / ZooKeeper` of the figure.
    Ratio(fn(&SizeRow) -> Option<f64>),
}

/// One size table: its header from `columns`, then a row per znode count.
fn size_table(out: &mut String, rows: &[SizeRow], sizes: &[usize], columns: &[SizeColumn]) {
    let mut names = vec!["znodes".to_string()];
    for column in columns {
        match column {
            SizeColumn::Both(label, ..) => names.extend([format!("{label}: ZooKeeper"), "embedded".into()]),
            SizeColumn::Ratio(_) => names.push("embedded / ZooKeeper".into()),
        }
    }
    header(out, &names.iter().map(String::as_str).collect::<Vec<_>>());
    for &n in sizes {
        let [zk, emb] = ServerKind::BOTH.map(|s| find_size(rows, s, n));
        let mut cells = vec![n.to_string()];
        for column in columns {
            match *column {
                SizeColumn::Both(_, figure, show) => {
                    cells.extend([show(zk.and_then(figure)), show(emb.and_then(figure))])
                }
                SizeColumn::Ratio(figure) => cells.push(ratio(emb.and_then(figure), zk.and_then(figure))),
            }
        }
        row(out, &cells);
    }
}

fn mb(bytes: Option<u64>) -> Option<f64> {
    bytes.map(|b| b as f64 / 1e6)
}

fn size(out: &mut String, rows: &[SizeRow]) {
    use SizeColumn::{Both, Ratio};
    let sessions = rows.first().map_or(0, |r| r.sessions);
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.znodes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let _ = writeln!(
        out,
        "\n### Server size: memory and disk ({sessions} sessions connected)\n"
    );
    size_table(
        out,
        rows,
        &sizes,
        &[
            Both("resident MiB", |r| r.rss_mib, |v| cell(v, 1)),
            Ratio(|r| r.rss_mib),
            Both("snapshot MB", |r| mb(r.snapshot_bytes), |v| cell(v, 1)),
            Both("data directory MB", |r| mb(r.data_dir_bytes), |v| cell(v, 1)),
            Both("load creates/s", |r| r.load_per_sec, |v| cell(v, 0)),
        ],
    );
    let _ = writeln!(out, "\n### Server size: restart and reads\n");
    size_table(
        out,
        rows,
        &sizes,
        &[
            Both("restart to imok ms", |r| r.restart_imok_ms, |v| cell(v, 0)),
            Both("restart to first read ms", |r| r.restart_read_ms, |v| cell(v, 0)),
            Ratio(|r| r.restart_read_ms),
            Both("read p50 ms", |r| r.read_p50_ms, sig),
            Both("read p99 ms", |r| r.read_p99_ms, sig),
        ],
    );
    for r in rows.iter().filter(|r| !r.ok()) {
        no_figures(out, &format!("{} znodes", r.znodes), r.server, &r.status);
    }
}

/// The four targets, as ratios from this run (at the sizes it measured).
fn targets(out: &mut String, report: &Report) {
    let mut lines: Vec<[String; 3]> = Vec::new();
    let target = |what: String, ratio: f64, met: bool| {
        [
            what,
            format!("{ratio:.2}×"),
            if met { "met" } else { "not met" }.to_string(),
        ]
    };
    // 1. Hand-off p50 at 1,000 waiters ≤ 1.2× at 10 (zklock), per server.
    let sizes: Vec<usize> = report
        .waiters
        .iter()
        .filter(|r| r.contender == Contender::Zklock && r.ok())
        .map(|r| r.waiters)
        .collect();
    let small = sizes.iter().min().copied();
    let large = sizes.iter().filter(|&&n| n <= 1000).max().copied();
    if let (Some(small), Some(large)) = (small, large.filter(|&l| Some(l) > small)) {
        for server in ServerKind::BOTH {
            let p = |n| find_waiters(&report.waiters, server, Contender::Zklock, n).and_then(|r| r.p50_ms);
            if let (Some(a), Some(b)) = (p(large), p(small)) {
                let what = format!(
                    "zklock hand-off p50 at {large} waiters ≤ 1.2× at {small} ({})",
                    server.label()
                );
                lines.push(target(what, a / b, a / b <= 1.2));
            }
        }
    }
    // Issue 20: the hand-off p50 ≤ 2× `W` of the same server, at every N measured.
    for r in report
        .waiters
        .iter()
        .filter(|r| r.contender == Contender::Zklock && r.ok())
    {
        if let Some(over) = r.p50_over_w() {
            let what = format!(
                "zklock hand-off p50 ≤ 2× W at {} waiters ({})",
                r.waiters,
                r.server.label()
            );
            lines.push(target(what, over, over <= 2.0));
        }
    }
    // 2. Embedded ≥ 2× ZooKeeper's acquisitions/s with 1,000 lock paths.
    if let Some(k) = report
        .locks
        .iter()
        .map(|r| r.lock_paths)
        .filter(|&k| k <= 1000)
        .max()
    {
        let rate = |s| find_locks(&report.locks, s, k).and_then(|r| r.acquisitions_per_sec);
        if let (Some(emb), Some(zk)) = (rate(ServerKind::Embedded), rate(ServerKind::Zookeeper)) {
            let what = format!("embedded ≥ 2× ZooKeeper's acquisitions/s with {k} lock paths");
            lines.push(target(what, emb / zk, emb / zk >= 2.0));
        }
    }
    // 3. and 4. at the largest size measured on both servers.
    let largest = report
        .size
        .iter()
        .map(|r| r.znodes)
        .filter(|&n| {
            ServerKind::BOTH
                .iter()
                .all(|&s| find_size(&report.size, s, n).is_some())
        })
        .max();
    if let Some(n) = largest {
        // The embedded server's figure over ZooKeeper's.
        let ratio = |f: fn(&SizeRow) -> Option<f64>| {
            let get = |s| find_size(&report.size, s, n).and_then(f);
            Some(get(ServerKind::Embedded)? / get(ServerKind::Zookeeper)?)
        };
        if let Some(r) = ratio(|r| r.rss_mib) {
            let what = format!("embedded resident memory ≤ 1/5 of ZooKeeper's with {n} znodes");
            lines.push(target(what, r, r <= 0.2));
        }
        if let Some(r) = ratio(|r| r.restart_read_ms) {
            let what = format!("embedded restart (to first read) ≤ 1/4 of ZooKeeper's with {n} znodes");
            lines.push(target(what, r, r <= 0.25));
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n### Targets (ratios in this run)\n");
    header(out, &["target", "measured", ""]);
    for line in lines {
        row(out, &line);
    }
}
