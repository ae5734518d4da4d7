//! Logs (tracing, to stderr) and the Prometheus metrics recorder.
use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::config::LogFormat;

pub fn init_logging(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sea_orm_migration=warn".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

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
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("duration_seconds".into()),
                    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0],
                )
                .expect("bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            let _ = metrics::set_global_recorder(recorder);
            // Exported from the start, so an alert on it has a series
            // before the first overload rather than "no data".
            metrics::counter!("password_hash_shed_total").absolute(0);
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
