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
    static REQUEST_ID: HeaderValue;
}

const HEADER: &str = "x-request-id";

/// Calls `f` with the id of the request being answered (empty outside a
/// request), borrowed: always visible ASCII (see [`acceptable`]).
pub fn with_current<R>(mut f: impl FnMut(&str) -> R) -> R {
    REQUEST_ID.try_with(|id| f(id.to_str().unwrap_or_default())).unwrap_or_else(|_| f(""))
}

fn acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = match req.headers().get(HEADER).filter(|v| v.to_str().is_ok_and(acceptable)) {
        Some(given) => given.clone(),
        None => {
            let new = Uuid::now_v7();
            HeaderValue::from_str(new.hyphenated().encode_lower(&mut Uuid::encode_buffer()))
                .expect("a UUID is a header value")
        }
    };
    // Every event logged while answering carries the request's id (the
    // JSON log format writes the span's fields on each line).
    let span = tracing::info_span!("request", request_id = id.to_str().unwrap_or_default());
    let mut response = REQUEST_ID.scope(id.clone(), next.call(req)).instrument(span).await?;
    response.headers_mut().insert(HeaderName::from_static(HEADER), id);
    Ok(response)
}
