//! Request count and latency by route pattern, method and status, and
//! the access log line with the same fields. Every
//! label comes from a closed set, so no client can grow the metrics store:
//! methods outside RFC 9110's are `other`, paths that match no route are
//! `unmatched` (never the path itself).
use std::{cell::RefCell, collections::HashMap, time::Instant};

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::Method,
    middleware::Next,
    Error, HttpMessage,
};
use metrics::{Counter, Histogram};

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.call(req).await?;
    let request = response.request();
    let route = match request.extensions().get::<RouteLabel>() {
        Some(RouteLabel(route)) => (*route).to_owned(),
        None => request.match_pattern().unwrap_or_else(|| "unmatched".to_owned()),
    };
    let status = response.status().as_u16();
    let seconds = started.elapsed().as_secs_f64();
    // The access line, inside the request id's span (one per request;
    // `RUST_LOG=info,gatehouse::access=warn` silences it).
    tracing::info!(target: "gatehouse::access", method, route = %route, status, duration_ms = seconds * 1e3, "answered");
    record((method, route, status), seconds);
    Ok(response)
}

/// The route of a request answered before routing (the region router's
/// JWKS), set by whoever answered it: actix knows the pattern of a routed
/// request, and finds any other's by matching its path against the routes
/// again, regular expressions and all.
pub struct RouteLabel(pub &'static str);

/// A series' labels: method, route pattern, status.
type Labels = (&'static str, String, u16);

thread_local! {
    /// This worker's handles by their labels: a request takes its two
    /// handles from here rather than building the labels and looking them
    /// up in the recorder. Bounded as the labels are; no client chooses
    /// them, so a fast hash without a flooding defence serves.
    static HANDLES: RefCell<HashMap<Labels, (Counter, Histogram), foldhash::fast::FixedState>> = RefCell::default();
}

/// Counts one request of the series and records how long it took.
fn record(labels: Labels, seconds: f64) {
    HANDLES.with_borrow_mut(|handles| {
        let (count, duration) = handles.entry(labels).or_insert_with_key(|(method, route, status)| {
            let labels = [("method", (*method).to_owned()), ("route", route.clone()), ("status", status.to_string())];
            (
                metrics::counter!("gatehouse_http_requests_total", &labels),
                metrics::histogram!("gatehouse_http_request_duration_seconds", &labels),
            )
        });
        count.increment(1);
        duration.record(seconds);
    })
}

/// The method as a label: one of RFC 9110's methods or PATCH, else `other`.
pub fn method_label(method: &Method) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"];
    KNOWN.into_iter().find(|known| *known == method.as_str()).unwrap_or("other")
}
