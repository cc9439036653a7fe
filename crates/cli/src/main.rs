//! `zklock`: the command line. The work happens in the library crates; this is glue.

mod bench;
mod child;
mod cli;
mod demo;
mod elect;
mod run;
mod serve;
mod status;
mod supervise;
mod zk;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ZKLOCK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_log_filter(&cli.command))),
        )
        .with_writer(std::io::stderr)
        .init();
    let code = match cli.command {
        // `run` forks the user's command: its parent-death signal is tied to the forking *thread*, so run on a
        // current-thread runtime on the main thread, which lives exactly as long as the process.
        Command::Run(args) => current_thread().block_on(run::run(args)),
        // Like `run`: the command is forked from the main thread.
        Command::Elect(args) => current_thread().block_on(elect::elect(args)),
        Command::Status(args) => report(multi_thread().block_on(status::status(args))),
        Command::Demo(args) => report(multi_thread().block_on(demo::demo(args))),
        Command::Bench(args) => report(multi_thread().block_on(bench::bench(args))),
        Command::Serve(args) => report(multi_thread().block_on(serve::serve(args))),
        Command::Watchdog => child::watchdog(),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
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

/// Prints an error chain the way a user wants to read it, and maps it to exit status 3.
fn report(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("zklock: {err:#}");
            3
        }
    }
}
