//! Sessions that outlive expiry: a leader election with auto-requeue, a group member and a queue consumer built on
//! one reconnecting `Session` carry on with a new ZooKeeper session after their session ends — expired from
//! outside, or lost while ZooKeeper was stopped for longer than the session timeout — within the session timeout
//! plus 2 s; what they held on the old session reports lost, and nothing is taken twice.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use zklock::zookeeper_client::Client;
use zklock::{Group, LeaderElection, LostReason, Membership, Queue, Session, SessionEvent};
use zklock_testkit::{expire_session, unique_path, ZooKeeper};

use crate::support::{assert_expired, children, client, eventually};

/// What the service under test reports.
#[derive(Debug)]
enum Report {
    TermStarted { token: i64, path: String },
    TermEnded { token: i64 },
    Completed(String),
    Holding,
    ClaimLost(LostReason),
}

/// Sends `TermEnded` when the term's work is dropped (the election stops it when leadership is lost).
struct TermGuard(mpsc::UnboundedSender<Report>, i64);

impl Drop for TermGuard {
    fn drop(&mut self) {
        let _ = self.0.send(Report::TermEnded { token: self.1 });
    }
}

/// The election (auto-requeue, each term runs until it is stopped) and the queue consumer (claims, completes; the
/// item "hold" is held the first time until its claim is lost), both on `session`.
fn start_service(
    session: &Session,
    election_dir: &str,
    queue_dir: &str,
) -> (mpsc::UnboundedReceiver<Report>, mpsc::UnboundedReceiver<Report>) {
    let (terms_tx, terms) = mpsc::unbounded_channel();
    let election = LeaderElection::new(session, election_dir)
        .unwrap()
        .with_auto_requeue(true);
    tokio::spawn(async move {
        election
            .lead(|term| {
                let tx = terms_tx.clone();
                async move {
                    let _ended = TermGuard(tx.clone(), term.fencing_token);
                    let _ = tx.send(Report::TermStarted {
                        token: term.fencing_token,
                        path: term.path,
                    });
                    std::future::pending::<ControlFlow<()>>().await
                }
            })
            .await
    });
    let (work_tx, work) = mpsc::unbounded_channel();
    let queue = Queue::new(session, queue_dir).unwrap();
    tokio::spawn(async move {
        let mut held = false;
        loop {
            let claimed = queue.take_safe().await?;
            let data = String::from_utf8(claimed.data().to_vec()).unwrap();
            if data == "hold" && !held {
                held = true;
                let _ = work_tx.send(Report::Holding);
                let _ = work_tx.send(Report::ClaimLost(claimed.lost().await));
                continue;
            }
            claimed.complete().await?;
            let _ = work_tx.send(Report::Completed(data));
        }
        #[allow(unreachable_code)]
        Ok::<(), zklock::Error>(())
    });
    (terms, work)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Report>, what: &str) -> Report {
    eventually(what, rx.recv())
        .await
        .expect("the service's task ended")
}

async fn owner(observer: &Client, path: &str) -> i64 {
    observer
        .check_stat(path)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{path} exists"))
        .ephemeral_owner
}

/// Runs the service, ends its ZooKeeper session with `fault` (which returns once the fault is over), and checks that
/// everything carries on.
/// `outage`: the connection was down before the session ended, so a holding may report `Disconnected` first (the
/// default `LostPolicy`: half the session timeout).
async fn carries_on<F, Fut>(hosts: &str, timeout: Duration, outage: bool, fault: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut run = Run::start(hosts, timeout).await;
    fault(run.session.client().clone()).await;
    let clock = Clock {
        fault_over: Instant::now(),
        bound: timeout + Duration::from_secs(2),
        outage,
    };
    run.old_holdings_report_lost(&clock).await;
    let second = run.new_session(&clock).await;
    let again = run.member_joins_again(&clock, second).await;
    let old_gone = run.old_session_gone(&clock).await;
    run.second_term(&clock, old_gone, second).await;
    run.consumer_carries_on(&clock, old_gone).await;
    run.close(again).await;
}

/// The time bounds after the fault, and what a lost holding may report.
struct Clock {
    /// When the fault was over.
    fault_over: Instant,
    /// The session timeout plus 2 s.
    bound: Duration,
    /// Whether the connection was down before the session ended.
    outage: bool,
}

impl Clock {
    /// A holding of the old session lost: expired, or after an outage possibly disconnected first.
    fn assert_lost(&self, reason: LostReason) {
        match reason {
            LostReason::Disconnected if self.outage => {}
            reason => assert_expired(reason),
        }
    }

    /// `what` happened within the bound of `since`.
    fn within_from(&self, since: Instant, what: &str) {
        let bound = self.bound;
        let elapsed = since.elapsed();
        tracing::info!(?elapsed, "{what}");
        assert!(
            elapsed <= bound,
            "{what} after {elapsed:?}, over the bound {bound:?}"
        );
    }

    /// `what` happened within the bound of the fault's end.
    fn within(&self, what: &str) {
        self.within_from(self.fault_over, what)
    }
}

