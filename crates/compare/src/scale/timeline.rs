//! The timeline of a hand-off (`compare-scale --sections timeline`): every step from a holder's release call to the
//! next holder's acquire returning, with timestamps on both sides of the wire.
//!
//! * **Client** (this process): the `trace` events of target `zklock::timeline` that zklock emits on the hand-off
//!   path (`release`, `deleted`, `notified`, `look-ahead notified`, `listing`, `listed`, `turn`, `own node
//!   watched`) and this benchmark's own `compare::timeline` events (`releasing`, `acquired`: the two ends of the
//!   measured hand-off). Off unless a subscriber enables them; [`install`] does, for this section only.
//! * **Server** (the embedded one, a process of its own): the `trace` events of target `zklock_server::timeline`
//!   (`request` with session, xid and opcode; `queued` with session, peer, xid, reply or notification and the zxid it
//!   waits for; `durable` with the zxid made durable; `written` with peer and xid), recorded by the same [`Recorder`]
//!   in `compare-scale __serve` when [`ENV`] names a file, and written there when the server stops.
//!
//! Every event is stamped with `CLOCK_MONOTONIC`, the same clock in both processes. [`analyse`] pairs each hand-off
//! with the server's handling of the releaser's delete and reports the median of each segment.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt as _};
use tracing_subscriber::Layer;

/// The environment variable that makes `compare-scale __serve` record its timeline into the file it names.
pub const ENV: &str = "ZKLOCK_SCALE_TIMELINE";

/// The most events one process records (a bound on its memory; the rest are dropped and counted).
const MAX_EVENTS: usize = 2_000_000;

/// One recorded event.
#[derive(Debug, Clone)]
pub struct Event {
    /// `CLOCK_MONOTONIC`, ns.
    pub ns: i64,
    /// `client`, `bench` or `server`.
    pub side: &'static str,
    /// The event's message (`release`, `request`, …).
    pub what: String,
    /// Its fields, as text.
    pub fields: BTreeMap<String, String>,
}

impl Event {
    fn int(&self, name: &str) -> Option<i64> {
        self.fields.get(name)?.parse().ok()
    }

    fn flag(&self, name: &str) -> Option<bool> {
        self.fields.get(name)?.parse().ok()
    }

    fn session(&self) -> Option<i64> {
        self.int("session")
    }

    /// One line of the server's file.
    fn to_line(&self) -> String {
        let mut line = format!("{}\t{}\t{}", self.ns, self.side, self.what);
        for (k, v) in &self.fields {
            let _ = write!(line, "\t{k}={v}");
        }
        line
    }

    fn from_line(line: &str) -> Option<Event> {
        let mut parts = line.split('\t');
        let ns = parts.next()?.parse().ok()?;
        let side = match parts.next()? {
            "server" => "server",
            "bench" => "bench",
            _ => "client",
        };
        let what = parts.next()?.to_string();
        let fields = parts
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Some(Event {
            ns,
            side,
            what,
            fields,
        })
    }
}

/// `CLOCK_MONOTONIC` now, ns.
pub fn now_ns() -> i64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
        Ok(t) => t.tv_sec() * 1_000_000_000 + t.tv_nsec(),
        Err(_) => 0,
    }
}

static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());

/// The layer that records the timeline events of this process.
pub struct Recorder;

struct Fields<'a> {
    what: &'a mut String,
    fields: &'a mut BTreeMap<String, String>,
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.what = format!("{value:?}");
        } else {
            self.fields.insert(field.name().to_string(), format!("{value:?}"));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            *self.what = value.to_string();
        } else {
            self.fields.insert(field.name().to_string(), value.to_string());
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: LayerContext<'_, S>) {
        let ns = now_ns();
        let side = match event.metadata().target() {
            "zklock::timeline" => "client",
            "compare::timeline" => "bench",
            "zklock_server::timeline" => "server",
            _ => return,
        };
        let (mut what, mut fields) = (String::new(), BTreeMap::new());
        event.record(&mut Fields {
            what: &mut what,
            fields: &mut fields,
        });
        let mut events = EVENTS.lock().unwrap_or_else(|p| p.into_inner());
        if events.len() < MAX_EVENTS {
            events.push(Event {
                ns,
                side,
                what,
                fields,
            });
        }
    }
}

