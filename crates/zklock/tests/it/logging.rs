//! What the recipes log: a span around every acquire and release naming the path, with an event at its end, seen
//! by a `tracing` layer of the test's own (installed for the test's thread, around a current-thread runtime, so
//! tests running in parallel never see each other's lines). The server is the shared embedded one.

use std::fmt::Debug;
use std::sync::{Arc, Mutex as StdMutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use zklock::Mutex;
use zklock_testkit::unique_path;

use crate::support::*;

/// The fields of a span or an event, as text.
#[derive(Debug, Clone, Default)]
struct Fields(Vec<(String, String)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

/// An event, with the span it happened in.
#[derive(Debug, Clone)]
struct Line {
    span: String,
    span_fields: Fields,
    fields: Fields,
}

/// Every event inside a span, kept.
#[derive(Clone, Default)]
struct Captured(Arc<StdMutex<Vec<Line>>>);

impl Captured {
    fn lines(&self) -> Vec<Line> {
        self.0.lock().unwrap().clone()
    }

    /// The events of spans named `span` whose message is `message`.
    fn find(&self, span: &str, message: &str) -> Vec<Line> {
        self.lines()
            .into_iter()
            .filter(|line| line.span == span && line.fields.get("message") == Some(message))
            .collect()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else { return };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let span_fields = span.extensions().get::<Fields>().cloned().unwrap_or_default();
        let line = Line {
            span: span.name().to_owned(),
            span_fields,
            fields,
        };
        self.0.lock().unwrap().push(line);
    }
}

/// An acquire, a busy try and a release each log in a span naming the path; before the release, no release line
/// exists (the control: the lines are the library's, not the checker's).
#[test]
fn acquire_and_release_are_logged_in_spans_with_the_path() {
    // The process-wide subscriber first. tracing-core caches each callsite's interest, and while only one
    // subscriber is registered it asks just the registering thread's: a callsite first reached by another test's
    // thread would then be cached as uninteresting, and this test's layer would never see it.
    zklock_testkit::init_tracing();
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let hosts = embedded().await;
            let dir = unique_path("logging");
            let (a, b) = (client(&hosts).await, client(&hosts).await);
            let guard = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
            let node = guard.path().to_owned();
            assert!(Mutex::new(&b, &dir).unwrap().try_lock().await.unwrap().is_none());

            let ended = captured.find("acquire", "acquire ended");
            let outcomes: Vec<_> = ended
                .iter()
                .map(|l| l.fields.get("outcome").unwrap_or("?"))
                .collect();
            assert_eq!(outcomes, ["acquired", "busy"], "{:?}", captured.lines());
            for line in &ended {
                assert_eq!(line.span_fields.get("path"), Some(dir.as_str()), "{line:?}");
                assert_eq!(line.span_fields.get("recipe"), Some("mutex"), "{line:?}");
            }
            assert_eq!(ended[0].fields.get("node"), Some(node.as_str()));
            assert!(
                captured.find("release", "released").is_empty(),
                "released before the release"
            );

            guard.release().await.unwrap();
            let released = captured.find("release", "released");
            assert_eq!(released.len(), 1, "{:?}", captured.lines());
            assert_eq!(released[0].span_fields.get("path"), Some(node.as_str()));
        })
    });
}
