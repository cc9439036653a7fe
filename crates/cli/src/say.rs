//! zklock's own lines on stderr while it works: "zklock: lost the lock …; stopping the command (pid 4242)".
//!
//! As text each is one plain line, `zklock: ` and the message, whatever the log filter (`-q` included): they say
//! what zklock did to the command or why it failed. With `--log-format json` (`serve`, `run`, `elect`, and the
//! watchdog of `run`/`elect`) each is one JSON object shaped as the log's events are (`timestamp`, `level`,
//! `target`, `message`, then fields such as `exit_status`), so that no line of stderr is anything but JSON. The
//! library's own log events go through the tracing subscriber `main.rs` sets up in the same format.

use std::fmt::Display;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether lines are JSON objects: set once, before any line.
static JSON: AtomicBool = AtomicBool::new(false);

/// From now on every line is a JSON object.
pub fn use_json() {
    JSON.store(true, Ordering::Relaxed);
}

/// Whether lines are JSON objects.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// How much a line matters, for a JSON reader: the log's level names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// Something that went as it should but is worth a line (resumed, campaigning again).
pub fn info(message: impl Display) {
    line(Level::Info, "zklock", &message.to_string(), None);
}

/// Something the user should know of (a command stopped, a release that failed, a flag that does not fit).
pub fn warn(message: impl Display) {
    line(Level::Warn, "zklock", &message.to_string(), None);
}

/// Something lost: the lock or leadership, the command stopped for it.
pub fn error(message: impl Display) {
    line(Level::Error, "zklock", &message.to_string(), None);
}

/// The one line of a failure that ends zklock, by `speaker` (`zklock`, `zklock serve`), with its exit status.
pub fn fatal(speaker: &str, message: &str, status: i32) {
    line(Level::Error, speaker, message, Some(status));
}

/// Not eprintln!: after an SSH logout the terminal is gone and a failed write must not become a panic.
fn line(level: Level, speaker: &str, message: &str, status: Option<i32>) {
    let text = if json() {
        let mut object = serde_json::json!({
            "timestamp": humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string(),
            "level": level.name(),
            "target": "zklock",
            "message": message,
        });
        if let Some(status) = status {
            object["exit_status"] = status.into();
        }
        object.to_string()
    } else {
        format!("{speaker}: {message}")
    };
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
