//! The log on stderr: `-q`/`-v` (global flags, before or after the command), `ZKLOCK_LOG` winning over them, no
//! colour unless stderr is a terminal and `NO_COLOR` is unset or empty (checked on a real pseudo-terminal made by
//! util-linux's `script`), and `--log-format json` of `serve`, `run` and `elect`.
//!
//! Warnings are provoked for real: a frame whose length prefix is absurd makes the server warn "bad frame; closing
//! connection" and close the connection, so seeing the connection closed means the line has been written.

use std::net::SocketAddr;
use std::process::{Output, Stdio};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Child;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use zklock_testkit::hosts::embedded;
use zklock_testkit::unique_path;

use crate::support::*;

/// A running `zklock serve` with everything it writes to stderr collected in the background.
pub struct Serve {
    child: Child,
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Where the metrics are served, when `--metrics` was given.
    pub metrics: Option<SocketAddr>,
    stderr: JoinHandle<String>,
    /// Everything written to stderr so far.
    said: tokio::sync::watch::Receiver<String>,
}

impl Serve {
    /// Starts `zklock ARGS` (a `serve` command line) with `ZKLOCK_LOG` and `NO_COLOR` unset and waits until it
    /// says where it listens (and, with `--metrics`, where its metrics are).
    pub async fn start(args: &[&str]) -> Serve {
        let mut child = zklock(args)
            .env_remove("ZKLOCK_LOG")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn zklock serve");
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let (said_tx, said) = tokio::sync::watch::channel(String::new());
        let stderr = tokio::spawn(async move {
            let mut line = String::new();
            while matches!(err.read_line(&mut line).await, Ok(n) if n > 0) {
                said_tx.send_modify(|text| text.push_str(&line));
                line.clear();
            }
            said_tx.borrow().clone()
        });
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let line = next_line(&mut lines).await;
        let Some(addr) = line.strip_prefix("zklock server listening on ") else {
            let status = child.wait().await;
            panic!(
                "zklock {args:?} did not start ({status:?}), stdout {line:?}, stderr:\n{}",
                stderr.await.unwrap()
            );
        };
        let addr = addr.trim().parse().expect("address");
        let metrics = if args.contains(&"--metrics") {
            let line = next_line(&mut lines).await;
            let metrics = line
                .strip_prefix("zklock server metrics at http://")
                .and_then(|rest| rest.strip_suffix("/metrics"))
                .unwrap_or_else(|| panic!("the second line names the metrics address: {line:?}"));
            Some(metrics.parse().expect("metrics address"))
        } else {
            None
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Serve {
            child,
            addr,
            metrics,
            stderr,
            said,
        }
    }

    /// `zklock serve` on the data directory `data`, listening on a free port of the loopback.
    pub async fn on_data_dir(data: &std::path::Path) -> Serve {
        let data = data.to_str().expect("utf-8 path");
        Serve::start(&["serve", "--listen", "127.0.0.1:0", "--data-dir", data]).await
    }

    /// The server's process id.
    pub fn pid(&self) -> i32 {
        self.child.id().expect("running") as i32
    }

    /// Waits until the server has written `words` to stderr.
    pub async fn said(&self, words: &str) {
        let mut said = self.said.clone();
        let written = timeout(EVENTUALLY, said.wait_for(|text| text.contains(words))).await;
        let text = self.said.borrow().clone();
        assert!(
            matches!(written, Ok(Ok(_))),
            "zklock serve did not say {words:?}; stderr:\n{text}"
        );
    }

    /// SIGTERM, then waits for the exit; returns the exit code and everything written to stderr.
    pub async fn stop(self) -> (Option<i32>, String) {
        self.stop_with(nix::sys::signal::Signal::SIGTERM).await
    }

    /// Sends `signal`, then waits for the exit; returns the exit code and everything written to stderr.
    pub async fn stop_with(self, signal: nix::sys::signal::Signal) -> (Option<i32>, String) {
        let pid = self.pid();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).expect("signal");
        self.exited().await
    }

    /// Waits for the process to exit on its own; returns the exit code and everything written to stderr.
    pub async fn exited(mut self) -> (Option<i32>, String) {
        let status = timeout(EVENTUALLY, self.child.wait())
            .await
            .expect("zklock serve exited in time")
            .expect("wait");
        (status.code(), self.stderr.await.unwrap())
    }
}

/// The next line of `zklock serve`'s stdout ("" at its end).
async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> String {
    timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("zklock serve said where it listens in time")
        .expect("read stdout")
        .unwrap_or_default()
}

/// Makes the server at `addr` warn: a length prefix beyond any frame limit. Returns once the server has closed the
/// connection, which it does right after writing the warning.
async fn provoke_warning(addr: SocketAddr) {
    timeout(EVENTUALLY, async {
        let mut socket = TcpStream::connect(addr).await.expect("connect");
        socket.write_all(&i32::MAX.to_be_bytes()).await.expect("write");
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest).await;
        assert!(rest.is_empty(), "no answer to a bad frame: {rest:?}");
    })
    .await
    .expect("the server closed the connection in time");
}

