//! Sign-in through an organization's SSO connection: home realm discovery
//! (`POST /v1/auth/sso/start` with the user's address answers where to
//! send the browser) and the identity provider's callback. The rest is
//! provider sign-in's: the one-time code is exchanged at
//! `POST /v1/auth/oauth/exchange`.
use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::{
        provider_sign_in::{self, callback::CallbackParams, start::StartRequest, ProviderSignInError},
        sso_connections::{self, provider_name},
        users,
    },
    auth::public::{client_ip, limit, public_caller},
    error::{ApiError, ApiResult, Code},
    http::{body::Body, envelope, path_id, query::Query, redirect},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(start_sso, sso_callback))]
struct Operations;

const CALLBACK_ROUTE: &str = "/v1/auth/sso/{connection_id}/callback";

/// The provider's callback carries no header: its `state` names the application.
pub const APPLICATION_IN: &[ApplicationIn] = &[ApplicationIn {
    route: CALLBACK_ROUTE,
    from: ApplicationFrom::QueryRead("state", provider_sign_in::application_of_state),
}];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/sso/start").route(web::post().to(start_sso)))
        .service(web::resource(&CALLBACK_ROUTE["/v1".len()..]).route(web::get().to(sso_callback)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSsoRequest {
    /// The address the user typed: its domain finds the organization (one
    /// that verified it) and that organization's enabled connection.
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    /// Where the browser is sent back with `code` (or `error`): an absolute
    /// http(s) URL on one of the application's `allowed_origins`.
    #[schema(schema_with = crate::openapi::fields::redirect_uri)]
    pub redirect_uri: String,
    /// The application's own value, given back with the redirect.
    #[schema(max_length = 512)]
    pub state: Option<String>,
    /// The application's PKCE challenge (RFC 7636, S256) for the exchange.
    #[schema(min_length = 43, max_length = 128)]
    pub code_challenge: Option<String>,
    /// `S256` (the only method accepted).
    pub code_challenge_method: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SsoStartView {
    /// Send the browser here: the organization's identity provider.
    pub authorization_url: String,
    pub connection_id: Uuid,
    pub organization_id: Uuid,
}

/// Home realm discovery: when the address is at a domain an organization
/// verified and that organization has an enabled SSO connection, answers
/// the URL of its identity provider (with a single-use `state`, 10
/// minutes, a PKCE challenge and a nonce). The callback sends the browser
/// to `redirect_uri` with a one-time `code` for
/// `POST /v1/auth/oauth/exchange`. Otherwise 404: sign in another way.
#[utoipa::path(post, path = "/v1/auth/sso/start", tag = "auth", request_body = StartSsoRequest,
    responses((status = 200, body = SsoStartView),
        (status = 401, description = "No such application"),
        (status = 404, description = "No enabled SSO connection for the address's domain"),
        (status = 422, description = "`invalid_url`: `redirect_uri` is not on the application's allowed origins; `validation_failed`"),
        (status = 429)))]
pub async fn start_sso(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(&state, &req, format!("sso_start:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let request: StartSsoRequest = body.json().await?;
    let email = users::normalize_email(&request.email)
        .filter(|e| e.chars().count() <= 254)
        .ok_or_else(|| ApiError::invalid("email", "must be an email address"))?;
    let connection = sso_connections::for_email(&scope, &email).await?.ok_or_else(|| {
        ApiError::new(Code::NotFound, "No organization signs in this address through SSO: sign in another way.")
    })?;
    let start = StartRequest {
        provider: provider_name(connection.id),
        redirect_uri: request.redirect_uri,
        state: request.state,
        code_challenge: request.code_challenge,
        code_challenge_method: request.code_challenge_method,
        login_hint: Some(email),
    };
    let authorization_url = provider_sign_in::start::start(&scope, &state.provider_sign_in(), start).await?;
    Ok(envelope::ok(SsoStartView {
        authorization_url,
        connection_id: connection.id,
        organization_id: connection.organization_id,
    }))
}

/// The identity provider's callback, as at a provider sign-in: takes the
/// `state` once, exchanges the code, checks the address is at a domain
/// the organization verified, links or creates the user, makes them a
/// member (the connection's `default_role`), and answers 303 to the
/// application's `redirect_uri` with a one-time `code` or an `error`
/// (those of the provider callback, and `email_domain_not_verified`,
/// `membership_refused`).
#[utoipa::path(get, path = "/v1/auth/sso/{connection_id}/callback", tag = "auth",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("connection_id" = Uuid, Path), CallbackParams),
    responses((status = 303, description = "To the application's `redirect_uri`",
            headers(("Location" = String, description = "`redirect_uri` with `code` or `error`, and `state`"))),
        (status = 400, description = "`invalid_state`: unknown, expired, already used, or naming no application")))]
pub async fn sso_callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    connection_id: web::Path<String>,
    query: Query<CallbackParams>,
) -> ApiResult<HttpResponse> {
    let invalid = || ApiError::from(ProviderSignInError::InvalidState);
    let connection_id = path_id("SSO connection", &connection_id).map_err(|_| invalid())?;
    let scope = public_caller(&req, &state).map_err(|_| invalid())?;
    let params = query.parsed().map_err(|_| invalid())?;
    let hook_caller = state.hook_caller();
    let provider = provider_name(connection_id);
    let deps = state.provider_sign_in();
    let location = provider_sign_in::callback::callback(&scope, &deps, &hook_caller, &provider, params).await?;
    Ok(redirect(StatusCode::SEE_OTHER, &location))
}
