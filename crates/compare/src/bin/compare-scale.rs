//! How costs grow with the work, on the embedded server and real ZooKeeper 3.8 (fsync on), side by side in one run:
//! waiters on one lock (zklock, Curator, zookeeper-client, the naive lock), many independent locks, and servers
//! holding many znodes and sessions. Markdown tables on stdout, progress on stderr, `scale.json` and the
//! `scale-*.svg` charts in `--out` (default `docs/`; with `--quick`, `target/scale-quick/`).
//!
//! ```sh
//! cargo build --release -p zklock-compare
//! target/release/compare-scale            # the full sizes, about 15 minutes on 2 cores
//! target/release/compare-scale --quick    # the CI smoke, about a minute
//! target/release/compare-scale --from-json docs/scale.json   # tables and charts again, nothing measured
//! ```
//! Every option: `compare-scale --help`; the method: `crates/compare/src/scale/` and docs/benchmarks.md.
//!
//! `compare-scale __serve CONFIG` is how the benchmark runs the embedded server in a process of its own (built from
//! this workspace); `ZKLOCK_BIN=path/to/zklock` runs that binary's `serve --config CONFIG` instead.

use anyhow::{Context, Result};
use zklock_compare::scale::{self, servers, Options, Report};

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__serve") {
        let config = args.get(1).context("__serve CONFIG")?;
        return servers::serve_embedded(std::path::Path::new(config));
    }
    let out_given = args.iter().any(|a| a == "--out");
    let (mut options, from_json) = Options::parse(std::mem::take(&mut args))?;
    if let Some(json) = from_json {
        let text = std::fs::read_to_string(&json).with_context(|| format!("reading {}", json.display()))?;
        let report: Report =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", json.display()))?;
        if !out_given {
            options.out = json
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
        }
        return scale::write_outputs(&report, &options.out);
    }
    // Set before any testkit call (it reads the variable once) and before any other thread exists.
    let jvm_dir = tempfile::tempdir()?;
    std::env::set_var(
        zklock_testkit::install::JAVA_ENV,
        servers::stock_jvm(jvm_dir.path(), options.zk_heap.as_deref())?,
    );
    // The load generator runs on one thread, so that the server under test keeps the other core of a small
    // machine (as compare-servers does).
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(scale::run(options))?;
    Ok(())
}
