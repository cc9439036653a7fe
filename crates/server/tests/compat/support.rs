//! Small helpers shared by the compat tests.

use std::str::FromStr;
use std::time::Duration;

/// Generous bound for "this must happen" waits on a loaded 2-core machine.
pub const WAIT: Duration = Duration::from_secs(30);

/// The environment variable `name` parsed, or `default` when unset or unparsable.
pub fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
