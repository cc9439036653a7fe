//! `zklock elect PATH -- CMD...`: run a command only while this process is the elected leader.

use std::time::Duration;

use clap::Args;
use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};
use zklock::LeaderElection;

use crate::child::{exit_code, Child};
use crate::cli::ConnectArgs;
use crate::zk;

/// Exit status when ZooKeeper cannot be reached or fails.
pub const EXIT_ZOOKEEPER: i32 = 3;
/// Exit status when leadership was lost while the command ran (the command was stopped).
pub const EXIT_LOST: i32 = 4;

/// Arguments of `zklock elect`.
///
/// Exit status: the command's own (it ran as leader and exited; we then resign); 2 for usage errors; 3 if
/// ZooKeeper cannot be reached or fails; 4 if leadership was lost while the command ran (the command was
/// stopped); 126/127 if the command cannot be run / found; 130/143 if interrupted/terminated while waiting to
/// lead; 128+N if the command died of signal N.
#[derive(Debug, Args)]
pub struct ElectArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// After leadership is lost, seconds between SIGTERM and SIGKILL to the command.
    #[arg(long, default_value_t = 5.0)]
    pub kill_after: f64,
    /// Free text stored in our candidate node, shown to observers of the election.
    #[arg(long)]
    pub describe: Option<String>,
    /// The election directory, e.g. /elections/scheduler.
    pub path: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Campaigns, runs the command while leading, and returns the process exit status.
///
/// Must run on a current-thread runtime on the main thread: the command's parent-death signal is tied to the
/// thread that forks it (see `child.rs`).
pub async fn elect(args: ElectArgs) -> i32 {
    let client = match zk::connect_args(&args.connect).await {
        Ok(client) => client,
        Err(err) => {
            eprintln!("zklock: {err:#}");
            return EXIT_ZOOKEEPER;
        }
    };
    let code = elect_with(&args, &client).await;
    zk::close(client).await;
    code
}

fn candidate_description(args: &ElectArgs) -> String {
    let host = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut text = format!(
        "host={host} pid={} cmd={}",
        std::process::id(),
        args.command.join(" ")
    );
    if let Some(describe) = &args.describe {
        text.push_str(" note=");
        text.push_str(describe);
    }
    text
}

async fn elect_with(args: &ElectArgs, client: &zookeeper_client::Client) -> i32 {
    let election = match LeaderElection::new(client, &args.path) {
        Ok(election) => election.with_data(candidate_description(args)),
        Err(err) => {
            eprintln!("zklock: {err}");
            return 2;
        }
    };
    let mut interrupts = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(int), Ok(term)) => (int, term),
        _ => {
            eprintln!("zklock: cannot install signal handlers");
            return 1;
        }
    };
    // Dropping the campaign on a signal withdraws our candidacy.
    let campaign = tokio::select! {
        campaign = election.campaign() => campaign,
        _ = interrupts.0.recv() => { eprintln!("zklock: interrupted while campaigning for {}", args.path); return 130; }
        _ = interrupts.1.recv() => { eprintln!("zklock: terminated while campaigning for {}", args.path); return 143; }
    };
    let leadership = match campaign {
        Ok(leadership) => leadership,
        Err(err) => {
            eprintln!("zklock: cannot campaign for {}: {err}", args.path);
            return EXIT_ZOOKEEPER;
        }
    };
    let env = [
        ("ZKLOCK_PATH", args.path.clone()),
        ("ZKLOCK_NODE", leadership.path()),
        ("ZKLOCK_FENCING_TOKEN", leadership.fencing_token().to_string()),
    ];
    let mut child = match Child::spawn(&args.command, &env) {
        Ok(child) => child,
        Err(err) => {
            eprintln!("zklock: cannot run {}: {err}", args.command[0]);
            let _ = leadership.release().await;
            return if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    tracing::info!(pid = child.pid(), node = %leadership.path(), "leading; command started");
    let lost = leadership.lost();
    tokio::pin!(lost);
    let code = loop {
        tokio::select! {
            status = child.wait() => break match status {
                Ok(status) => exit_code(status),
                Err(err) => { eprintln!("zklock: waiting for the command: {err}"); 1 }
            },
            _ = interrupts.0.recv() => child.signal(Signal::SIGINT),
            _ = interrupts.1.recv() => child.signal(Signal::SIGTERM),
            reason = &mut lost => {
                eprintln!("zklock: lost leadership of {} ({reason}); stopping the command (pid {})", args.path, child.pid());
                child.stop(Duration::from_secs_f64(args.kill_after.max(0.0))).await;
                drop(leadership);
                return EXIT_LOST;
            }
        }
    };
    // Resign only once the command is gone, so the next leader's command never overlaps ours.
    if let Err(err) = leadership.release().await {
        eprintln!("zklock: resigning {}: {err}", args.path);
    }
    code
}

