//! Four-letter words: a new connection whose first four bytes spell a command gets a plain-text answer
//! and is closed. Formats follow ZooKeeper 3.8 closely enough for its usual parsers (kazoo reads
//! `zookeeper.version=` from `envi`; monitoring tools read `mntr`'s tab-separated pairs). Which words are answered:
//! [`crate::ServerConfig::four_letter_words`] (by default `srvr`, `ruok` and `isro` only: the others tell what ACLs
//! hide, such as ephemeral node names, session ids and client addresses).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::ServerConfig;
use crate::metrics::{self, Figures, NOT_SERVING, VERSION};
use crate::shared::Shared;
use crate::state::State;
use crate::stream::Stream;

/// Every command ZooKeeper knows (so an unlisted one gets the whitelist message, not a protocol error).
const KNOWN: &[&str] = &[
    "ruok", "srvr", "stat", "mntr", "cons", "envi", "wchs", "dump", "conf", "crst", "srst", "wchc", "wchp",
    "dirs", "gtmk", "stmk", "isro", "hash",
];

/// Recognises a four-letter word in the first four bytes of a connection.
pub fn detect(first: &[u8]) -> Option<&'static str> {
    KNOWN.iter().copied().find(|w| w.as_bytes() == first)
}

/// Writes the answer and closes.
pub async fn answer(shared: &Arc<Shared>, cmd: &'static str, wr: Stream) {
    let allowed = allowed(&shared.config.four_letter_words, cmd);
    let text = if allowed {
        render(shared, cmd)
    } else {
        format!("{cmd} is not executed because it is not in the whitelist.\n")
    };
    let _ = wr.write_all(text.as_bytes()).await;
    let _ = wr.shutdown(std::net::Shutdown::Write);
}

/// Whether `cmd` is answered with `whitelist` (`4lw.commands.whitelist`): listed, or `*` listed, or `srvr`, which
/// ZooKeeper adds to every whitelist (it uses the word itself). Anything else gets ZooKeeper 3.8's exact answer,
/// `<word> is not executed because it is not in the whitelist.\n` (checked against a real 3.8 server).
pub fn allowed(whitelist: &[String], cmd: &str) -> bool {
    cmd == "srvr" || whitelist.iter().any(|w| w == cmd || w == "*")
}

/// The answer to an allowed word.
fn render(shared: &Arc<Shared>, cmd: &str) -> String {
    if shared.durable.failed() {
        if let Some(text) = not_serving(cmd) {
            return text;
        }
    }
    match cmd {
        // Without the state lock: answering must not wait behind (or stop) the requests being served.
        "ruok" => return "imok".into(),
        "isro" => return "rw".into(),
        _ => {}
    }
    let st = shared.lock();
    let mut s = String::new();
    match cmd {
        "srvr" | "stat" => server_stats(shared, &st, cmd == "stat", &mut s),
        "cons" => {
            clients(&st, &mut s);
            s.push('\n');
        }
        // The same figures `zklock serve --metrics` serves (metrics.rs).
        "mntr" => s.push_str(&Figures::read(shared, &st).mntr()),
        "envi" => environment(&mut s),
        "wchs" => watch_summary(&st, &mut s),
        "dump" => dump(&st, &mut s),
        "conf" => conf(&shared.config, &mut s),
        // wchc: watched paths by session; wchp: sessions by watched path (ZooKeeper's layout).
        "wchc" | "wchp" => {
            watches_by(&st, cmd == "wchc", &mut s);
            s.push('\n');
        }
        // Recognised, but resetting statistics or digests means nothing here.
        _ => {
            let _ = writeln!(s, "{cmd} is not supported by this server.");
        }
    }
    s
}

/// The log cannot be written: the server no longer serves. Answered the way ZooKeeper answers while not running:
/// `ruok` gets nothing at all (ZooKeeper's documented contract: no answer unless it runs in a non-error state),
/// `isro` "null", and the words that describe the serving state the not-serving line; `None` for the other words,
/// answered as usual.
fn not_serving(cmd: &str) -> Option<String> {
    match cmd {
        "ruok" => Some(String::new()),
        "isro" => Some("null".into()),
        "srvr" | "stat" | "mntr" | "cons" | "dump" | "wchs" | "wchc" | "wchp" => {
            Some(format!("{NOT_SERVING}\n"))
        }
        _ => None,
    }
}

/// One line per connection, by peer address (`stat`, `cons`, `dump`).
fn clients(st: &State, s: &mut String) {
    let mut conns: Vec<_> = st.conns.values().collect();
    conns.sort_by_key(|c| c.peer);
    for c in conns {
        let _ = writeln!(
            s,
            " /{}[1](queued={},recved={},sent={},sid=0x{:x},lop={})",
            c.peer,
            c.outbox.outstanding.load(Ordering::Relaxed),
            c.outbox.received.load(Ordering::Relaxed),
            c.outbox.sent.load(Ordering::Relaxed),
            c.session,
            c.last_op
        );
    }
}