/// Records this process's timeline events from now on (the first call installs the subscriber; later calls do
/// nothing).
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let filter = tracing_subscriber::filter::Targets::new()
            .with_target("zklock::timeline", tracing::Level::TRACE)
            .with_target("compare::timeline", tracing::Level::TRACE)
            .with_target("zklock_server::timeline", tracing::Level::TRACE);
        let subscriber = tracing_subscriber::registry().with(Recorder.with_filter(filter));
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Takes every event recorded so far.
pub fn take() -> Vec<Event> {
    std::mem::take(&mut *EVENTS.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Writes the events recorded so far into `path` (the server, as it stops).
pub fn write(path: &Path) -> Result<()> {
    let mut text = String::new();
    for event in take() {
        text.push_str(&event.to_line());
        text.push('\n');
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path)?;
    Ok(())
}

/// Reads a file [`write()`] wrote.
pub fn read(path: &Path) -> Result<Vec<Event>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.lines().filter_map(Event::from_line).collect())
}

/// The median of each segment of a hand-off, over the hand-offs of one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Server (label).
    pub server: String,
    /// Sessions queued.
    pub waiters: usize,
    /// Hand-offs analysed.
    pub handoffs: usize,
    /// `W` of the server ([`super::floor`]), measured just before, µs.
    #[serde(default)]
    pub w_us: Option<f64>,
    /// `W` with each delete after a pause of `--hold-ms` ([`super::floor::measure_after`]), µs.
    #[serde(default)]
    pub w_idle_us: Option<f64>,
    /// Segments in order: (name, median µs, p90 µs). Each is the time from the end of the one before it
    /// (server-side segments only where the server's events were recorded).
    pub segments: Vec<(String, f64, f64)>,
    /// Other medians, µs (not part of the chain): e.g. the releaser's delete reply.
    pub other: Vec<(String, f64)>,
    /// Per hand-off medians of what else happened inside the window (counts).
    pub inside: Vec<(String, f64)>,
}

fn median_and_p90(values: &mut [f64]) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    (at(0.5), at(0.9))
}

/// One hand-off's steps, ns (absolute, `CLOCK_MONOTONIC`).
#[derive(Debug, Default)]
struct Steps {
    releasing: i64,
    acquired: i64,
    /// Client: the release call in zklock.
    release: Option<i64>,
    /// Server: the delete request of the releaser.
    request: Option<i64>,
    durable: Option<i64>,
    /// Server: the notification to the next holder queued, then written.
    queued: Option<i64>,
    written: Option<i64>,
    /// Server: the releaser's reply written.
    reply_written: Option<i64>,
    /// Client: the next holder's watch fired.
    notified: Option<i64>,
    turn: Option<i64>,
    /// Client: the releaser saw its delete's reply.
    deleted: Option<i64>,
    /// Requests the server received inside the window, and client events inside it.
    server_requests: usize,
    listings: usize,
    notifications: usize,
}

