//! The token endpoint of an application's issuer (RFC 6749), in its
//! standard's format, not the envelope: a form in, `{access_token, …}` or
//! `{error, error_description}` out. Its grants:
//! - `client_credentials`: machine tokens for service accounts;
//! - `authorization_code`: an OAuth client exchanges a code from the
//!   authorization endpoint (with its PKCE verifier) for a session's
//!   tokens, and an ID token when `openid` was granted;
//! - `refresh_token`: an OAuth client refreshes a session issued to it.
use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::{presented, scope_in_path};
use crate::{
    areas::{
        auth::{self, AuthError},
        machine_tokens::{self, TokenRefused, TokenRequest},
        openid_provider::{
            self,
            exchange::{self, GrantRefused},
        },
        service_accounts::{self, KeyRefusal},
    },
    auth::public::session_ttl,
    error::{ApiError, ApiResult},
    http::{
        body::Body,
        oauth_form::{self as form, Credentials, OAuthErrorView},
    },
    state::AppState,
    storage::TenantScope,
    tokens::{algorithms::Algorithm, jwt::IdTokenClaims},
};

/// The form of a token request (`application/x-www-form-urlencoded`).
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description of the form, read by hand below
pub struct TokenForm {
    #[schema(schema_with = crate::openapi::fields::grant_type)]
    grant_type: String,
    /// `client_credentials`: space-separated scopes, each one of the service
    /// account's; absent: all of them.
    scope: Option<String>,
    /// `authorization_code`: the code the authorization endpoint gave.
    code: Option<String>,
    /// `authorization_code`: the redirect URI the code was issued for.
    redirect_uri: Option<String>,
    /// `authorization_code`: the PKCE verifier of the code's challenge.
    code_verifier: Option<String>,
    /// `refresh_token`: the session's current refresh token.
    refresh_token: Option<String>,
    /// A service account's id or an OAuth client's (`client_secret_post`,
    /// or a public client's `none`; or HTTP Basic).
    client_id: Option<String>,
    /// A service account's `sak_` key or a confidential OAuth client's
    /// `ocs_` secret (`client_secret_post`; or HTTP Basic).
    client_secret: Option<String>,
}

/// RFC 6749 section 5.1, with OIDC Core's `id_token`.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    /// EdDSA JWT; verify against the JWKS. A service account's has `typ:
    /// at+jwt` (RFC 9068); an end user's (for an OAuth client) is the
    /// API's own access token.
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    /// The scopes granted, space-separated.
    pub scope: String,
    /// When `openid` was granted (`authorization_code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// When `offline_access` was granted and the client may refresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

/// Tokens (RFC 6749). `client_credentials`: a machine token for a service
/// account, its id as `client_id` and one of its keys as `client_secret`
/// (HTTP Basic or the form), carrying the account's scopes or the requested
/// subset. `authorization_code`: an OAuth client's code, used once, within
/// 60 s, with its redirect URI and PKCE verifier, for an access token, an
/// ID token (`openid`) and a refresh token (`offline_access`); a code used
/// twice revokes what it issued. `refresh_token`: a session issued to the
/// client, rotated with reuse detection.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/token", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, body = TokenView),
        (status = 400, body = OAuthErrorView, description = "`invalid_request`, `invalid_grant`, `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`"),
        (status = 401, body = OAuthErrorView, description = "`invalid_client`"),
        (status = 404, description = "No such application"),
        (status = 413), (status = 503)),
    security((), ("client_basic" = [])))]
pub async fn token(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let bytes = body.raw().await?;
    let mut form = match form::read(&req, &bytes) {
        Ok(form) => form,
        Err(why) => return Ok(refusal(TokenRefused::InvalidRequest(why))),
    };
    let credentials = match form::credentials(&req, &mut form) {
        Ok(credentials) => credentials,
        Err(why) => return Ok(refusal(TokenRefused::InvalidRequest(why))),
    };
    if let Some(grant @ ("authorization_code" | "refresh_token")) = form.get("grant_type").map(String::as_str) {
        let grant = grant.to_string();
        return client_grant(&state, &scope, &grant, &credentials, form).await;
    }
    let Credentials::Secret { client_id, secret: client_secret } = credentials else {
        return Ok(refusal(TokenRefused::InvalidClient(KeyRefusal::Unknown)));
    };
    let request =
        TokenRequest { grant_type: form.remove("grant_type"), scope: form.remove("scope"), client_id, client_secret };
    let outcome = machine_tokens::issue(&scope, &state.issuer(), request).await.map_err(ApiError::from)?;
    let token = match outcome {
        Ok(token) => token,
        Err(refused) => {
            if let TokenRefused::InvalidClient(key) = &refused {
                if let Some((key_id, reason)) = key.known_key() {
                    state.keys.record_refusal(&scope, key_id, reason).await;
                }
            }
            return Ok(refusal(refused));
        }
    };
    metrics::counter!("gatehouse_machine_tokens_total", "outcome" => "issued").increment(1);
    // Off the request path, and only when due (most tokens skip it).
    if service_accounts::touch_is_due(&token.verified.key) {
        let touched = token.verified.key.clone();
        actix_web::rt::spawn(async move {
            if let Err(err) = service_accounts::touch_if_due(&scope, &touched).await {
                tracing::warn!(error = %err, "could not record a service-account key's last use");
            }
        });
    }
    Ok(form::no_store(StatusCode::OK).json(TokenView {
        access_token: token.issued.token,
        token_type: "Bearer",
        expires_in: token.issued.expires_in,
        scope: token.scopes.join(" "),
        id_token: None,
        refresh_token: None,
    }))
}

