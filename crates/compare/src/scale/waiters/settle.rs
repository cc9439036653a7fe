//! Watching the queue from outside: until the server's watches settle once everybody is queued, and until a
//! peer's nodes are gone after it exits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use zklock_testkit::four_letter_word;

use crate::scale::progress;
use crate::scale::sessions::connect;

/// The server's total number of watches (`wchs`: "Total watches:N").
fn total_watches(server: SocketAddr) -> Option<u64> {
    let text = four_letter_word(server, "wchs", Duration::from_secs(5)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until the queue has settled: the server holds at least `n − 1` watches (one per waiter) and their number
/// has not changed over the last three looks, 50 ms apart — every waiter has listed the queue and set its watch.
/// Asked of the server itself (not through the counting proxy, and not counted). Gives up quietly at `deadline`.
pub(super) async fn watches_settled(server: SocketAddr, n: usize, deadline: Instant) {
    let (mut last, mut unchanged) = (None, 0);
    while Instant::now() < deadline {
        let now = tokio::task::spawn_blocking(move || total_watches(server))
            .await
            .ok()
            .flatten();
        match now {
            Some(watches) if watches + 1 >= n as u64 && Some(watches) == last => {
                unchanged += 1;
                if unchanged >= 3 {
                    return;
                }
            }
            _ => unchanged = 0,
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    progress!("  the queue of {n} did not settle before the set-up bound; measuring anyway");
}

/// Waits (at most `bound`) until `dir` has no children left.
pub(super) async fn nodes_gone(hosts: &str, dir: &str, bound: Duration) -> Result<()> {
    let observer = connect(hosts).await?;
    let deadline = Instant::now() + bound;
    let result = loop {
        match observer.check_stat(dir).await? {
            Some(stat) if stat.num_children > 0 => {}
            _ => break Ok(()),
        }
        if Instant::now() > deadline {
            break Err(anyhow!(
                "{dir} still has children {bound:?} after the peer exited"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    zklock_bench::close(observer).await;
    result
}
