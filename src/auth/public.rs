//! What the public routes of an application share: the application a
//! request names (by header or by path) as the public caller, the request
//! budgets of unauthenticated callers, and how long a session lives.
use actix_web::{HttpMessage, HttpRequest};
use chrono::Duration;

use super::public_scope;
use crate::{
    error::{ApiError, ApiResult},
    http::path_id,
    state::AppState,
    storage::TenantScope,
    tenancy::Tenant,
};

/// The application of an unauthenticated end-user request, from
/// `x-application-id`, as the public caller; unknown or missing is 401 like
/// a bad credential.
pub fn public_caller(req: &HttpRequest, state: &AppState) -> ApiResult<TenantScope> {
    let tenant = req.extensions().get::<Tenant>().cloned().ok_or_else(ApiError::unauthenticated)?;
    public_scope(state, tenant).ok_or_else(ApiError::unauthenticated)
}

/// Takes one attempt from a per-minute bucket (0: no limit).
pub async fn limit(state: &AppState, req: &HttpRequest, key: String, per_minute: u32) -> ApiResult<()> {
    state.limiter.take_for(req, &key, f64::from(per_minute) / 60.0, f64::from(per_minute)).await
}

/// Takes one attempt from the client address's sign-in bucket of the
/// application (password and passkey sign-ins share it).
pub async fn limit_sign_ins_per_ip(state: &AppState, req: &HttpRequest, scope: &TenantScope) -> ApiResult<()> {
    let per_minute = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(state, req, format!("sign_in:ip:{}:{}", scope.tenant().id, client_ip(req)), per_minute).await
}

pub fn client_ip(req: &HttpRequest) -> String {
    req.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default()
}

/// How long a session opened now lives: the refresh token's time to live.
pub fn session_ttl(state: &AppState) -> Duration {
    Duration::seconds(state.settings.tokens.refresh_ttl_seconds as i64)
}

/// The application named in the path: the one the region router attached
/// (it reads the id from these paths), else resolved here.
pub async fn tenant_in_path(state: &AppState, req: &HttpRequest, raw: &str) -> ApiResult<Tenant> {
    let id = path_id("Application", raw)?;
    let attached = req.extensions().get::<Tenant>().filter(|t| t.id == id).cloned();
    let tenant = match attached {
        Some(tenant) => Some(tenant),
        None => state.directory.resolve(id).await?,
    };
    match tenant {
        Some(tenant) if state.storage.holds(tenant.region) => Ok(tenant),
        _ => Err(ApiError::not_found("Application", id)),
    }
}
