//! Userinfo (OIDC Core section 5.3), introspection (RFC 7662) and
//! revocation (RFC 7009).
use actix_web::{
    http::{header, StatusCode},
    web, HttpRequest, HttpResponse,
};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{presented, scope_in_path};
use crate::{
    areas::{
        openid_provider::{self, Active, ClientRefused},
        sessions,
    },
    auth::{end_user, secret_key::bearer_token},
    error::ApiResult,
    http::{
        body::Body,
        oauth_form::{self as form, OAuthErrorView},
    },
    state::AppState,
    storage::TenantScope,
    tokens::jwt::{Accepts, Claims},
};

/// OIDC Core section 5.3.2: `sub` and the claims of the granted scopes.
#[derive(Serialize, ToSchema)]
pub struct UserinfoView {
    /// The user's id.
    pub sub: uuid::Uuid,
    /// `email` scope.
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// `profile` scope: each of OIDC's standard profile claims (`name`,
    /// `given_name`, `picture`, …) the user's profile holds under that key,
    /// and `updated_at` (seconds).
    pub updated_at: Option<i64>,
    /// `organization` scope: the session's active organization and the
    /// user's role there.
    pub org: Option<uuid::Uuid>,
    pub org_role: Option<String>,
}

/// The signed-in user's claims, for the Bearer access token (OpenID
/// Connect's userinfo). Plain JSON, not the envelope. A missing, invalid or
/// expired token, or one whose session ended, is 401 with
/// `WWW-Authenticate: Bearer error="invalid_token"`.
#[utoipa::path(get, path = "/v1/applications/{application_id}/oauth/userinfo", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    responses((status = 200, body = UserinfoView),
        (status = 401, body = OAuthErrorView, description = "`invalid_token`, with `WWW-Authenticate: Bearer`"),
        (status = 404, description = "No such application")),
    security(("access_token" = [])))]
pub async fn userinfo(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    answer_userinfo(&state, &req, &path, bearer_token(&req)).await
}

/// The same as `GET`, for clients that send the token by `POST`: in the
/// `Authorization` header, or as `access_token` in a form body (RFC 6750
/// section 2.2), not both.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/userinfo", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    responses((status = 200, body = UserinfoView),
        (status = 401, body = OAuthErrorView, description = "`invalid_token`, with `WWW-Authenticate: Bearer`"),
        (status = 404, description = "No such application")),
    security(("access_token" = [])))]
pub async fn userinfo_by_post(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    // The token in the header (RFC 6750 section 2.1) or in a form body
    // (section 2.2), one way only.
    let bytes = body.raw().await?;
    let in_body = form::read(&req, &bytes).ok().and_then(|mut f| f.remove("access_token"));
    let token = match (bearer_token(&req), in_body) {
        (Some(_), Some(_)) => {
            return Ok(form::no_store(StatusCode::BAD_REQUEST).json(OAuthErrorView {
                error: "invalid_request",
                error_description: "the access token is sent one way only".into(),
            }))
        }
        (Some(header), None) => Some(header.to_string()),
        (None, body) => body,
    };
    answer_userinfo(&state, &req, &path, token.as_deref()).await
}

async fn answer_userinfo(
    state: &AppState,
    req: &HttpRequest,
    path: &str,
    token: Option<&str>,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(state, req, path).await?;
    let Some(token) = token else {
        // RFC 6750 section 3.1: a request without a token gets no error code.
        return Ok(form::no_store(StatusCode::UNAUTHORIZED)
            .insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"gatehouse\""))
            .json(OAuthErrorView { error: "invalid_token", error_description: "an access token is required".into() }));
    };
    let Some((claims, user)) = user_of(state, &scope, token).await? else {
        metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "userinfo", "outcome" => "invalid_token")
            .increment(1);
        return Ok(form::no_store(StatusCode::UNAUTHORIZED)
            .insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"gatehouse\", error=\"invalid_token\""))
            .json(OAuthErrorView {
                error: "invalid_token",
                error_description: "the access token is invalid, expired or its session ended".into(),
            }));
    };
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "userinfo", "outcome" => "ok").increment(1);
    Ok(form::no_store(StatusCode::OK).json(openid_provider::userinfo(&claims, &user)))
}

/// The user an access token names, while its session is active.
async fn user_of(
    state: &AppState,
    scope: &TenantScope,
    token: &str,
) -> ApiResult<Option<(Claims, entity::user::Model)>> {
    let verified = end_user::verify_with_user(state, scope, token, Accepts::ClientTokensToo).await?;
    Ok(verified.map(|(claims, _, user)| (claims, user)))
}

/// The active token `token` is. Each kind has its own shape (`rt_…` or a
/// JWS), so a `token_type_hint` is never needed (RFC 7009 and RFC 7662 let
/// the server ignore it).
async fn find_active(state: &AppState, scope: &TenantScope, token: &str) -> ApiResult<Option<Active>> {
    if sessions::is_refresh_token_shape(token) {
        let found = sessions::of_current_refresh_token(scope, token).await?;
        return Ok(found.map(|(row, session)| Active::Refresh { issued_at: row.created_at, session }));
    }
    Ok(end_user::verify(state, scope, token, Accepts::ClientTokensToo)
        .await?
        .map(|(claims, session)| Active::Access(Box::new(claims), session)))
}

