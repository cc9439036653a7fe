//! A mutex whose protected resource checks the fencing token: the one protection that survives a paused process.
//!
//! ```sh
//! zklock serve --data-dir /tmp/zk &          # or any ZooKeeper
//! cargo run -p zklock --example mutex_with_fencing -- 127.0.0.1:2181
//! ```

mod common;

use std::sync::atomic::{AtomicI64, Ordering};

/// Stands in for the resource (a database row, a storage bucket): it refuses a token older than one it has seen.
struct FencedResource {
    highest_token: AtomicI64,
}

impl FencedResource {
    fn write(&self, token: i64, what: &str) -> Result<(), String> {
        let seen = self.highest_token.fetch_max(token, Ordering::SeqCst);
        if token < seen {
            return Err(format!("refused {what:?}: token {token} is older than {seen}"));
        }
        println!("accepted {what:?} with token {token}");
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::connect().await?;
    let mutex =
        zklock::Mutex::new(&client, "/examples/locks/orders")?.with_data("example: mutex_with_fencing");
    let resource = FencedResource {
        highest_token: AtomicI64::new(0),
    };
    for round in 0..3 {
        let guard = mutex.lock().await?;
        let token = guard.fencing_token();
        // Do the work unless the lock is lost meanwhile (session expired, node deleted, disconnected too long).
        tokio::select! {
            reason = guard.lost() => eprintln!("lost the lock: {reason}; stopping this round"),
            result = async { resource.write(token, &format!("round {round}")) } => result?,
        }
        match guard.release().await {
            // A guard lost meanwhile says so again here; the loss was reported above.
            Ok(()) | Err(zklock::Error::Lost(_)) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}
