//! Request count and latency by route pattern, method and status. Every
//! label comes from a closed set, so no client can grow the metrics store:
//! methods outside RFC 9110's are `other`, paths that match no route are
//! `unmatched` (never the path itself).
use std::time::Instant;

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::Method,
    middleware::Next,
    Error,
};

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.call(req).await?;
    let route = response.request().match_pattern().unwrap_or_else(|| "unmatched".to_owned());
    let labels = [("method", method.to_owned()), ("route", route), ("status", response.status().as_u16().to_string())];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    Ok(response)
}

/// The method as a label: one of RFC 9110's methods or PATCH, else `other`.
pub fn method_label(method: &Method) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"];
    KNOWN.into_iter().find(|known| *known == method.as_str()).unwrap_or("other")
}
