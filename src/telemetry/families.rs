//! Every metric family the service exports, in one list. The recorder
//! takes each histogram's buckets from it and each family's HELP text;
//! `docs/reference/metrics.md` is generated from it; and a test reads the
//! source so that no code records a name the list lacks.
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

pub enum Kind {
    Counter,
    Gauge,
    /// With its buckets' upper bounds: a histogram, not a summary, so that
    /// its figures add up across nodes.
    Histogram(&'static [f64]),
}

pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub labels: &'static str,
    pub help: &'static str,
}

/// Latencies, from half a millisecond to ten seconds.
const LATENCY_SECONDS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

pub const FAMILIES: &[Family] = &[
    Family {
        name: "gatehouse_build_info",
        kind: Kind::Gauge,
        labels: "version, commit",
        help: "Always 1; its labels name the running version and the commit it was built from.",
    },
    Family {
        name: "gatehouse_http_requests_total",
        kind: Kind::Counter,
        labels: "method, route (the route's template, or `unmatched`), status",
        help: "HTTP requests answered.",
    },
    Family {
        name: "gatehouse_http_request_duration_seconds",
        kind: Kind::Histogram(LATENCY_SECONDS),
        labels: "method, route, status",
        help: "Time from a request's arrival to its answer.",
    },
    Family {
        name: "gatehouse_http_malformed_requests_total",
        kind: Kind::Counter,
        labels: "",
        help: "Requests the HTTP parser refused before any route saw them.",
    },
    Family {
        name: "gatehouse_forward_retries_total",
        kind: Kind::Counter,
        labels: "region",
        help: "Forwarded requests tried again on another node of their region after a node failed.",
    },
    Family {
        name: "gatehouse_cache_requests_total",
        kind: Kind::Counter,
        labels: "cache, layer (`local`, `redis`, `database`), outcome (`hit`, `miss`, `error`)",
        help: "Cache lookups by cache, layer and outcome.",
    },
    Family {
        name: "gatehouse_auth_rejected_total",
        kind: Kind::Counter,
        labels: "reason (`malformed`, `unknown`, `inactive`)",
        help: "Secret keys refused.",
    },
    Family {
        name: "gatehouse_access_token_rejected_total",
        kind: Kind::Counter,
        labels: "reason",
        help: "End users' access tokens refused.",
    },
    Family {
        name: "gatehouse_refresh_refused_total",
        kind: Kind::Counter,
        labels: "reason",
        help: "Refresh tokens refused (unknown, reused, expired, another client's).",
    },
    Family {
        name: "gatehouse_refresh_batch_size",
        kind: Kind::Histogram(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
        labels: "",
        help: "Refresh-token rotations written together in one group commit.",
    },
    Family {
        name: "gatehouse_sqlite_group_commit_members",
        kind: Kind::Histogram(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),
        labels: "",
        help: "Write transactions each flush of a SQLite file commits: 1 alone, more when queued writers are group-committed.",
    },
    Family {
        name: "gatehouse_sign_ups_refused_total",
        kind: Kind::Counter,
        labels: "reason",
        help: "Sign-ups refused by the application's sign-up restrictions.",
    },
    Family {
        name: "gatehouse_password_hash_shed_total",
        kind: Kind::Counter,
        labels: "",
        help: "Password hashes refused (503) because every core and the queue were busy.",
    },
    Family {
        name: "gatehouse_machine_tokens_total",
        kind: Kind::Counter,
        labels: "outcome (`issued`, or the OAuth error)",
        help: "Client-credentials requests of service accounts.",
    },
    Family {
        name: "gatehouse_openid_provider_total",
        kind: Kind::Counter,
        labels: "endpoint, outcome",
        help: "Answers of the OpenID Provider's endpoints (authorize, token, userinfo, introspect, revoke, logout).",
    },
    Family {
        name: "gatehouse_mail_total",
        kind: Kind::Counter,
        labels: "outcome",
        help: "Emails of the mail queue by outcome (sent, retried, failed, skipped).",
    },
    Family {
        name: "gatehouse_webhook_attempts_total",
        kind: Kind::Counter,
        labels: "outcome (`succeeded`, `failed`)",
        help: "Webhook delivery attempts.",
    },
    Family {
        name: "gatehouse_webhook_message_age_seconds",
        kind: Kind::Histogram(&[0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0]),
        labels: "",
        help: "Age of a webhook message at each delivery attempt (retries are old by design).",
    },
];

/// The recorder's builder with every histogram's buckets.
pub fn with_buckets(mut builder: PrometheusBuilder) -> PrometheusBuilder {
    for family in FAMILIES {
        if let Kind::Histogram(buckets) = family.kind {
            builder = builder
                .set_buckets_for_metric(Matcher::Full(family.name.into()), buckets)
                .expect("a histogram has buckets");
        }
    }
    builder
}

/// Registers every family's HELP text with the installed recorder.
pub fn describe_all() {
    for family in FAMILIES {
        match family.kind {
            Kind::Counter => metrics::describe_counter!(family.name, family.help),
            Kind::Gauge => metrics::describe_gauge!(family.name, family.help),
            Kind::Histogram(_) => metrics::describe_histogram!(family.name, family.help),
        }
    }
}

/// The metrics reference of the docs, generated from the list.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Metrics\n\n\
         <!-- Generated from src/telemetry/families.rs by `GATEHOUSE_WRITE_DOCS=1 cargo test --lib telemetry`. -->\n\n\
         `GET /metrics` answers the Prometheus text format: every family below with its HELP text, \
         then the standard process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`, \
         `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, `process_start_time_seconds`). \
         Histograms (not summaries) add up across nodes: take quantiles with \
         `histogram_quantile(0.99, sum by (le) (rate(…_bucket[5m])))`. Every label comes from a closed set, \
         so no client can grow the series. `deploy/grafana/gatehouse.json` and `deploy/prometheus/alerts.yml` \
         use these names; [operations/alerts.md](../operations/alerts.md) says what to do when each alert fires.\n\n\
         | name | type | labels | meaning |\n|---|---|---|---|\n",
    );
    for family in FAMILIES {
        let kind = match family.kind {
            Kind::Counter => "counter".to_string(),
            Kind::Gauge => "gauge".to_string(),
            Kind::Histogram(buckets) => {
                format!("histogram ({})", buckets.iter().map(f64::to_string).collect::<Vec<_>>().join(", "))
            }
        };
        let labels = if family.labels.is_empty() { "none" } else { family.labels };
        out.push_str(&format!("| `{}` | {} | {} | {} |\n", family.name, kind, labels, family.help));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every name in a `counter!`, `gauge!` or `histogram!` under `src/`.
    fn recorded_names() -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        let sources = crate::generated_docs::files_under("src");
        for path in sources.iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
            let text = std::fs::read_to_string(path).unwrap();
            for macro_call in ["counter!(", "gauge!(", "histogram!("] {
                for (at, _) in text.match_indices(macro_call) {
                    let rest = text[at + macro_call.len()..].trim_start();
                    let quoted = rest.strip_prefix('"').and_then(|q| q.split_once('"')).map(|(name, _)| name);
                    // A metric's name, not this test's own `"counter!("` strings.
                    if let Some(name) = quoted.filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_')) {
                        names.insert(name.to_string());
                    }
                }
            }
        }
        names
    }

    #[test]
    fn every_recorded_metric_is_a_listed_family_with_the_prefix_and_help() {
        let listed: BTreeSet<String> = FAMILIES.iter().map(|f| f.name.to_string()).collect();
        let recorded = recorded_names();
        assert!(recorded.len() >= 15, "the source scan found {recorded:?}");
        for name in &recorded {
            assert!(listed.contains(name), "`{name}` is recorded but not in FAMILIES");
        }
        for family in FAMILIES {
            assert!(recorded.contains(family.name), "`{}` is listed but never recorded", family.name);
            assert!(family.name.starts_with("gatehouse_"), "`{}` lacks the prefix", family.name);
            assert!(!family.help.is_empty() && !family.help.contains('|') && !family.labels.contains('|'));
            let counter = matches!(family.kind, Kind::Counter);
            assert_eq!(counter, family.name.ends_with("_total"), "`{}`: only counters end in _total", family.name);
        }
    }

    #[test]
    fn docs_metrics_md_is_generated_from_the_list() {
        crate::generated_docs::assert_generated("docs/reference/metrics.md", &markdown());
    }
}
