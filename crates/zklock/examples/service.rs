//! A long-running service: one reconnecting session, a leader election that campaigns again by itself after the
//! session expired (Curator's `autoRequeue`), a queue worker whose safe takes carry on across a new session, and a
//! clean shutdown on SIGTERM or Ctrl-C that leaves no node of ours behind.
//!
//! ```sh
//! cargo run -p zklock --example service -- 127.0.0.1:2181 /examples/service   # run two or three at once
//! ```
//!
//! A third argument sets the session timeout in seconds (10 by default).
//!
//! It prints one line per thing that happens (`session …`, `leading …`, `processed …`, `closed`); a test runs it
//! as a real process (`tests/service_example.rs`), expires its session and stops it.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

use zklock::{LeaderElection, Queue, Session, SessionEvent};

// `pub(crate)`: the test runs this very `main` (the example is compiled into it as a module).
#[tokio::main]
pub(crate) async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let base = args.next().unwrap_or_else(|| "/examples/service".to_owned());
    let session_timeout = Duration::from_secs(args.next().map_or(Ok(10), |secs| secs.parse())?);
    serve(&hosts, &base, session_timeout, shutdown_requested()).await?;
    Ok(())
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_requested() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// The service: leads `<base>/leader` when it can, and works through the items of the queue `<base>/jobs` — until
/// `shutdown` completes; then it closes the session, so that every node of ours is gone before it returns.
pub async fn serve(
    hosts: &str,
    base: &str,
    session_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) -> zklock::Result<()> {
    let connector = zklock::zookeeper_client::Client::connector().with_session_timeout(session_timeout);
    let session = Session::reconnecting(connector, hosts).await?;
    println!("session 0x{:x}", session.client().session_id().0);
    let mut events = session
        .events()
        .expect("a reconnecting session reports its events");
    let reporting = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match event {
                SessionEvent::NewSession { session_id } => println!("session 0x{session_id:x}"),
                event => println!("event {event:?}"),
            }
        }
    });

    let election = LeaderElection::new(&session, &format!("{base}/leader"))?
        .with_data(format!("pid {}", std::process::id()))
        .with_auto_requeue(true);
    let leading = election.lead(|term| async move {
        println!("leading {}", term.fencing_token);
        // The leader's work, for as long as the term lasts: the term ends when leadership is lost (the work is then
        // dropped) or at shutdown. Pass `term.fencing_token` to whatever the leader commands.
        std::future::pending::<ControlFlow<()>>().await
    });

    let queue = Queue::new(&session, &format!("{base}/jobs"))?;
    let working = async {
        loop {
            // Waits for an item; carries on with the next ZooKeeper session if the session ends meanwhile.
            let claimed = queue.take_safe().await?;
            let item = String::from_utf8_lossy(claimed.data()).into_owned();
            // The work on the item goes here. Then the item goes, with our claim, in one transaction; if the
            // session ended in between, the claim went with it and the item is taken again (at least once).
            match claimed.complete().await {
                Ok(_) => println!("processed {item}"),
                Err(err) => eprintln!("not completed, the item stays in the queue: {item}: {err}"),
            }
        }
    };

    // Whichever ends first. At shutdown the term's work and a take in progress are dropped: a take withdraws its
    // claim (the item stays for the others).
    let outcome = tokio::select! {
        led = leading => led,
        worked = working => worked,
        () = shutdown => Ok(()),
    };
    // No new session from now on, and every node of ours deleted, confirmed by the server.
    let client = session.client().clone();
    session.clone().close().await?;
    drop((election, queue, session));
    reporting.abort();
    // Then the ZooKeeper session itself ends once its last handle goes: wait (briefly) for the server's word.
    let mut states = client.state_watcher();
    drop(client);
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        while !states.changed().await.is_terminated() {}
    })
    .await;
    println!("closed");
    outcome
}
