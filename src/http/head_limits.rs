//! Bounds on a request's head, answered in the envelope before any route
//! runs: a request target over [`MAX_URI`] bytes is 414 `uri_too_long`; a
//! header field over [`MAX_FIELD`] bytes, or all of them over
//! [`MAX_FIELDS`], is 431 `headers_too_large` (RFC 9110 §15.5.15, RFC
//! 6585 §5). The HTTP parser's own bounds lie beyond these (a head of
//! 128 KiB, a request target of 64 KiB), where it answers 431 and 400
//! itself without the envelope.
use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    ResponseError,
};

use crate::error::{ApiError, Code};

/// As nginx's default `large_client_header_buffers`: 8 KiB.
pub const MAX_URI: usize = 8 * 1024;
pub const MAX_FIELD: usize = 8 * 1024;
pub const MAX_FIELDS: usize = 32 * 1024;

pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match refusal(&req) {
        Some(error) => Ok(req.into_response(error.error_response()).map_into_right_body()),
        None => Ok(next.call(req).await?.map_into_left_body()),
    }
}

fn refusal(req: &ServiceRequest) -> Option<ApiError> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI {
        return Some(ApiError::new(Code::UriTooLong, format!("The request target is over {MAX_URI} bytes.")));
    }
    // A field's size as HTTP/2 counts it (RFC 9113 §6.5.2): name, value and 32 bytes.
    let sizes = req.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 32);
    let (mut total, mut largest) = (0, 0);
    for size in sizes {
        total += size;
        largest = largest.max(size);
    }
    (largest > MAX_FIELD || total > MAX_FIELDS).then(|| {
        let message = format!("A header field is over {MAX_FIELD} bytes, or all of them over {MAX_FIELDS}.");
        ApiError::new(Code::HeadersTooLarge, message)
    })
}