/// Pairs every measured hand-off (a `releasing` event of the bench followed by the next `acquired`) with the
/// events between them; returns the medians per segment.
pub fn analyse(server: &str, waiters: usize, events: &mut [Event]) -> Timeline {
    events.sort_by_key(|e| e.ns);
    // The server's peer ↔ session, from its `queued` events.
    let mut peer_session: HashMap<String, i64> = HashMap::new();
    for e in events.iter().filter(|e| e.side == "server" && e.what == "queued") {
        if let (Some(peer), Some(session)) = (e.fields.get("peer"), e.session()) {
            peer_session.insert(peer.clone(), session);
        }
    }
    let mut handoffs: Vec<Steps> = Vec::new();
    let mut open: Option<(usize, i64)> = None; // (index of releasing, releaser session)
    for (i, e) in events.iter().enumerate() {
        if e.side != "bench" {
            continue;
        }
        match e.what.as_str() {
            "releasing" => open = e.session().map(|s| (i, s)),
            "acquired" => {
                let Some((start, releaser)) = open.take() else {
                    continue;
                };
                let Some(holder) = e.session() else { continue };
                if holder == releaser {
                    continue;
                }
                handoffs.push(steps(&events[start..=i], releaser, holder, &peer_session));
            }
            _ => {}
        }
    }
    let mut chain: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut push = |name: &'static str, from: Option<i64>, to: Option<i64>| {
        let value = match (from, to) {
            (Some(a), Some(b)) => Some((b - a) as f64 / 1e3),
            _ => None,
        };
        match chain.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.extend(value),
            None => chain.push((name, value.into_iter().collect())),
        }
    };
    for h in &handoffs {
        let start = Some(h.releasing);
        push("bench release call → zklock release", start, h.release);
        if h.request.is_some() {
            push("→ server reads the delete", h.release, h.request);
            push(
                "→ applied, notification to the next holder queued",
                h.request,
                h.queued,
            );
            push("→ delete durable (fsync done)", h.queued, h.durable);
            push("→ notification written to the socket", h.durable, h.written);
            push("→ next holder's watch fires (client)", h.written, h.notified);
        } else {
            push("→ next holder's watch fires (client)", h.release, h.notified);
        }
        push("→ its turn (wait_turn returns)", h.notified, h.turn);
        push("→ bench acquired (guard handed out)", h.turn, Some(h.acquired));
    }
    let mut other: Vec<(String, Vec<f64>)> = vec![
        ("hand-off (release call → acquired)".into(), Vec::new()),
        (
            "releaser's delete round trip (release → deleted)".into(),
            Vec::new(),
        ),
        ("server: request → releaser's reply written".into(), Vec::new()),
    ];
    let mut inside: Vec<(String, Vec<f64>)> = vec![
        ("requests the server read in the window".into(), Vec::new()),
        ("listings sent by clients in the window".into(), Vec::new()),
        ("notifications written in the window".into(), Vec::new()),
    ];
    for h in &handoffs {
        other[0].1.push((h.acquired - h.releasing) as f64 / 1e3);
        if let (Some(a), Some(b)) = (h.release, h.deleted) {
            other[1].1.push((b - a) as f64 / 1e3);
        }
        if let (Some(a), Some(b)) = (h.request, h.reply_written) {
            other[2].1.push((b - a) as f64 / 1e3);
        }
        inside[0].1.push(h.server_requests as f64);
        inside[1].1.push(h.listings as f64);
        inside[2].1.push(h.notifications as f64);
    }
    Timeline {
        server: server.to_string(),
        waiters,
        handoffs: handoffs.len(),
        w_us: None,
        w_idle_us: None,
        segments: chain
            .into_iter()
            .map(|(name, mut values)| {
                let (m, p90) = median_and_p90(&mut values);
                (name.to_string(), m, p90)
            })
            .collect(),
        other: other
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(name, mut values)| (name, median_and_p90(&mut values).0))
            .collect(),
        inside: inside
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(name, mut values)| (name, median_and_p90(&mut values).0))
            .collect(),
    }
}

/// The steps of one hand-off from the events between its two ends.
fn steps(window: &[Event], releaser: i64, holder: i64, peer_session: &HashMap<String, i64>) -> Steps {
    let first = |pred: &dyn Fn(&Event) -> bool| window.iter().find(|e| pred(e)).map(|e| e.ns);
    let mut s = Steps {
        releasing: window[0].ns,
        acquired: window[window.len() - 1].ns,
        ..Steps::default()
    };
    let peer_of = |e: &Event| e.fields.get("peer").and_then(|p| peer_session.get(p)).copied();
    // The first client event `what` of `session`.
    let client = |what: &str, session: i64| {
        first(&|e| e.side == "client" && e.what == what && e.session() == Some(session))
    };
    s.release = client("release", releaser);
    let request_at = first(&|e| {
        e.side == "server" && e.what == "request" && e.session() == Some(releaser) && e.int("op") == Some(2)
    });
    s.request = request_at;
    if let Some(at) = request_at {
        // The first server event `what` since the request for which `pred` holds.
        let server = |what: &str, pred: &dyn Fn(&Event) -> bool| {
            first(&|e| e.ns >= at && e.side == "server" && e.what == what && pred(e))
        };
        s.durable = server("durable", &|_| true);
        s.queued = server("queued", &|e| {
            e.session() == Some(holder) && e.flag("reply") == Some(false)
        });
        s.written = server("written", &|e| {
            peer_of(e) == Some(holder) && e.flag("reply") == Some(false)
        });
        s.reply_written = server("written", &|e| {
            peer_of(e) == Some(releaser) && e.flag("reply") == Some(true)
        });
    }
    s.notified = client("notified", holder);
    s.turn = client("turn", holder);
    s.deleted = client("deleted", releaser);
    s.server_requests = window
        .iter()
        .filter(|e| e.side == "server" && e.what == "request" && e.int("op") != Some(11))
        .count();
    s.listings = window
        .iter()
        .filter(|e| e.side == "client" && e.what == "listing")
        .count();
    s.notifications = window
        .iter()
        .filter(|e| e.side == "server" && e.what == "written" && e.flag("reply") == Some(false))
        .count();
    s
}

