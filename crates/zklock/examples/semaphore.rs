//! A semaphore: at most two of the tasks below hold a lease at once, fair (FIFO) and herd-free.
//!
//! ```sh
//! cargo run -p zklock --example semaphore -- 127.0.0.1:2181
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for worker in 0..5 {
        // One session per worker, as separate processes would have.
        let client = zookeeper_client::Client::connect(&hosts).await?;
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            let semaphore = zklock::Semaphore::new(&client, "/examples/semaphores/downloads", 2)?;
            let lease = semaphore.acquire().await?;
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            println!(
                "worker {worker}: in ({now} of at most 2), token {}",
                lease.fencing_token()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            lease.release().await
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}
