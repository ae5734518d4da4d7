//! End users on their own routes: `Authorization: Bearer <access token>`
//! with `x-application-id`. The token must verify against the application's
//! own keys (see [`crate::tokens::jwt`]) and its session must still be
//! active, so a sign-out or a revocation ends access at once, not at `exp`.
use std::{future::Future, pin::Pin};

use actix_web::{dev::Payload, web, FromRequest, HttpMessage, HttpRequest};
use entity::{session, user};

use super::secret_key::bearer_token;
use crate::{
    areas::sessions,
    audit::Actor,
    error::{ApiError, ApiResult},
    openapi::security,
    state::AppState,
    storage::TenantScope,
    tenancy::Tenant,
    tokens::jwt::{self, Accepts, Claims},
};

pub struct EndUser {
    pub claims: Claims,
    pub session: session::Model,
    /// The user's application, acting as the user.
    pub scope: TenantScope,
}

impl EndUser {
    pub fn tenant(&self) -> &Tenant {
        self.scope.tenant()
    }

    /// Refuses (403 `aal2_required`) an action the application's
    /// `require_aal2_for` names unless the token says `aal2` (a sign-in that
    /// proved a second factor, or `POST /v1/auth/mfa/step-up`).
    pub fn require_aal2_for(&self, action: &str) -> ApiResult<()> {
        if self.claims.aal != "aal2" && self.tenant().require_aal2_for.iter().any(|a| a == action) {
            return Err(ApiError::new(
                crate::error::Code::Aal2Required,
                format!("`{action}` needs a session that proved a second factor (POST /v1/auth/mfa/step-up)."),
            ));
        }
        Ok(())
    }
}

impl FromRequest for EndUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = ApiResult<EndUser>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let tenant = req.extensions().get::<Tenant>().cloned();
        // Only on an operation that declares an end user's access token.
        let declared = security::of_request(req).is_some_and(|d| d.accepts(security::ACCESS_TOKEN));
        let token = bearer_token(req).filter(|_| declared).map(str::to_owned);
        Box::pin(async move {
            let (Some(state), Some(tenant), Some(token)) = (state, tenant, token) else {
                return Err(ApiError::unauthenticated());
            };
            let scope = super::public_scope(&state, tenant).ok_or_else(ApiError::unauthenticated)?;
            let (claims, session) =
                verify(&state, &scope, &token, Accepts::OwnTokens).await?.ok_or_else(ApiError::unauthenticated)?;
            let scope = scope.acting_as(Actor::user(claims.sub));
            Ok(EndUser { claims, session, scope })
        })
    }
}

/// The claims and the active session of an end user's access token of the
/// application (of a kind the route `accepts`), or `None`: a token that
/// does not verify against the application's own keys, or whose session
/// was signed out, revoked or has expired. Each refusal is counted by
/// reason, never told.
pub async fn verify(
    state: &AppState,
    scope: &TenantScope,
    token: &str,
    accepts: Accepts,
) -> ApiResult<Option<(Claims, session::Model)>> {
    let Some(claims) = verified_claims(state, scope, token, accepts).await? else { return Ok(None) };
    let session = sessions::find_active(scope, claims.sid).await?.filter(|s| s.user_id == claims.sub);
    let Some(session) = session else {
        session_ended();
        return Ok(None);
    };
    Ok(Some((claims, session)))
}

/// [`verify`], with the session's user read in the same query (userinfo).
pub async fn verify_with_user(
    state: &AppState,
    scope: &TenantScope,
    token: &str,
    accepts: Accepts,
) -> ApiResult<Option<(Claims, session::Model, user::Model)>> {
    let Some(claims) = verified_claims(state, scope, token, accepts).await? else { return Ok(None) };
    let found = sessions::find_active_with_user(scope, claims.sid).await?.filter(|(s, _)| s.user_id == claims.sub);
    let Some((session, user)) = found else {
        session_ended();
        return Ok(None);
    };
    Ok(Some((claims, session, user)))
}

fn session_ended() {
    metrics::counter!("gatehouse_access_token_rejected_total", "reason" => "session_ended").increment(1);
}

/// The claims of a token that verifies against the application's own keys
/// (its session not yet looked at).
async fn verified_claims(
    state: &AppState,
    scope: &TenantScope,
    token: &str,
    accepts: Accepts,
) -> ApiResult<Option<Claims>> {
    let checked = match jwt::parse(token, accepts) {
        Ok(parsed) => match state.tenants.public_key(scope, parsed.kid).await? {
            Some(key) => state.tokens.check(scope.tenant().id, parsed, &key),
            None => Err(jwt::Rejection::UnknownKey),
        },
        Err(rejection) => Err(rejection),
    };
    match checked {
        Ok(claims) => Ok(Some(claims)),
        Err(rejection) => {
            metrics::counter!("gatehouse_access_token_rejected_total", "reason" => rejection.as_str()).increment(1);
            Ok(None)
        }
    }
}