/// The timeline as Markdown.
pub fn markdown(timeline: &Timeline) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n#### Timeline of a hand-off: zklock on {}, N = {} ({} hand-offs; medians, µs)\n",
        timeline.server, timeline.waiters, timeline.handoffs
    );
    let _ = writeln!(out, "| step | median µs | p90 µs |\n|---|---:|---:|");
    for (name, median, p90) in &timeline.segments {
        let _ = writeln!(out, "| {name} | {median:.0} | {p90:.0} |");
    }
    if let Some(w) = timeline.w_us {
        let _ = writeln!(
            out,
            "| (W: p50 of a sequential delete round trip, same server) | {w:.0} | |"
        );
    }
    if let Some(w) = timeline.w_idle_us {
        let _ = writeln!(out, "| (W after a pause as long as the hold) | {w:.0} | |");
    }
    for (name, median) in &timeline.other {
        let _ = writeln!(out, "| ({name}) | {median:.0} | |");
    }
    for (name, median) in &timeline.inside {
        let _ = writeln!(out, "| [{name}] | {median:.0} | |");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step is the first event of its kind, side and session (or peer) — and, on the server, at or after the
    /// releaser's delete request; every step has a decoy before it that must not be taken.
    #[test]
    fn steps_take_the_first_matching_event_of_each_kind() {
        let lines = [
            "10\tbench\treleasing",
            "11\tclient\trelease\tsession=2",
            "12\tclient\trelease\tsession=1",
            "13\tserver\trequest\tsession=1\top=1",
            "14\tserver\tdurable",
            "15\tserver\trequest\tsession=1\top=2",
            "16\tserver\tqueued\tsession=1\treply=false",
            "17\tserver\tdurable",
            "18\tserver\tqueued\tsession=2\treply=true",
            "19\tserver\tqueued\tsession=2\treply=false",
            "20\tserver\twritten\tpeer=p2\treply=true",
            "21\tserver\twritten\tpeer=p1\treply=true",
            "22\tserver\twritten\tpeer=p2\treply=false",
            "23\tclient\tnotified\tsession=1",
            "24\tclient\tnotified\tsession=2",
            "25\tclient\tturn\tsession=2",
            "26\tclient\tdeleted\tsession=2",
            "27\tclient\tdeleted\tsession=1",
            "28\tbench\tacquired",
        ];
        let window: Vec<Event> = lines.iter().map(|l| Event::from_line(l).unwrap()).collect();
        let peers = HashMap::from([("p1".to_string(), 1), ("p2".to_string(), 2)]);
        let s = steps(&window, 1, 2, &peers);
        assert_eq!((s.releasing, s.acquired), (10, 28));
        assert_eq!((s.release, s.request, s.durable), (Some(12), Some(15), Some(17)));
        assert_eq!(
            (s.queued, s.written, s.reply_written),
            (Some(19), Some(22), Some(21))
        );
        assert_eq!((s.notified, s.turn, s.deleted), (Some(24), Some(25), Some(27)));
        // No delete request of the releaser: no server step.
        let s = steps(&window[..5], 1, 2, &peers);
        assert_eq!(
            (s.request, s.durable, s.queued, s.reply_written),
            (None, None, None, None)
        );
    }
}