/// The form of an introspection or revocation request.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description of the form, read by hand
pub struct PresentedTokenForm {
    /// The access token or refresh token.
    token: String,
    /// `access_token` or `refresh_token`; optional, as each kind has its own shape.
    token_type_hint: Option<String>,
    /// The OAuth client's id (`client_secret_post`, or `none` for a public
    /// client's revocation; or HTTP Basic).
    client_id: Option<String>,
    /// The confidential client's secret (`client_secret_post`; or HTTP Basic).
    client_secret: Option<String>,
}

/// RFC 7662 section 2.2.
#[derive(Serialize, ToSchema)]
pub struct IntrospectionView {
    /// False for a token that is unknown, invalid, expired, revoked, or of
    /// an ended session; nothing else is said of it then.
    pub active: bool,
    /// `Bearer` (an access token) or `refresh_token`.
    pub token_type: Option<String>,
    pub iss: Option<String>,
    pub aud: Option<String>,
    /// The user.
    pub sub: Option<uuid::Uuid>,
    /// The session.
    pub sid: Option<uuid::Uuid>,
    /// An access token's assurance level.
    pub aal: Option<String>,
    pub iat: Option<i64>,
    pub nbf: Option<i64>,
    pub exp: Option<i64>,
    pub jti: Option<uuid::Uuid>,
    pub org: Option<uuid::Uuid>,
    pub org_role: Option<String>,
    /// The OAuth client the token was issued to.
    pub client_id: Option<uuid::Uuid>,
    /// The scopes granted, space-separated.
    pub scope: Option<String>,
}

/// Whether a token of the application is active, and what it says (RFC
/// 7662). For the application's confidential OAuth clients (its resource
/// servers), by HTTP Basic or `client_secret_post`. An access token is
/// active while it verifies and its session is; a refresh token while it is
/// its session's current one.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/introspect", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = PresentedTokenForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, body = IntrospectionView),
        (status = 400, body = OAuthErrorView, description = "`invalid_request`; `unauthorized_client` for a public client"),
        (status = 401, body = OAuthErrorView, description = "`invalid_client`"),
        (status = 404, description = "No such application"),
        (status = 413)),
    security(("client_basic" = [])))]
pub async fn introspect(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let bytes = body.raw().await?;
    let (client, token) = match client_and_token("introspect", &req, &scope, &bytes).await? {
        Ok(found) => found,
        Err(refused) => return Ok(refused),
    };
    if let Err(refused) = openid_provider::may_introspect(&client) {
        return Ok(client_refusal("introspect", refused));
    }
    let answer = match find_active(&state, &scope, &token).await? {
        Some(active) => openid_provider::introspection(&active, &state.tokens.issuer(scope.tenant().id)),
        None => json!({"active": false}),
    };
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "introspect", "outcome" => "ok").increment(1);
    Ok(form::no_store(StatusCode::OK).json(answer))
}

/// Revoke a token (RFC 7009): its session ends, and with it every token
/// the session issued. By the client it was issued to; the tokens of the
/// API's own sign-in may be revoked by the application's first-party
/// clients. A public client sends only its `client_id`. An unknown or
/// inactive token is 200 too: there is nothing left to revoke.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/revoke", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = PresentedTokenForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Revoked, or nothing to revoke"),
        (status = 400, body = OAuthErrorView, description = "`invalid_request`; `unauthorized_client` for a token not issued to the client"),
        (status = 401, body = OAuthErrorView, description = "`invalid_client`"),
        (status = 404, description = "No such application"),
        (status = 413)),
    security(("client_basic" = [])))]
pub async fn revoke(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let bytes = body.raw().await?;
    let (client, token) = match client_and_token("revoke", &req, &scope, &bytes).await? {
        Ok(found) => found,
        Err(refused) => return Ok(refused),
    };
    let outcome = match find_active(&state, &scope, &token).await? {
        None => "inactive",
        Some(active) => match openid_provider::revoke(&scope, &client, &active).await? {
            Ok(_) => "revoked",
            Err(refused) => return Ok(client_refusal("revoke", refused)),
        },
    };
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "revoke", "outcome" => outcome).increment(1);
    Ok(form::no_store(StatusCode::OK).finish())
}

/// The authenticated client and the `token` parameter, or the refusal.
async fn client_and_token(
    endpoint: &'static str,
    req: &HttpRequest,
    scope: &TenantScope,
    bytes: &[u8],
) -> ApiResult<Result<(entity::oauth_client::Model, String), HttpResponse>> {
    let mut form = match form::read(req, bytes) {
        Ok(form) => form,
        Err(why) => return Ok(Err(form::refusal("invalid_request", why))),
    };
    let credentials = match form::credentials(req, &mut form) {
        Ok(credentials) => credentials,
        Err(why) => return Ok(Err(form::refusal("invalid_request", why))),
    };
    let client = match openid_provider::authenticate(scope, presented(&credentials)).await? {
        Ok(client) => client,
        Err(refused) => return Ok(Err(client_refusal(endpoint, refused))),
    };
    match form.remove("token") {
        Some(token) => Ok(Ok((client, token))),
        None => Ok(Err(form::refusal("invalid_request", "`token` is required"))),
    }
}

fn client_refusal(endpoint: &'static str, refused: ClientRefused) -> HttpResponse {
    let (error, description) = match refused {
        ClientRefused::InvalidClient => ("invalid_client", "the client could not be authenticated"),
        ClientRefused::Unauthorized(why) => ("unauthorized_client", why),
    };
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => endpoint, "outcome" => error).increment(1);
    form::refusal(error, description)
}
