//! Leader election with the automatic re-queue: each term does some work under its fencing token; losing the
//! leadership cancels the term's work and joins the queue again.
//!
//! ```sh
//! cargo run -p zklock --example election_loop -- 127.0.0.1:2181   # run two or three at once
//! ```

mod common;

use std::ops::ControlFlow;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::connect().await?;
    let me = format!("pid {}", std::process::id());
    let election =
        zklock::LeaderElection::new(&client, "/examples/elections/scheduler")?.with_data(me.clone());
    let mut terms = 0;
    let done = election
        .lead(|term| {
            terms += 1;
            let (me, terms) = (me.clone(), terms);
            async move {
                println!(
                    "{me}: leading (term {terms}, fencing token {})",
                    term.fencing_token
                );
                tokio::time::sleep(Duration::from_secs(1)).await; // the term's work
                if terms < 3 {
                    ControlFlow::Continue(()) // resign and queue again
                } else {
                    ControlFlow::Break(terms)
                }
            }
        })
        .await?;
    println!("{me}: done after {done} terms");
    Ok(())
}
