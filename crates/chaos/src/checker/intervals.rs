//! The commands of `zklock run`: never two at once.

use super::Violation;
use crate::history::Interval;

/// Checks that no two commands of `zklock run` were running at the same time.
pub fn check_intervals(intervals: &[Interval]) -> Vec<Violation> {
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by_key(|iv| iv.begin_ns);
    let mut violations = Vec::new();
    let mut latest: Option<&Interval> = None; // the interval reaching furthest so far
    for iv in sorted {
        if let Some(prev) = latest {
            if iv.begin_ns < prev.last_ns {
                violations.push(format!(
                    "two commands at once: {} (token {}) began {:.1} ms before {} (token {}{}) was last seen",
                    iv.name,
                    iv.token,
                    (prev.last_ns - iv.begin_ns) as f64 / 1e6,
                    prev.name,
                    prev.token,
                    if prev.finished { "" } else { ", killed" }
                ));
            }
        }
        if latest.is_none_or(|prev| iv.last_ns > prev.last_ns) {
            latest = Some(iv);
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;

    #[test]
    fn overlapping_commands_are_caught() {
        let iv = |name: &str, begin: u64, last: u64| Interval {
            name: name.into(),
            token: begin as i64,
            begin_ns: begin,
            last_ns: last,
            finished: true,
        };
        assert!(check_intervals(&[iv("a", 0, 10), iv("b", 11, 20), iv("c", 25, 30)]).is_empty());
        let v = check_intervals(&[iv("a", 0, 10), iv("b", 11, 40), iv("c", 25, 30)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("c (token 25) began"), "{v:?}");
    }
}
