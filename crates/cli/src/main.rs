//! `zklock`: the command line. The work happens in the library crates; this is glue.

mod bench;
mod child;
mod cli;
mod demo;
mod elect;
mod exit;
mod run;
mod serve;
mod status;
mod supervise;
mod zk;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|err| usage_error(err));
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ZKLOCK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_log_filter(&cli.command))),
        )
        .with_writer(std::io::stderr)
        .init();
    let speaker = speaker(&cli.command);
    let result = match cli.command {
        // `run` forks the user's command: its parent-death signal is tied to the forking *thread*, so run on a
        // current-thread runtime on the main thread, which lives exactly as long as the process.
        Command::Run(args) => current_thread().block_on(run::run(args)),
        // Like `run`: the command is forked from the main thread.
        Command::Elect(args) => current_thread().block_on(elect::elect(args)),
        Command::Status(args) => multi_thread()
            .block_on(status::status(args))
            .map_err(Failure::from),
        Command::Demo(args) => multi_thread().block_on(demo::demo(args)),
        Command::Bench(args) => multi_thread().block_on(bench::bench(args)),
        Command::Serve(args) => multi_thread().block_on(serve::serve(args)),
        Command::Watchdog => Ok(child::watchdog()),
    };
    // The one place a failure is told.
    let status = result.unwrap_or_else(|failure| {
        // Not eprintln!: after an SSH logout the terminal is gone and a failed write must not turn the status
        // into a panic's 101.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{speaker}: {}", failure.message);
        failure.status
    });
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}

/// Ends the process on clap's error (exit 2 for usage errors; 0 for `--help`, `--version`), with a hint for the
/// most common mistake: `zklock run /lock ls -l`, a command without the `--` before it.
fn usage_error(err: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let args: Vec<String> = std::env::args().collect();
    let runs_a_command = matches!(args.get(1).map(String::as_str), Some("run" | "elect"));
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
    err.exit()
}

/// Who says a failure: `zklock serve` names itself, being the one command that runs as a service.
fn speaker(command: &Command) -> &'static str {
    match command {
        Command::Serve(_) => "zklock serve",
        _ => "zklock",
    }
}

fn default_log_filter(command: &Command) -> &'static str {
    match command {
        Command::Serve(_) => "info",
        _ => "warn,zookeeper_client=error",
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