const WARNING: &str = "bad frame; closing connection";

fn lines_at<'a>(stderr: &'a str, level: &str) -> Vec<&'a str> {
    let marker = format!(" {level} ");
    stderr.lines().filter(|l| l.contains(&marker)).collect()
}

/// No terminal (stderr is a pipe): plain text, not one escape byte. By default `serve` logs info and warnings;
/// `-q` (given after the command: the flag is global) only errors, so neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_plain_text_and_quiet_silences_warnings() {
    let serve = Serve::start(&["serve", "--listen", "127.0.0.1:0"]).await;
    provoke_warning(serve.addr).await;
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "no ANSI escapes when stderr is not a terminal: {stderr:?}"
    );
    assert!(
        !lines_at(&stderr, "INFO").is_empty(),
        "serve logs info by default: {stderr}"
    );
    let warnings = lines_at(&stderr, "WARN");
    assert!(
        warnings.iter().any(|l| l.contains(WARNING)),
        "the warning: {stderr}"
    );

    let serve = Serve::start(&["serve", "-q", "--listen", "127.0.0.1:0"]).await;
    provoke_warning(serve.addr).await;
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(WARNING), "-q silences warnings: {stderr}");
    assert_eq!(stderr, "", "-q: nothing but errors, and there were none");
}

/// `serve --log-format json`: every line of stderr is one JSON object with the time, the level, the target and
/// the message, and the event's fields beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_log_format_json_writes_one_object_per_line() {
    let serve = Serve::start(&["serve", "--listen", "127.0.0.1:0", "--log-format", "json"]).await;
    let addr = serve.addr;
    provoke_warning(addr).await;
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    let mut objects = Vec::new();
    for line in stderr.lines() {
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|err| panic!("not a JSON line ({err}): {line:?}\nstderr:\n{stderr}"));
        let object = value
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {line}"));
        for key in ["timestamp", "level", "target", "message"] {
            assert!(object.contains_key(key), "{key} missing: {line}");
        }
        objects.push(value);
    }
    assert!(
        objects.len() >= 3,
        "listening, serving, the warning, shutting down: {stderr}"
    );
    let serving = objects
        .iter()
        .find(|o| o["message"] == "zklock server serving")
        .unwrap_or_else(|| panic!("the serving line: {stderr}"));
    assert_eq!(serving["level"], "INFO");
    assert_eq!(serving["addr"], addr.to_string(), "fields beside the message");
    assert_eq!(serving["tls"], "off", "no secure client port");
    assert!(
        objects
            .iter()
            .any(|o| o["level"] == "WARN" && o["message"] == WARNING),
        "the warning: {stderr}"
    );
}

/// `zklock ARGS` to completion with `ZKLOCK_LOG` as given (else unset) and `NO_COLOR` unset.
async fn zklock_with_log(args: &[&str], zklock_log: Option<&str>) -> Output {
    let mut command = zklock(args);
    command.env_remove("ZKLOCK_LOG").env_remove("NO_COLOR");
    if let Some(directives) = zklock_log {
        command.env("ZKLOCK_LOG", directives);
    }
    let out = timeout(EVENTUALLY, command.output())
        .await
        .unwrap_or_else(|_| panic!("zklock {args:?} did not finish"))
        .expect("run zklock");
    assert_eq!(
        out.status.code(),
        Some(0),
        "zklock {args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// `zklock run` logs only warnings by default; `-v` (before or after the command) adds info lines, `-vv` debug
/// lines; `ZKLOCK_LOG` wins over `-v` either way; `-v` with `-q` is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_adds_info_and_zklock_log_wins() {
    let hosts = embedded().await;
    let path = unique_path("logs-verbose");
    // `zklock BEFORE run AFTER --connect HOSTS PATH -- true`
    let run = |before: &[&'static str], after: &[&'static str]| {
        let mut args: Vec<&str> = before.to_vec();
        args.push("run");
        args.extend(after);
        args.extend(["--connect", hosts.as_str(), path.as_str(), "--", "true"]);
        args
    };

    let plain = zklock_with_log(&run(&[], &[]), None).await;
    let stderr = text(&plain.stderr);
    assert!(
        lines_at(&stderr, "INFO").is_empty(),
        "no info by default: {stderr}"
    );

    for (before, after) in [(&["-v"][..], &[][..]), (&[], &["-v"]), (&[], &["--verbose"])] {
        let out = zklock_with_log(&run(before, after), None).await;
        let stderr = text(&out.stderr);
        let flags = (before, after);
        assert!(
            !lines_at(&stderr, "INFO").is_empty(),
            "{flags:?} shows info lines: {stderr}"
        );
        assert!(
            lines_at(&stderr, "DEBUG").is_empty(),
            "{flags:?}: no debug lines: {stderr}"
        );
        assert!(
            !stderr.contains('\x1b'),
            "no ANSI escapes when stderr is not a terminal: {stderr:?}"
        );
    }
    let out = zklock_with_log(&run(&["-vv"], &[]), None).await;
    let stderr = text(&out.stderr);
    assert!(
        !lines_at(&stderr, "DEBUG").is_empty(),
        "-vv shows debug lines: {stderr}"
    );

    let out = zklock_with_log(&run(&["-v"], &[]), Some("off")).await;
    assert_eq!(text(&out.stderr), "", "ZKLOCK_LOG=off wins over -v");
    let out = zklock_with_log(&run(&[], &[]), Some("info")).await;
    let stderr = text(&out.stderr);
    assert!(
        !lines_at(&stderr, "INFO").is_empty(),
        "ZKLOCK_LOG=info alone: {stderr}"
    );

    let out = output(&["-v", "-q", "status", "/x"]).await;
    assert_eq!(
        out.status.code(),
        Some(exit::USAGE),
        "-v and -q conflict: {}",
        text(&out.stderr)
    );
}

/// `zklock ARGS` on a pseudo-terminal (util-linux's `script` gives it one as stdin, stdout and stderr), with
/// `NO_COLOR` as given (else unset); returns what the terminal showed.
async fn on_a_terminal(args: &[&str], no_color: Option<&str>) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let mut line = quote(env!("CARGO_BIN_EXE_zklock"));
    for arg in args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    let mut command = tokio::process::Command::new("script");
    command
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .env_remove("ZKLOCK_LOG")
        .env_remove("NO_COLOR")
        .env_remove("ZKLOCK_CONNECT")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    let out = timeout(EVENTUALLY, command.output())
        .await
        .expect("script finished in time")
        .expect("util-linux's `script` (Debian: bsdutils, an essential package) runs");
    assert_exit(&out, 0, &line);
    text(&out.stdout)
}

