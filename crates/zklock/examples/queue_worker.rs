//! A queue worker with at-least-once processing: `take_safe` claims an item, and only `complete` removes it, so a
//! worker that dies mid-item leaves it for another.
//!
//! ```sh
//! cargo run -p zklock --example queue_worker -- 127.0.0.1:2181
//! ```

mod common;

use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::connect().await?;
    let queue = zklock::Queue::new(&client, "/examples/queues/jobs")?;
    for job in ["resize 1", "resize 2", "resize 3"] {
        let name = queue.put(job.as_bytes()).await?;
        println!("put {job:?} as {name}");
    }
    // Work until the queue stays empty for a second.
    loop {
        let claimed = match tokio::time::timeout(Duration::from_secs(1), queue.take_safe()).await {
            Ok(claimed) => claimed?,
            Err(_) => break,
        };
        println!("processing {:?}", String::from_utf8_lossy(claimed.data()));
        // ... the work; if this process dies here, the claim goes with its session and the item stays queued ...
        claimed.complete().await?;
    }
    println!("queue empty");
    Ok(())
}
