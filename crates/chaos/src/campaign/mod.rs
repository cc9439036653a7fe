//! One campaign: server, register, contenders, nemesis; then the cleanliness check and the checker's verdict.
//!
//! One step a file, in the order they run: `setup.rs` checks the arguments and starts the server, the register, the
//! links and the proxies; `schedule.rs` runs the contenders (each one's command line from `launch.rs`) under the
//! nemesis's seeded fault schedule until the deadline; `verdict.rs` collects what they left and judges it;
//! `finish.rs` writes the files and the summary and keeps what a violation needs. `recovery.rs`: the recovery
//! figures (and `__rescore`); `availability.rs`: the guards the faults ended needlessly.

mod availability;
mod finish;
mod launch;
mod recovery;
mod schedule;
mod setup;
mod verdict;

use anyhow::Result;

use crate::args::CampaignArgs;

pub use recovery::rescore;

/// Runs the campaign; the process exit status.
pub async fn main(args: CampaignArgs) -> i32 {
    let seed = args.seed.unwrap_or_else(rand::random::<u64>);
    match campaign(&args, seed).await {
        Ok(0) => 0,
        Ok(_) => 1,
        Err(err) => {
            eprintln!("zklock-chaos: {err:#}");
            println!("chaos: campaign failed to run ({err}), seed {seed}");
            2
        }
    }
}

/// Sets up, runs, judges and reports one campaign; the number of violations found.
async fn campaign(args: &CampaignArgs, seed: u64) -> Result<usize> {
    let setup = setup::Setup::start(args, seed).await?;
    let ran = schedule::run(args, &setup).await?;
    let judged = verdict::judge(args, &setup, &ran).await?;
    finish::finish(args, setup, ran, judged).await
}
