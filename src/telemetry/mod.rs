//! Logs (tracing, to stderr) and the Prometheus metrics recorder.
pub mod families;
pub mod process;

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::{
    filter::{filter_fn, FilterExt},
    layer::{Filter, SubscriberExt},
    util::SubscriberInitExt,
    Layer,
};

use crate::config::LogFormat;

/// Where actix-http logs, at ERROR, each request it refuses itself before
/// any handler runs (`stream error: …`: a malformed request line, header or
/// chunk). A stranger decides how many of those there are. Its other ERROR
/// lines (a response body that failed, say) are ours and stay.
const HTTP_PARSER: &str = "actix_http::h1::dispatcher";
const PARSER_REFUSAL: &str = "stream error";
/// How often the refused requests are summed up in one WARN line.
const MALFORMED_SUMMARY_EVERY: Duration = Duration::from_secs(10);

pub fn init_logging(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sea_orm_migration=warn".into());
    // Colour only for a person at a terminal, never in a file or a collector.
    let output = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let output = match format {
        LogFormat::Text => output.boxed(),
        LogFormat::Json => output.json().flatten_event(true).boxed(),
    };
    let malformed = MalformedRequests::start();
    let parser_errors = filter_fn(|meta| meta.target() == HTTP_PARSER && *meta.level() == tracing::Level::ERROR)
        .with_max_level_hint(tracing::Level::ERROR);
    // The parser's refusals are counted (below) instead of written.
    let _ = tracing_subscriber::registry()
        .with(output.with_filter(filter.and(NotParserRefusals)))
        .with(malformed.with_filter(parser_errors))
        .try_init();
}

/// Whether an event is one of the HTTP parser's refusals of a request.
fn is_parser_refusal(event: &tracing::Event<'_>) -> bool {
    struct Message(bool);
    impl tracing::field::Visit for Message {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}").starts_with(PARSER_REFUSAL);
            }
        }
    }
    let meta = event.metadata();
    if meta.target() != HTTP_PARSER || *meta.level() != tracing::Level::ERROR {
        return false;
    }
    let mut message = Message(false);
    event.record(&mut message);
    message.0
}

/// Lets through every event but the parser's refusals.
struct NotParserRefusals;

impl<S> Filter<S> for NotParserRefusals {
    fn enabled(&self, _: &tracing::Metadata<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &tracing::Event<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        !is_parser_refusal(event)
    }

    /// No limit of its own: beside the `EnvFilter`, the level is that filter's.
    fn max_level_hint(&self) -> Option<tracing_subscriber::filter::LevelFilter> {
        Some(tracing_subscriber::filter::LevelFilter::TRACE)
    }
}

/// Counts the requests the HTTP parser refused (metric
/// `gatehouse_http_malformed_requests_total`) and writes one WARN line with their
/// number every ten seconds at most, so no client can fill the error log.
#[derive(Clone)]
struct MalformedRequests(Arc<AtomicU64>);

impl MalformedRequests {
    fn start() -> Self {
        let counted = MalformedRequests(Arc::default());
        let summary = counted.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(MALFORMED_SUMMARY_EVERY);
            let count = summary.0.swap(0, Ordering::Relaxed);
            if count > 0 {
                tracing::warn!(count, "malformed requests refused by the HTTP parser in the last 10 s");
            }
        });
        counted
    }
}

impl<S: tracing::Subscriber> Layer<S> for MalformedRequests {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if !is_parser_refusal(event) {
            return;
        }
        self.0.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("gatehouse_http_malformed_requests_total").increment(1);
    }
}

/// This build's version (Cargo.toml) and the commit it was built from.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const COMMIT: &str = env!("GATEHOUSE_COMMIT");
/// Both, as `gatehouse --version` prints them.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("GATEHOUSE_COMMIT"), ")");

/// How often histogram samples are folded into their buckets.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The process-wide recorder; installed once, shared by every server in it.
///
/// A recorder built with `build_recorder` keeps every histogram sample in
/// a buffer until an upkeep (or a scrape) folds it into the buckets: a node
/// nobody scrapes grew by every request's latency sample, 3 MiB a minute
/// under the soak (found with heaptrack: `AtomicBucket::push`). A thread
/// runs the upkeep whether or not anyone scrapes.
pub fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = families::with_buckets(PrometheusBuilder::new()).build_recorder();
            let handle = recorder.handle();
            let _ = metrics::set_global_recorder(recorder);
            families::describe_all();
            // Exported from the start, so an alert on it has a series
            // before the first overload rather than "no data".
            metrics::counter!("gatehouse_password_hash_shed_total").absolute(0);
            metrics::gauge!("gatehouse_build_info", "version" => VERSION, "commit" => COMMIT).set(1.0);
            let upkeep = handle.clone();
            std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || loop {
                    std::thread::sleep(UPKEEP_EVERY);
                    upkeep.run_upkeep();
                })
                .expect("the metrics upkeep thread starts");
            handle
        })
        .clone()
}
