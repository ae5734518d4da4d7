//! HTTP plumbing shared by every route: the envelope, request ids, JSON
//! bodies and query strings parsed into 4xx answers, metrics.
pub mod body;
pub mod caching;
pub mod cors;
pub mod envelope;
pub mod errors;
pub mod head_limits;
pub mod metrics;
pub mod oauth_form;
pub mod query;
pub mod request_id;

use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// A redirect that no cache or referrer keeps (the browser flows': it
/// carries a `state` or a one-time code).
pub fn redirect(status: actix_web::http::StatusCode, location: &str) -> actix_web::HttpResponse {
    use actix_web::http::header;
    actix_web::HttpResponse::build(status)
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// A path id that is not a UUID names nothing: 404, like an unknown id.
pub fn path_id(what: &str, raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ApiError::not_found(what, raw.escape_debug()))
}
