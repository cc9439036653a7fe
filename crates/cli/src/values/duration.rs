//! Durations (`--session-timeout`, `--timeout`, `--kill-after`, `demo --duration`): a number of seconds, or a
//! human-friendly form.

use std::time::Duration;

/// The longest duration any flag takes: beyond it a value is a mistake (or `inf`), not a wish.
const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// A duration flag, as seconds: a bare number of seconds (`30`, `1.5`, for compatibility with earlier versions) or
/// a human-friendly duration (`30s`, `1m30s`, `250ms`, `2h`). Infinite, NaN, negative and absurd (more than a year)
/// values are refused, so that every later conversion to a [`Duration`] is safe.
pub fn seconds(text: &str) -> Result<f64, String> {
    let text = text.trim();
    const EXAMPLES: &str = "use e.g. 30, 1.5, 30s, 1m30s or 250ms";
    let duration = if let Ok(secs) = text.parse::<f64>() {
        if secs.is_nan() {
            return Err(format!("not a number; {EXAMPLES}"));
        }
        if secs.is_infinite() && secs > 0.0 {
            return Err(format!("a duration must be finite (at most a year); {EXAMPLES}"));
        }
        if secs < 0.0 {
            return Err("a duration cannot be negative".to_owned());
        }
        if secs > LONGEST.as_secs_f64() {
            return Err("too long: durations are limited to a year".to_owned());
        }
        Duration::from_secs_f64(secs)
    } else if text.starts_with('-') {
        return Err("a duration cannot be negative".to_owned());
    } else {
        humantime::parse_duration(text).map_err(|err| format!("not a duration ({err}); {EXAMPLES}"))?
    };
    if duration > LONGEST {
        return Err("too long: durations are limited to a year".to_owned());
    }
    Ok(duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_seconds_and_human_forms() {
        for (text, secs) in [
            ("30", 30.0),
            ("1.5", 1.5),
            ("0", 0.0),
            ("30s", 30.0),
            ("1m30s", 90.0),
            ("250ms", 0.25),
            ("2h", 7200.0),
            (" 5 ", 5.0),
        ] {
            assert_eq!(seconds(text), Ok(secs), "{text}");
        }
        for text in [
            "inf",
            "-inf",
            "infinity",
            "NaN",
            "nan",
            "-5",
            "-5s",
            "-0.1",
            "1e30",
            "400days",
            "",
            "5 parsecs",
            "abc",
        ] {
            let err = seconds(text).expect_err(text);
            assert!(!err.is_empty(), "{text}");
        }
        assert!(seconds("1e30").unwrap_err().contains("a year"));
        assert!(seconds("-5").unwrap_err().contains("negative"));
        assert!(seconds("inf").unwrap_err().contains("finite"));
    }
}
