//! Secret API keys on management routes. A presented key is checked for
//! shape and checksum first (a look-alike never reaches the database), then
//! looked up by its SHA-256 within the application named by
//! `x-application-id`. Key records are cached for one second, which is the
//! bound on how long a key revoked on another node keeps working (and how
//! stale another node's answer about a key can be); on the node that revokes
//! a key, it stops at once. A key is then held to the scope its operation
//! declares in the OpenAPI document ([`crate::openapi::security`]): 403 without it.
use std::{future::Future, pin::Pin, sync::Arc};

use actix_web::{dev::Payload, web, FromRequest, HttpMessage, HttpRequest};
use uuid::Uuid;

use super::ADMIN_SCOPE;
use crate::{
    areas::api_keys::KeyCache,
    crypto::{key_format, sha256},
    error::{ApiError, ApiResult, Code},
    openapi::security,
    state::AppState,
    storage::TenantScope,
    tenancy::Tenant,
};

/// An authenticated secret key and the application it belongs to.
pub struct SecretKey {
    pub id: Uuid,
    scopes: Arc<[String]>,
    /// The key's application, acting as this key.
    pub scope: TenantScope,
    keys: KeyCache,
}

impl SecretKey {
    /// Whether this key holds `scope`: itself, or `admin`, which implies
    /// every scope. Other scope strings a key carries grant nothing here.
    fn holds(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == ADMIN_SCOPE || s == scope)
    }

    /// Refuses a key without the scope its operation declares (403), and
    /// records the refusal.
    async fn authorize(self, scope: &str) -> ApiResult<SecretKey> {
        if self.holds(scope) {
            return Ok(self);
        }
        self.keys.record_refusal(&self.scope, self.id, "insufficient_scope").await;
        Err(ApiError::new(Code::InsufficientScope, format!("This operation needs the `{scope}` scope.")))
    }

    pub fn tenant(&self) -> &Tenant {
        self.scope.tenant()
    }

    /// The application named in a path (`/v1/applications/{application_id}/…`)
    /// when it is this key's own; any other, even of the same account, is 404.
    pub fn own_application(&self, raw: &str) -> ApiResult<()> {
        let id = crate::http::path_id("Application", raw)?;
        if id != self.tenant().id {
            return Err(ApiError::not_found("Application", id));
        }
        Ok(())
    }
}

/// The token of `Authorization: Bearer <token>`: exactly one header, the
/// scheme spelled as RFC 6750 does, one space, a token without spaces.
pub fn bearer_token(req: &HttpRequest) -> Option<&str> {
    let mut values = req.headers().get_all(actix_web::http::header::AUTHORIZATION);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let token = value.to_str().ok()?.strip_prefix("Bearer ")?;
    (!token.is_empty() && !token.contains(' ')).then_some(token)
}

impl FromRequest for SecretKey {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = ApiResult<SecretKey>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let tenant = req.extensions().get::<Tenant>().cloned();
        // Checked and hashed here, so the token itself is not kept.
        let presented = bearer_token(req).map(Presented::check);
        // The scope the operation declares; none where it takes no secret key.
        let required = security::of_request(req).and_then(security::Declared::secret_key_scope).map(str::to_owned);
        let req = req.clone();
        Box::pin(async move {
            let (Some(state), Some(tenant), Some(presented), Some(required)) = (state, tenant, presented, required)
            else {
                return Err(ApiError::unauthenticated());
            };
            let key = authenticate(&state, tenant, presented?).await?.authorize(&required).await?;
            let rate = f64::from(state.settings.rate_limits.management_per_application_per_second);
            if rate > 0.0 {
                // Boxed: inline, the Redis round trip would make every request's future larger.
                let bucket = format!("management:{}", key.tenant().id);
                Box::pin(state.limiter.take_for(&req, &bucket, rate, 2.0 * rate)).await?;
            }
            Ok(key)
        })
    }
}

/// A bearer token shaped as a secret key: whether it is a live one, and its SHA-256.
struct Presented {
    live: bool,
    hash: [u8; 32],
}

impl Presented {
    fn check(token: &str) -> ApiResult<Presented> {
        let Some(live) = key_format::parse(key_format::KeyKind::Secret, token) else {
            metrics::counter!("gatehouse_auth_rejected_total", "reason" => "malformed").increment(1);
            return Err(ApiError::unauthenticated());
        };
        Ok(Presented { live, hash: sha256(token) })
    }
}

async fn authenticate(state: &AppState, tenant: Tenant, presented: Presented) -> ApiResult<SecretKey> {
    if presented.live != tenant.environment.is_live() {
        return Err(ApiError::unauthenticated());
    }
    // Public until the key is proven; then acting as the key.
    let scope = super::public_scope(state, tenant).ok_or_else(ApiError::unauthenticated)?;
    let Some(key) = state.keys.authenticate(scope, presented.hash).await? else {
        return Err(ApiError::unauthenticated());
    };
    Ok(SecretKey { id: key.id, scopes: key.scopes, scope: key.scope, keys: state.keys.clone() })
}
