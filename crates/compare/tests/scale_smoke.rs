//! The CI smoke of the scale benchmark: `compare-scale --quick` (every section, every contender, both servers, at
//! tiny sizes) completes within its bound and reports sane figures. Nothing here judges a timing: the checks are
//! that every measurement produced figures, that percentiles are ordered, that the counts have the shape the
//! recipes promise (a fair lock's release wakes one waiter, the naive lock's wakes the herd) and that the charts
//! were written. Needs real ZooKeeper 3.8, a JDK and the Curator jars, like the rest of the suite (`scripts/test`
//! installs them).

use std::fmt::Debug;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zklock_compare::scale::{Contender, Report, ServerKind};

/// A guard against a hang, not a judgement of speed: the quick run takes about a minute alone, and 230 s on a CI
/// machine loaded by the rest of the suite (the fault campaigns' JVMs, the documentation builds) once ran into the
/// 240 s this used to be.
const BOUND: Duration = Duration::from_secs(480);

/// The row of each server for each of `keys` (`key_of` tells a row's server and key), with its key; a panic names
/// the first one missing.
fn rows_for<'a, R, K: Copy + PartialEq + Debug>(
    rows: &'a [R],
    keys: &[K],
    key_of: impl Fn(&R) -> (ServerKind, K),
) -> Vec<(K, &'a R)> {
    let mut found = Vec::new();
    for server in ServerKind::BOTH {
        for &key in keys {
            let row = rows.iter().find(|r| key_of(r) == (server, key));
            found.push((
                key,
                row.unwrap_or_else(|| panic!("no row for {key:?} on {server:?}")),
            ));
        }
    }
    found
}

#[test]
fn quick_scale_run_completes_with_sane_figures() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let stdout_path = out.path().join("stdout.txt");
    let stderr_path = out.path().join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_compare-scale"))
        .args(["--quick", "--out"])
        .arg(out.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("start compare-scale");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    match status {
        Some(status) if status.success() => {}
        Some(status) => {
            panic!("compare-scale --quick failed ({status}); its stderr:\n{stderr}\nstdout:\n{stdout}")
        }
        None => panic!("compare-scale --quick did not finish within {BOUND:?}; its stderr:\n{stderr}"),
    }
    let json = std::fs::read_to_string(out.path().join("scale.json")).expect("scale.json written");
    let report: Report = serde_json::from_str(&json).expect("scale.json parses as a Report");
    let options = report.meta.options.clone().expect("the options are recorded");
    assert!(options.quick);
    for heading in ["### Waiters", "### Many locks", "### Server size", "### Targets"] {
        assert!(stdout.contains(heading), "no {heading} table in:\n{stdout}");
    }

    // Waiters: every contender on both servers at every size (Curator up to its bound), with figures.
    let sizes: Vec<(Contender, usize)> = (options.contenders.iter())
        .flat_map(|&contender| options.waiters.iter().map(move |&n| (contender, n)))
        .collect();
    for ((contender, n), row) in rows_for(&report.waiters, &sizes, |r| (r.server, (r.contender, r.waiters))) {
        if contender == Contender::Curator && n > options.curator_max {
            assert!(row.status.starts_with("skipped"), "{row:?}");
            continue;
        }
        assert!(row.ok(), "{row:?}\n{stderr}");
        let (p50, p99) = (row.p50_ms.unwrap(), row.p99_ms.unwrap());
        assert!(p50 > 0.0 && p99 >= p50, "{row:?}");
        assert!(row.handoffs >= 1 && row.count_handoffs >= 1, "{row:?}");
        let notifications = row.notifications_per_release.unwrap();
        // The by-type counts add up to the total, and a lock's notifications are deletions.
        let by_type: f64 = row.notifications_by_type.values().sum();
        assert!((by_type - notifications).abs() < 1e-6, "{row:?}");
        assert!(row.notifications_by_type.contains_key("NodeDeleted"), "{row:?}");
        assert!(row.w_ms.unwrap() > 0.0, "W measured: {row:?}");
        assert!(row.bytes_per_acquisition.unwrap() > 0.0, "{row:?}");
        assert!(
            row.requests_per_acquisition.unwrap() >= 2.0,
            "a create and a delete at least: {row:?}"
        );
        let herd = (n - 1) as f64;
        match contender {
            // A release wakes the whole herd: every other session is waiting on its watch.
            Contender::Naive => assert!(notifications >= 0.5 * herd, "{row:?}"),
            // zklock wakes the next holder and the two waiters behind it (their look-aheads), and hears of
            // its own node's deletion: 4 at most.
            Contender::Zklock => assert!((0.5..=4.5).contains(&notifications), "{row:?}"),
            // Curator and zookeeper-client wake one waiter.
            _ => assert!((0.5..=1.5).contains(&notifications), "{row:?}"),
        }
    }

    // Many locks: a rate for every K on both servers.
    for (_, row) in rows_for(&report.locks, &options.lock_paths, |r| (r.server, r.lock_paths)) {
        assert_eq!(row.status, "ok", "{row:?}");
        assert!(row.acquisitions_per_sec.unwrap() > 0.0, "{row:?}");
    }

    // Server size: memory, disk, restart and reads at every size on both servers.
    for (znodes, row) in rows_for(&report.size, &options.znodes, |r| (r.server, r.znodes)) {
        assert!(row.ok(), "{row:?}\n{stderr}");
        assert!(row.rss_mib.unwrap() > 1.0, "{row:?}");
        // A snapshot of the whole tree holds at least the data of every znode.
        assert!(
            row.snapshot_bytes.unwrap() >= (znodes * options.znode_bytes) as u64,
            "{row:?}"
        );
        assert!(row.data_dir_bytes.unwrap() > 0, "{row:?}");
        let (imok, read) = (row.restart_imok_ms.unwrap(), row.restart_read_ms.unwrap());
        assert!(imok > 0.0 && read >= imok, "{row:?}");
        assert!(row.reads > 0, "{row:?}");
        assert!(row.read_p99_ms.unwrap() >= row.read_p50_ms.unwrap(), "{row:?}");
    }

    for chart in [
        "scale-waiters-latency.svg",
        "scale-waiters-cost.svg",
        "scale-locks.svg",
        "scale-size.svg",
    ] {
        let svg = std::fs::read_to_string(out.path().join(chart)).unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{chart} is not an SVG"
        );
        assert!(svg.contains("<text"), "{chart} has no text");
    }
}