/// On a terminal the log is coloured, unless `NO_COLOR` is set to anything but the empty string (no-color.org).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_turns_colour_off_on_a_terminal() {
    let hosts = embedded().await;
    let path = unique_path("logs-no-color");
    let args = [
        "-v",
        "run",
        "--connect",
        hosts.as_str(),
        path.as_str(),
        "--",
        "true",
    ];
    let coloured = on_a_terminal(&args, None).await;
    assert!(coloured.contains("INFO"), "{coloured:?}");
    assert!(coloured.contains("\x1b["), "coloured on a terminal: {coloured:?}");
    let empty = on_a_terminal(&args, Some("")).await;
    assert!(
        empty.contains("\x1b["),
        "an empty NO_COLOR does not count: {empty:?}"
    );
    let plain = on_a_terminal(&args, Some("1")).await;
    assert!(plain.contains("INFO"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR=1: no escapes: {plain:?}");
}

/// `zklock ARGS`, which must exit with `status`; its stderr.
async fn fails(args: Vec<&str>, status: i32) -> String {
    let out = zklock(&args).output().await.expect("run zklock");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{args:?}: {stderr}");
    stderr
}

/// `run`/`elect --log-format json`: a server that is down and a wrong flag end in one JSON line each, the failure
/// with its `exit_status` (69, 64), and `-q` silences only conflicts, as in text; the text form says the same. The
/// lines of a lost lock and of the watchdog are JSON too: `suspend.rs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_and_elect_log_format_json_end_in_one_json_failure() {
    let path = unique_path("logs-json");
    for subcommand in ["run", "elect"] {
        let json = [subcommand, "--log-format", "json"];
        let down = [
            "-c",
            "127.0.0.1:1",
            "--connect-timeout",
            "1s",
            &path,
            "--",
            "true",
        ];
        let stderr = fails([&json[..], &down[..]].concat(), exit::UNAVAILABLE).await;
        let last = json_lines(&stderr).pop().expect("a line");
        assert_eq!(last["level"], "ERROR", "{stderr}");
        assert_eq!(last["exit_status"], exit::UNAVAILABLE, "{stderr}");
        let message = last["message"].as_str().unwrap();
        assert!(message.contains("127.0.0.1:1"), "{stderr}");

        let wrong = ["--no-such-flag", &path, "--", "true"];
        let stderr = fails([&json[..], &wrong[..]].concat(), exit::USAGE).await;
        let lines = json_lines(&stderr);
        assert_eq!(lines.len(), 1, "{stderr}");
        assert_eq!(lines[0]["exit_status"], exit::USAGE, "{stderr}");
        let message = lines[0]["message"].as_str().unwrap();
        assert!(message.contains("--no-such-flag"), "{stderr}");

        // The control: without the flag the same failure is a line of text.
        let stderr = fails([&[subcommand][..], &down[..]].concat(), exit::UNAVAILABLE).await;
        let last = stderr.lines().last().unwrap();
        assert!(last.starts_with("zklock: "), "{stderr}");
        assert!(serde_json::from_str::<serde_json::Value>(last).is_err());
    }
}
