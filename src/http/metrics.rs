//! Request count and latency by route pattern, method and status.
use std::time::Instant;

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    Error,
};

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let method = req.method().as_str().to_owned();
    let response = next.call(req).await?;
    let route = response.request().match_pattern().unwrap_or_else(|| "unmatched".to_owned());
    let labels = [("method", method), ("route", route), ("status", response.status().as_u16().to_string())];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    Ok(response)
}