/// The service on its first ZooKeeper session, and what watches it.
struct Run {
    election_dir: String,
    group_dir: String,
    session: Session,
    events: tokio::sync::broadcast::Receiver<SessionEvent>,
    /// The first ZooKeeper session's id.
    first: i64,
    observer: Client,
    producer: Queue,
    terms: mpsc::UnboundedReceiver<Report>,
    work: mpsc::UnboundedReceiver<Report>,
    group: Group,
    /// The first membership, until the member joins again.
    membership: Option<Membership>,
    first_token: i64,
    first_term: String,
    /// The items completed so far, in order.
    completed: Vec<String>,
}

impl Run {
    /// Starts the service on a reconnecting session with three items queued: the member joined, the first term
    /// started, "a" completed and "hold" held.
    async fn start(hosts: &str, timeout: Duration) -> Run {
        let base = unique_path("reconnect");
        let (election_dir, group_dir, queue_dir) = (
            format!("{base}/election"),
            format!("{base}/group"),
            format!("{base}/queue"),
        );
        let connector = Client::connector().with_session_timeout(timeout);
        let session = eventually("connecting", Session::reconnecting(connector, hosts))
            .await
            .unwrap();
        assert!(session.is_reconnecting());
        let events = session.events().unwrap();
        let first = session.client().session_id().0;
        let observer = client(hosts).await;
        let producer = Queue::new(&observer, &queue_dir).unwrap();
        for item in ["a", "hold", "b"] {
            producer.put(item.as_bytes()).await.unwrap();
        }

        let (mut terms, mut work) = start_service(&session, &election_dir, &queue_dir);
        let group = Group::new(&session, &group_dir).unwrap().with_data("service");
        let membership = group.join().await.unwrap();
        assert_eq!(owner(&observer, membership.path()).await, first);
        let Report::TermStarted {
            token: first_token,
            path: first_term,
        } = next(&mut terms, "the first term").await
        else {
            panic!("a term starts first")
        };
        assert_eq!(owner(&observer, &first_term).await, first);
        let mut completed = Vec::new();
        loop {
            match next(&mut work, "the consumer to take a and hold").await {
                Report::Completed(item) => completed.push(item),
                Report::Holding => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(completed, ["a"]);
        Run {
            election_dir,
            group_dir,
            session,
            events,
            first,
            observer,
            producer,
            terms,
            work,
            group,
            membership: Some(membership),
            first_token,
            first_term,
            completed,
        }
    }

    /// The old session's holdings report lost.
    async fn old_holdings_report_lost(&mut self, clock: &Clock) {
        let lost = self.membership.as_ref().expect("the first membership").lost();
        clock.assert_lost(eventually("the membership's loss", lost).await);
        match next(&mut self.work, "the claim's loss").await {
            Report::ClaimLost(reason) => clock.assert_lost(reason),
            other => panic!("unexpected {other:?}"),
        }
        match next(&mut self.terms, "the first term's end").await {
            Report::TermEnded { token } => assert_eq!(token, self.first_token),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A new session, reported as such: its id.
    async fn new_session(&mut self, clock: &Clock) -> i64 {
        let events = &mut self.events;
        let second = eventually("a new session", async {
            loop {
                match events.recv().await.expect("session events") {
                    SessionEvent::NewSession { session_id } => break session_id,
                    SessionEvent::Closed => panic!("closed"),
                    _ => {}
                }
            }
        })
        .await;
        clock.within("the new session");
        assert_ne!(second, self.first);
        assert_eq!(self.session.client().session_id().0, second);
        second
    }

    /// The group member joins again, on the new session, once its lost membership is dropped: the same member (the
    /// same node name), on the new session.
    async fn member_joins_again(&mut self, clock: &Clock, second: i64) -> Membership {
        let old_path = self
            .membership
            .take()
            .expect("the first membership")
            .path()
            .to_owned();
        let again = eventually("joining again", self.group.join()).await.unwrap();
        clock.within("joining again");
        assert_eq!(owner(&self.observer, again.path()).await, second);
        assert_eq!(again.path(), old_path, "the same member");
        again
    }

    /// When the old session's nodes (the first term's, the held item's claim) are gone. After an outage the
    /// restarted server expires the old session (and deletes its nodes) only a session timeout after it started:
    /// what waits for those nodes is timed from then.
    async fn old_session_gone(&self, clock: &Clock) -> Instant {
        if clock.outage {
            let first_term_gone = zklock_testkit::await_deleted(&self.observer, &self.first_term);
            eventually("the server to expire the old session", first_term_gone).await;
            Instant::now()
        } else {
            clock.fault_over
        }
    }

    /// The election: a new term on the new session, with a larger token, and never two leaders at once (the first
    /// term was stopped before, and its node is gone).
    async fn second_term(&mut self, clock: &Clock, old_gone: Instant, second: i64) {
        let Report::TermStarted { token, path } = next(&mut self.terms, "the second term").await else {
            panic!("a term starts after the first ended")
        };
        clock.within_from(old_gone, "the second term");
        let first_token = self.first_token;
        assert!(token > first_token, "{token} after {first_token}");
        assert_eq!(owner(&self.observer, &path).await, second);
        assert_eq!(
            children(&self.observer, &self.election_dir).await.len(),
            1,
            "one candidate: the leader"
        );
    }

    /// The consumer: the item claimed on the old session is claimed again and completed once, then the rest.
    async fn consumer_carries_on(&mut self, clock: &Clock, old_gone: Instant) {
        for item in ["c", "d"] {
            self.producer.put(item.as_bytes()).await.unwrap();
        }
        let completed = &mut self.completed;
        while completed.len() < 5 {
            match next(&mut self.work, "the consumer to carry on").await {
                Report::Completed(item) => completed.push(item),
                other => panic!("unexpected {other:?}"),
            }
            if completed.last().map(String::as_str) == Some("hold") {
                clock.within_from(old_gone, "the held item's completion");
            }
        }
        // After an outage the old claim stays until the server expires the old session: "b" may come first.
        let mut sorted = completed.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["a", "b", "c", "d", "hold"],
            "every item once: {completed:?}"
        );
        if !clock.outage {
            assert_eq!(*completed, ["a", "hold", "b", "c", "d"], "in order");
        }
        assert_eq!(self.producer.len().await.unwrap(), 0);
    }

    /// Closing leaves no node of ours: the member and the leader's node go at once.
    async fn close(mut self, again: Membership) {
        drop(self.membership);
        self.session.close().await.unwrap();
        assert!(children(&self.observer, &self.group_dir).await.is_empty());
        assert!(children(&self.observer, &self.election_dir).await.is_empty());
        assert_eq!(
            eventually("the closed event", self.events.recv()).await.unwrap(),
            SessionEvent::Closed
        );
        drop(again);
    }
}

crate::on_standalone_and_embedded! {
    async fn carries_on_after_expiry(hosts: &str) {
        let hosts_owned = hosts.to_owned();
        carries_on(hosts, Duration::from_secs(4), false, |client| async move {
            expire_session(&hosts_owned, &client).await;
        })
        .await;
    }
}

/// A ZooKeeper of our own, stopped for longer than the session timeout: the client gives the session up (it cannot
/// reconnect within 1.4 timeouts), and the restarted server expires it a timeout after it starts. Our nodes stay
/// until then, so the new term and the held item's claim wait for that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn carries_on_after_zookeeper_was_stopped_past_the_timeout() {
    let timeout = Duration::from_secs(2);
    let zk = tokio::task::spawn_blocking(|| ZooKeeper::builder().tick_time_ms(500).start().unwrap())
        .await
        .unwrap();
    let hosts = zk.connect_string();
    let zk = std::sync::Arc::new(std::sync::Mutex::new(zk));
    let server = std::sync::Arc::clone(&zk);
    carries_on(&hosts, timeout, true, |client| async move {
        let mut states = client.state_watcher();
        let killed = std::sync::Arc::clone(&server);
        tokio::task::spawn_blocking(move || killed.lock().unwrap().kill(0))
            .await
            .unwrap();
        // The client gives the session up by itself.
        eventually("the client to give the session up", async {
            while states.state() != zklock::zookeeper_client::SessionState::Expired {
                states.changed().await;
            }
        })
        .await;
        tokio::task::spawn_blocking(move || server.lock().unwrap().restart(0).unwrap())
            .await
            .unwrap();
    })
    .await;
    drop(zk);
}

crate::on_standalone_and_embedded! {
    // The control: the same recipes on a session made from a `Client` (which never reconnects) stop at the
    // expiry, auto-requeue or not — what the test above would see without the reconnecting session.
    async fn a_fixed_session_does_not_carry_on(hosts: &str) {
        let base = unique_path("reconnect-fixed");
        let client = client(hosts).await;
        let session = Session::new(&client);
        assert!(!session.is_reconnecting());
        assert!(session.events().is_none());
        let election = LeaderElection::new(&session, &format!("{base}/election"))
            .unwrap()
            .with_auto_requeue(true);
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let lead = tokio::spawn(async move {
            election
                .lead(|term| {
                    let _ = started_tx.send(term.fencing_token);
                    std::future::pending::<ControlFlow<()>>()
                })
                .await
        });
        eventually("the term", started.recv()).await.unwrap();
        let group = Group::new(&session, &format!("{base}/group")).unwrap();
        let membership = group.join().await.unwrap();
        expire_session(hosts, &client).await;
        assert_expired(eventually("the membership's loss", membership.lost()).await);
        let ended = eventually("lead to end", lead).await.unwrap();
        assert!(ended.unwrap_err().is_terminal(), "lead ends with the session's end");
        assert!(started.try_recv().is_err(), "no second term");
        drop(membership);
        assert!(group.join().await.unwrap_err().is_terminal());
        assert!(session.ready().await.unwrap_err().is_terminal());
    }
}
