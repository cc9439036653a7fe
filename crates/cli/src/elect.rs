//! `zklock elect PATH -- CMD...`: run a command only while this process is the elected leader.

use clap::Args;
use zklock::LeaderElection;

use crate::cli::ConnectArgs;
use crate::supervise::{self, Interrupts, EXIT_USAGE, EXIT_ZOOKEEPER};

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
    #[arg(long, default_value_t = 2.0)]
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
    supervise::with_session(&args.connect, async |client, interrupts| {
        elect_with(&args, client, interrupts).await
    })
    .await
}

async fn elect_with(args: &ElectArgs, client: &zookeeper_client::Client, interrupts: &mut Interrupts) -> i32 {
    let election = match LeaderElection::new(client, &args.path) {
        Ok(election) => election
            .with_data(supervise::describe(&args.command, args.describe.as_deref()))
            .with_lost_policy(supervise::lost_policy(client.session_timeout(), args.kill_after)),
        Err(err) => {
            eprintln!("zklock: {err}");
            return EXIT_USAGE;
        }
    };
    // Dropping the campaign on a signal withdraws our candidacy.
    let campaign = tokio::select! {
        campaign = election.campaign() => campaign,
        signal = interrupts.recv() => {
            eprintln!("zklock: {signal} while campaigning for {}", args.path);
            return supervise::interrupted_status(signal);
        }
    };
    let leadership = match campaign {
        Ok(leadership) => leadership,
        Err(err) => {
            eprintln!("zklock: cannot campaign for {}: {err}", args.path);
            return EXIT_ZOOKEEPER;
        }
    };
    let what = format!("leadership of {}", args.path);
    supervise::run_while_held(
        leadership,
        &args.path,
        &what,
        &args.command,
        args.kill_after,
        client.session_timeout(),
        interrupts,
    )
    .await
}
