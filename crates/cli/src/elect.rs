//! `zklock elect PATH -- CMD...`: run a command only while this process is the elected leader.

use zklock::LeaderElection;

use crate::cli::ElectArgs;
use crate::exit::{self, Failure};
use crate::supervise::{self, Interrupts};

/// Campaigns, runs the command while leading, and returns the process exit status.
///
/// Must run on a current-thread runtime on the main thread: the command's parent-death signal is tied to the
/// thread that forks it (see `child.rs`).
pub async fn elect(args: ElectArgs) -> exit::Result {
    supervise::with_session(&args.connect, async |client, interrupts| {
        elect_with(&args, client, interrupts).await
    })
    .await
}

async fn elect_with(
    args: &ElectArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let session = zklock::Session::new(client)
        .with_lost_policy(supervise::lost_policy(client.session_timeout(), args.kill_after));
    let election = LeaderElection::new(session, &args.path)
        .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?
        .with_data(supervise::describe(&args.command, args.describe.as_deref()));
    // Dropping the campaign on a signal withdraws our candidacy.
    let campaign = tokio::select! {
        campaign = election.campaign() => campaign,
        signal = interrupts.recv() => {
            return Err(supervise::interrupted(signal, format!("{signal} while campaigning for {}", args.path)));
        }
    };
    let leadership = campaign
        .map_err(|err| Failure::new(exit::FAILURE, format!("cannot campaign for {}: {err}", args.path)))?;
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
