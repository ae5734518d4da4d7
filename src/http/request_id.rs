//! Request ids: the caller's `x-request-id` when it is sane, else a new one;
//! echoed in the header and in `meta.request_id` of every envelope.
use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderName, HeaderValue},
    middleware::Next,
    Error,
};
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
    let mut response = REQUEST_ID.scope(id.clone(), next.call(req)).await?;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static(HEADER), value);
    }
    Ok(response)
}
