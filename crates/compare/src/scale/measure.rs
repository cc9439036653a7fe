//! Small measuring helpers: percentiles, process figures from `/proc`, sizes on disk.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `q`-quantile (0 < q ≤ 1) by the nearest-rank method, in milliseconds; `None` without samples.
pub fn quantile_ms(samples: &[Duration], q: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted: Vec<Duration> = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1].as_secs_f64() * 1e3)
}

/// The median (mean of the middle two for an even count); `None` without values.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// CPU seconds (user + system, all threads) a process has used so far, from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; the fields after its closing parenthesis are fixed:
    // utime and stime are fields 14 and 15 of the whole line, i.e. 11 and 12 after the name.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks_per_second())
}

/// Clock ticks per second of `/proc` times (`getconf CLK_TCK`; 100 on every common Linux).
fn ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Resident set size of a process (`VmRSS` of `/proc/<pid>/status`), MiB.
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// The 1-minute load average, printed next to the figures.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Now, as `date -u` prints it (for the report's header).
pub fn now_utc() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "?".into())
}

/// Every regular file under `dir`, recursively.
fn files(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                out.push((entry.path(), meta));
            }
        }
    }
    out
}

/// Bytes `dir` occupies on disk (allocated blocks, so preallocated log files count whole), recursively.
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    files(dir).iter().map(|(_, m)| m.blocks() * 512).sum()
}

/// The newest snapshot under `dir` — ZooKeeper's `version-2/snapshot.<zxid>` and the embedded server's
/// `snapshot.<zxid>` alike (the highest zxid; temporary files are skipped) — and its length in bytes.
pub fn newest_snapshot(dir: &Path) -> Option<(PathBuf, u64)> {
    files(dir)
        .into_iter()
        .filter_map(|(path, meta)| {
            let name = path.file_name()?.to_str()?;
            let hex = name.strip_prefix("snapshot.")?;
            let zxid = i64::from_str_radix(hex, 16).ok()?;
            Some((zxid, path, meta.len()))
        })
        .max_by_key(|(zxid, _, _)| *zxid)
        .map(|(_, path, len)| (path, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile_ms(&samples, 0.5), Some(50.0));
        assert_eq!(quantile_ms(&samples, 0.99), Some(99.0));
        assert_eq!(quantile_ms(&samples[..1], 0.99), Some(1.0));
        assert_eq!(quantile_ms(&[], 0.5), None);
        assert_eq!(median([3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }

    #[test]
    fn newest_snapshot_is_the_highest_zxid() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("version-2")).unwrap();
        std::fs::write(dir.path().join("version-2/snapshot.9"), [0; 9]).unwrap();
        std::fs::write(dir.path().join("version-2/snapshot.1a"), [0; 26]).unwrap();
        std::fs::write(dir.path().join("version-2/snapshot.1b.tmp"), [0; 3]).unwrap();
        std::fs::write(dir.path().join("version-2/log.1"), [0; 5]).unwrap();
        let (path, len) = newest_snapshot(dir.path()).unwrap();
        assert!(path.ends_with("snapshot.1a"));
        assert_eq!(len, 26);
    }
}