/// `srvr`, and `stat` (`with_clients`: the same with the connections listed).
fn server_stats(shared: &Shared, st: &State, with_clients: bool, s: &mut String) {
    let _ = writeln!(s, "Zookeeper version: {VERSION}");
    if with_clients {
        s.push_str("Clients:\n");
        clients(st, s);
        s.push('\n');
    }
    let latency = shared.latency.read();
    let _ = writeln!(
        s,
        "Latency min/avg/max: {}/{}/{}",
        latency.min_ms,
        latency.avg_text(),
        latency.max_ms
    );
    let _ = writeln!(s, "Received: {}", st.counters.received);
    let _ = writeln!(s, "Sent: {}", st.counters.sent);
    let _ = writeln!(s, "Connections: {}", st.conns.len());
    let _ = writeln!(s, "Outstanding: {}", metrics::outstanding_requests(st));
    let _ = writeln!(s, "Zxid: 0x{:x}", st.last_zxid);
    let _ = writeln!(s, "Mode: standalone");
    let _ = writeln!(s, "Node count: {}", metrics::znode_count(st));
}

/// `envi`: the version (kazoo reads it) and the process's environment.
fn environment(s: &mut String) {
    s.push_str("Environment:\n");
    let _ = writeln!(s, "zookeeper.version={VERSION}");
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    let _ = writeln!(s, "host.name={host}");
    let _ = writeln!(s, "os.name={}", std::env::consts::OS);
    let _ = writeln!(s, "os.arch={}", std::env::consts::ARCH);
    let _ = writeln!(
        s,
        "user.dir={}",
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    );
}

/// `wchs`: connections, watched paths and watches.
fn watch_summary(st: &State, s: &mut String) {
    // A scan of every watched path, as ZooKeeper's `wchs` does; asked for only by this word.
    let (watched_paths, watches) = st.watches.counts();
    let _ = writeln!(
        s,
        "{} connections watching {watched_paths} paths",
        st.watches.by_conn().len()
    );
    let _ = writeln!(s, "Total watches:{watches}");
}

/// `dump`: sessions with their timeouts, ephemeral nodes by session, connections.
fn dump(st: &State, s: &mut String) {
    s.push_str("SessionTracker dump:\n");
    let mut sessions: Vec<_> = st.sessions.iter().map(|x| (x.id, x.timeout_ms)).collect();
    sessions.sort_unstable();
    let _ = writeln!(s, "Global Sessions({}):", sessions.len());
    for (id, timeout) in sessions {
        let _ = writeln!(s, "0x{id:x}\t{timeout}ms");
    }
    s.push_str("ephemeral nodes dump:\n");
    let mut by_session: Vec<_> = st.tree.ephemerals().iter().collect();
    by_session.sort_by_key(|(id, _)| **id);
    let _ = writeln!(s, "Sessions with Ephemerals ({}):", by_session.len());
    for (id, paths) in by_session {
        let _ = writeln!(s, "0x{id:x}:");
        for p in paths {
            let _ = writeln!(s, "\t{p}");
        }
    }
    s.push_str("Connections dump:\n");
    clients(st, s);
}

/// `conf`: the ports, tick time, connection limit and session timeout bounds.
fn conf(c: &ServerConfig, s: &mut String) {
    let plain = if c.plain_client_port {
        i32::from(c.listen.port())
    } else {
        -1
    };
    let _ = writeln!(s, "clientPort={plain}");
    let secure = c.tls.as_ref().map_or(-1, |tls| i32::from(tls.listen.port()));
    let _ = writeln!(s, "secureClientPort={secure}");
    let _ = writeln!(s, "tickTime={}", c.tick_time.as_millis());
    let _ = writeln!(s, "maxClientCnxns={}", c.max_client_cnxns);
    let (min, max) = c.session_timeout_bounds();
    let _ = writeln!(s, "minSessionTimeout={}", min.as_millis());
    let _ = writeln!(s, "maxSessionTimeout={}", max.as_millis());
    let _ = writeln!(s, "serverId=0");
}

/// `wchc` (`by_session`: watched paths under each session) or `wchp` (sessions under each watched path).
fn watches_by(st: &State, by_session: bool, s: &mut String) {
    let session_of = |c: &crate::watch::ConnId| st.conns.get(c).map_or(0, |c| c.session);
    let mut pairs: Vec<(i64, String)> = st
        .watches
        .by_conn()
        .into_iter()
        .flat_map(|(c, paths)| {
            let sid = session_of(&c);
            paths.into_iter().map(move |p| (sid, p))
        })
        .collect();
    if by_session {
        pairs.sort();
        let mut last = None;
        for (sid, p) in pairs {
            if last != Some(sid) {
                let _ = writeln!(s, "0x{sid:x}");
                last = Some(sid);
            }
            let _ = writeln!(s, "\t{p}");
        }
    } else {
        let mut by_path: Vec<(String, i64)> = pairs.into_iter().map(|(sid, p)| (p, sid)).collect();
        by_path.sort();
        let mut last: Option<String> = None;
        for (p, sid) in by_path {
            if last.as_deref() != Some(p.as_str()) {
                let _ = writeln!(s, "{p}");
                last = Some(p);
            }
            let _ = writeln!(s, "\t0x{sid:x}");
        }
    }
}
