//! No answer is stored by a cache unless its operation says otherwise.
//! Answers carry tokens, secrets and personal data (sign-in, refresh, key
//! creation, secret rotation, TOTP enrolment, user records), so the rule is
//! declared once, here, for every route: `Cache-Control: no-store`. The
//! public documents (JWKS, discovery) set their own caching and keep it.
use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderValue, CACHE_CONTROL},
    middleware::Next,
};

pub async fn no_store_unless_declared(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let headers = res.headers_mut();
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(res)
}
