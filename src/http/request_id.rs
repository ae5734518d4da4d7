//! Request ids: the caller's `x-request-id` when it is sane, else a new one;
//! echoed in the header and in `meta.request_id` of every envelope.
use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderName, HeaderValue},
    middleware::Next,
    Error,
};
use tracing::Instrument;
use uuid::Uuid;

tokio::task_local! {
    static REQUEST_ID: String;
}

const HEADER: &str = "x-request-id";

/// The id of the request being answered ("" outside a request).
pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

fn acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|id| acceptable(id))
        .map(str::to_owned)
        .unwrap_or_else(|| Uuid::now_v7().to_string());
    // Every event logged while answering carries the request's id (the
    // JSON log format writes the span's fields on each line).
    let span = tracing::info_span!("request", request_id = %id);
    let mut response = REQUEST_ID.scope(id.clone(), next.call(req)).instrument(span.clone()).await?;
    span.in_scope(|| tracing::debug!(status = response.status().as_u16(), "answered"));
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static(HEADER), value);
    }
    Ok(response)
}