/// An OAuth client's grant: `authorization_code` or `refresh_token`.
async fn client_grant(
    state: &AppState,
    scope: &TenantScope,
    grant: &str,
    credentials: &Credentials,
    mut form: std::collections::BTreeMap<String, String>,
) -> ApiResult<HttpResponse> {
    let client = match openid_provider::authenticate(scope, presented(credentials)).await? {
        Ok(client) => client,
        Err(_) => return Ok(grant_refusal("invalid_client", "the client could not be authenticated")),
    };
    let issuer = state.issuer();
    // Taken before anything commits: nothing that can fail is left for after.
    let signer = issuer.signer(scope).await.map_err(ApiError::from)?;
    if grant == "refresh_token" {
        if !exchange::allows(&client, "refresh_token") {
            return Ok(grant_refusal("unauthorized_client", "the client may not use the refresh token grant"));
        }
        let Some(presented) = form.remove("refresh_token") else {
            return Ok(grant_refusal("invalid_request", "`refresh_token` is required"));
        };
        let (opened, access) = match auth::refresh(scope, &issuer, &state.rotations, &presented, Some(client.id)).await
        {
            Ok(refreshed) => refreshed,
            Err(AuthError::RefreshRefused(_)) => {
                return Ok(grant_refusal("invalid_grant", "the refresh token is invalid, used or of another client"))
            }
            Err(err) => return Err(err.into()),
        };
        metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "token", "outcome" => "refreshed")
            .increment(1);
        return Ok(form::no_store(StatusCode::OK).json(TokenView {
            access_token: access.token,
            token_type: "Bearer",
            expires_in: access.expires_in,
            scope: opened.session.oauth_scope.clone().unwrap_or_default(),
            id_token: None,
            refresh_token: Some(opened.refresh_token),
        }));
    }
    let Some(code) = form.remove("code") else {
        return Ok(grant_refusal("invalid_request", "`code` is required"));
    };
    let algorithm = Algorithm::parse(&client.id_token_signed_response_alg).unwrap_or(Algorithm::EdDSA);
    let id_token_signer = issuer.id_token_signer(scope, algorithm).await.map_err(ApiError::from)?;
    let outcome = exchange::exchange_code(
        scope,
        &client,
        &code,
        form.get("redirect_uri").map(String::as_str),
        form.get("code_verifier").map(String::as_str),
        session_ttl(state),
    )
    .await?;
    let exchanged = match outcome {
        Ok(exchanged) => exchanged,
        Err(GrantRefused::InvalidGrant(why)) => return Ok(grant_refusal("invalid_grant", why)),
        Err(GrantRefused::UnauthorizedClient(why)) => return Ok(grant_refusal("unauthorized_client", why)),
    };
    let session = &exchanged.opened.session;
    let access = issuer.access_token(&signer, scope, session).await.map_err(ApiError::from)?;
    let id_token = if exchanged.granted("openid") {
        let user = exchanged.granted("email").then_some(&exchanged.user);
        let now = crate::clock::now().timestamp();
        let claims = IdTokenClaims {
            iss: signer.issuer().to_string(),
            sub: session.user_id,
            aud: client.id,
            azp: client.id,
            exp: now + signer.ttl_seconds(),
            iat: now,
            auth_time: exchanged.auth_time,
            nonce: exchanged.nonce.clone(),
            acr: session.aal.clone(),
            amr: exchanged.amr.clone(),
            at_hash: id_token_signer.at_hash(&access.token),
            sid: session.id,
            email: user.map(|u| u.email.clone()),
            email_verified: user.map(|u| u.email_verified_at.is_some()),
            org: session.active_organization_id.filter(|_| exchanged.granted("organization")),
        };
        Some(id_token_signer.sign(&claims))
    } else {
        None
    };
    let refresh_token = (exchanged.granted("offline_access") && exchange::allows(&client, "refresh_token"))
        .then(|| exchanged.opened.refresh_token.clone());
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "token", "outcome" => "code_exchanged")
        .increment(1);
    Ok(form::no_store(StatusCode::OK).json(TokenView {
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        scope: exchanged.scopes.join(" "),
        id_token,
        refresh_token,
    }))
}

fn grant_refusal(error: &'static str, description: &str) -> HttpResponse {
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "token", "outcome" => error).increment(1);
    form::refusal(error, description.to_string())
}

fn refusal(refused: TokenRefused) -> HttpResponse {
    metrics::counter!("gatehouse_machine_tokens_total", "outcome" => refused.code()).increment(1);
    form::refusal(refused.code(), refused.to_string())
}
