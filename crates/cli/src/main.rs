//! `zklock`: the command line. The work happens in the library crates; this is glue.

mod bench;
mod child;
mod cli;
mod counter;
mod demo;
mod discovery;
mod elect;
mod exit;
mod leader_metrics;
mod lines;
mod manual;
mod notify;
mod outage;
mod reap;
mod redact;
mod revoke;
mod run;
mod say;
mod serve;
mod status;
mod status_tree;
mod status_watch;
mod supervise;
mod terminal;
mod values;
mod watch;
mod zk;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

/// The hidden command `zklock run` and `zklock elect` start their watchdog with (see `child.rs`). It is not a clap
/// subcommand, so that no `--help`, completion script or man page offers it.
const WATCHDOG: &str = "__watchdog";

fn main() -> ExitCode {
    if let Some(json) = watchdog_invocation() {
        if json {
            say::use_json();
        }
        return ExitCode::from(u8::try_from(child::watchdog()).unwrap_or(1));
    }
    let cli = Cli::parse_args(std::env::args_os()).unwrap_or_else(|err| usage_error(err));
    if json_log(&cli) {
        say::use_json();
    }
    init_logging(&cli);
    let speaker = speaker(&cli.command);
    let quiet = cli.quiet;
    let result = match before_connecting(&cli.command) {
        Err(failure) => Err(failure),
        Ok(()) => dispatch(cli.command),
    };
    // The one place a failure is told.
    let status = result.unwrap_or_else(|failure| {
        // -q: a busy lock (or a timeout) is told by the status alone.
        if !(quiet && failure.conflict) {
            say::fatal(speaker, &failure.message, failure.status);
        }
        failure.status
    });
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}

fn dispatch(command: Command) -> exit::Result {
    if matches!(
        command,
        Command::Status(_) | Command::Man | Command::Completions { .. }
    ) {
        quiet_on_closed_pipe();
    }
    match command {
        // `run` forks the user's command: its parent-death signal is tied to the forking *thread*, so run on a
        // current-thread runtime on the main thread, which lives exactly as long as the process.
        Command::Run(args) => current_thread().block_on(run::run(args)),
        // Like `run`: the command is forked from the main thread.
        Command::Elect(args) => current_thread().block_on(elect::elect(args)),
        Command::Status(args) if args.watch => multi_thread()
            .block_on(status_watch::status_watch(args))
            .map_err(Failure::from),
        Command::Status(args) => multi_thread()
            .block_on(status::status(args))
            .map_err(Failure::from),
        Command::Counter(args) => multi_thread().block_on(counter::counter(args)),
        Command::Demo(args) => multi_thread().block_on(demo::demo(args)),
        Command::Bench(args) => multi_thread().block_on(bench::bench(args)),
        Command::Serve(args) => multi_thread().block_on(serve::serve(args)),
        Command::Revoke(args) => multi_thread().block_on(revoke::revoke(args)),
        Command::Reap(args) => multi_thread().block_on(reap::reap(args)),
        // Like `run`: the command is forked from the main thread.
        Command::Watch(args) => current_thread().block_on(watch::watch(args)),
        // Like `run`: the command is forked from the main thread.
        Command::Register(args) => current_thread().block_on(discovery::register(args)),
        Command::Discover(args) => multi_thread().block_on(discovery::discover(args)),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man => manual::man(),
    }
}

/// `zklock status | head -1`, `zklock man | less` quit early: the commands that only read and print end quietly
/// when their reader goes away, as `ls | head` does — SIGPIPE's default action — instead of a "Broken pipe" error
/// (Rust ignores SIGPIPE, so a write to a closed pipe would fail, and `println!` would panic). Not for the commands
/// that change something while they print (`revoke`, `reap`, `counter`: their work goes on) nor for `run`/`elect`,
/// whose signal handling is their own.
fn quiet_on_closed_pipe() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called once, on the main thread, before any thread or runtime exists; SIG_DFL installs no handler
    // (nothing runs in signal context).
    #[allow(unsafe_code)]
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// The usage errors found only once arguments are put together — an ACL with `creator` but no credentials, an
/// unreadable `--auth-file` or `--tls-ca` — told before any connection is tried, so that they are usage errors
/// (exit 64) even when ZooKeeper cannot be reached. (Paths, durations and connect strings are checked by clap.)
fn before_connecting(command: &Command) -> exit::Result<()> {
    if let Command::Counter(args) = command {
        if let (Some(cli::CounterKind::Shared), Some(value)) = (args.kind, args.value) {
            if i32::try_from(value).is_err() {
                return Err(Failure::new(
                    exit::USAGE,
                    format!("{value} does not fit a shared count (a 32-bit integer, Curator's SharedCount)"),
                ));
            }
        }
    }
    let (security, acl) = match command {
        Command::Run(args) => (&args.connect.security, Some(&args.acl)),
        Command::Elect(args) => (&args.connect.security, Some(&args.acl)),
        Command::Counter(args) => (&args.connect.security, Some(&args.acl)),
        Command::Status(args) => (&args.connect.security, None),
        Command::Revoke(args) => (&args.connect.security, None),
        Command::Reap(args) => (&args.connect.security, None),
        Command::Watch(args) => (&args.connect.security, None),
        Command::Register(args) => (&args.connect.security, None),
        Command::Discover(args) => (&args.connect.security, None),
        Command::Demo(args) => (&args.security, Some(&args.acl)),
        // Also so that `--keytab`'s environment (zk/kerberos.rs, `use_keytab`) is set before any runtime's thread
        // starts.
        Command::Bench(args) => (&args.security, None),
        _ => return Ok(()),
    };
    zk::Security::from_args(security).map_err(Failure::from)?;
    if let Some(acl) = acl {
        zk::NodeAcls::from_args(security, acl).map_err(Failure::from)?;
    }
    Ok(())
}

