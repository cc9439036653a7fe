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
    let cli = Cli::parse();
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
        eprintln!("{speaker}: {}", failure.message);
        failure.status
    });
    ExitCode::from(u8::try_from(status).unwrap_or(1))
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
