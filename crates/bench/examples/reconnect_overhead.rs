//! What a reconnecting `Session` costs on the uncontended lock path, side by side with a fixed one on the same
//! server: `Session::new(&client)` against `Session::reconnecting(...)`, one client each, rounds interleaved (and
//! which goes first alternating) so that a drift of the machine's load hits both alike. Also the in-process part
//! alone: `Session::client()`, which on a reconnecting session follows the chain of ZooKeeper sessions to the
//! newest.
//!
//! ```sh
//! cargo run --release -p zklock-bench --example reconnect_overhead -- 127.0.0.1:2181 [cycles per round] [rounds]
//! ```
//!
//! Prints the median of the rounds' mean lock+release cycle for each, and ns per `client()` call.

use std::time::{Duration, Instant};

use zklock::{Mutex, Session};
use zookeeper_client::Client;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let cycles: u32 = args.next().map_or(Ok(200), |n| n.parse())?;
    let rounds: usize = args.next().map_or(Ok(10), |n| n.parse())?;
    let connector = || Client::connector().with_session_timeout(Duration::from_secs(10));
    let fixed = Session::new(&connector().connect(&hosts).await?);
    let reconnecting = Session::reconnecting(connector(), &hosts).await?;
    let path = format!("/bench/reconnect-overhead-{}", std::process::id());
    let (fixed_mutex, reconnecting_mutex) = (Mutex::new(&fixed, &path)?, Mutex::new(&reconnecting, &path)?);
    // Warm-up: the directory exists, the connections are busy.
    cycle(&fixed_mutex, cycles / 4).await?;
    cycle(&reconnecting_mutex, cycles / 4).await?;

    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Which goes first alternates: the first of a pair may find the server (its log's fsyncs) in another state.
        if round % 2 == 0 {
            a.push(cycle(&fixed_mutex, cycles).await?);
            b.push(cycle(&reconnecting_mutex, cycles).await?);
        } else {
            b.push(cycle(&reconnecting_mutex, cycles).await?);
            a.push(cycle(&fixed_mutex, cycles).await?);
        }
    }
    let (a, b) = (median(a), median(b));
    println!(
        "lock+release, uncontended, {rounds} rounds of {cycles} (median of round means): fixed {:.1} us, \
         reconnecting {:.1} us ({:+.1} %)",
        a.as_secs_f64() * 1e6,
        b.as_secs_f64() * 1e6,
        (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0
    );
    const CALLS: u32 = 10_000_000;
    let per_call = |session: &Session| {
        let started = Instant::now();
        for _ in 0..CALLS {
            std::hint::black_box(std::hint::black_box(session).client());
        }
        started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
    };
    println!(
        "Session::client(), {CALLS} calls: fixed {:.2} ns, reconnecting {:.2} ns",
        per_call(&fixed),
        per_call(&reconnecting)
    );
    fixed.client().delete(&path, None).await.ok();
    Ok(())
}

/// The mean time of one lock + release over `cycles` of them.
async fn cycle(mutex: &Mutex, cycles: u32) -> zklock::Result<Duration> {
    let started = Instant::now();
    for _ in 0..cycles {
        mutex.lock().await?.release().await?;
    }
    Ok(started.elapsed() / cycles.max(1))
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}