/// Ends the process on clap's error (exit 64, [`exit::USAGE`], for usage errors where clap would exit 2; 0 for
/// `--help`, `--version`), with a hint for the most common mistake: `zklock run /lock ls -l`, a command without
/// the `--` before it.
fn usage_error(err: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let args: Vec<String> = std::env::args().collect();
    // The first word that is neither a flag nor a value of --connect (global flags such as -v and -c HOSTS may
    // come before it).
    let subcommand = args
        .iter()
        .skip(1)
        .scan(false, |connect_value, arg| {
            let skip = std::mem::replace(connect_value, arg == "-c" || arg == "--connect");
            Some((skip, arg))
        })
        .find(|(skip, arg)| !skip && !arg.starts_with('-'))
        .map(|(_, arg)| arg);
    let runs_a_command = matches!(subcommand.map(String::as_str), Some("run" | "elect"));
    // `--log-format json`: the usage error is a JSON line too (not --help or --version, which are not errors).
    let json_flag = args.windows(2).any(|w| w[0] == "--log-format" && w[1] == "json")
        || args.iter().any(|a| a == "--log-format=json");
    let json = json_flag && matches!(subcommand.map(String::as_str), Some("serve" | "run" | "elect"));
    if json && err.use_stderr() {
        say::use_json();
        let message = err.render().to_string();
        let speaker = if subcommand.is_some_and(|c| c == "serve") {
            "zklock serve"
        } else {
            "zklock"
        };
        say::fatal(speaker, message.trim_end(), exit::USAGE);
        std::process::exit(exit::USAGE);
    }
    let stray = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg))
            if err.kind() == ErrorKind::UnknownArgument && !arg.starts_with('-') =>
        {
            Some(arg.clone())
        }
        _ => None,
    };
    if let (true, Some(stray)) = (runs_a_command, stray) {
        let mut fixed = vec!["zklock".to_owned()];
        let at = args
            .iter()
            .skip(2)
            .position(|arg| *arg == stray)
            .map_or(args.len(), |i| i + 2);
        fixed.extend(args[1..at].iter().cloned());
        fixed.push("--".to_owned());
        fixed.extend(args[at..].iter().cloned());
        let text = err.render().to_string();
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        eprint!(
            "{first}\n\n  tip: put -- before the command: {}\n{rest}",
            fixed.join(" ")
        );
        std::process::exit(exit::USAGE);
    }
    // Not `err.exit()`, which exits 2: our usage errors are sysexits' EX_USAGE, like every other of zklock's own.
    let _ = err.print();
    use std::io::Write as _;
    let _ = std::io::stdout().lock().flush();
    let _ = std::io::stderr().lock().flush();
    std::process::exit(if err.use_stderr() { exit::USAGE } else { exit::OK })
}

/// Who says a failure: `zklock serve` names itself, being the one command that runs as a service.
fn speaker(command: &Command) -> &'static str {
    match command {
        Command::Serve(_) => "zklock serve",
        _ => "zklock",
    }
}

/// Whether stderr is JSON lines (`--log-format json` of `serve`, `run` and `elect`).
fn json_log(cli: &Cli) -> bool {
    match &cli.command {
        Command::Serve(args) => args.log.json(),
        Command::Run(args) => args.log.json(),
        Command::Elect(args) => args.log.json(),
        _ => false,
    }
}

/// `zklock __watchdog [json]`, the watchdog `run` and `elect` start (see `child.rs`): whether its lines are JSON.
fn watchdog_invocation() -> Option<bool> {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    match args.as_slice() {
        [first] if first == WATCHDOG => Some(false),
        [first, format] if first == WATCHDOG && format == child::WATCHDOG_JSON => Some(true),
        _ => None,
    }
}

/// Sets up the log on stderr. The filter: `ZKLOCK_LOG` (tracing `EnvFilter` directives) when set, else `-q`/`-v`,
/// else the command's default. Colour only when stderr is a terminal and `NO_COLOR` is unset or empty
/// (no-color.org). `serve --log-format json`: one JSON object per line, never coloured.
fn init_logging(cli: &Cli) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::EnvFilter;
    let from_env = match std::env::var("ZKLOCK_LOG") {
        Ok(directives) if !directives.trim().is_empty() => match EnvFilter::try_new(&directives) {
            Ok(filter) => Some(filter),
            Err(err) => {
                use std::io::Write as _;
                let speaker = speaker(&cli.command);
                let _ = writeln!(
                    std::io::stderr(),
                    "{speaker}: ignoring ZKLOCK_LOG={directives:?}: {err}"
                );
                None
            }
        },
        _ => None,
    };
    let filter = from_env.unwrap_or_else(|| EnvFilter::new(log_filter(cli)));
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let color = !no_color && std::io::stderr().is_terminal();
    let json = json_log(cli);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).with_ansi(false).init();
    } else {
        builder.with_ansi(color).init();
    }
}

/// The log filter without `ZKLOCK_LOG`: `-q` errors only; `-v` info, `-vv` debug, `-vvv` trace; otherwise the
/// command's default (warnings, but not zookeeper-client's own, which it retries through; `serve`: info).
fn log_filter(cli: &Cli) -> &'static str {
    match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => match cli.command {
            Command::Serve(_) => "info",
            _ => "warn,zookeeper_client=error",
        },
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}
