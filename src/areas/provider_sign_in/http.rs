//! Sign-in with an identity provider: the browser's start and the
//! provider's callback (redirects, no `x-application-id`: the start names
//! the application in its query, the callback in its `state`), and the
//! exchange of the one-time code for our tokens.
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::{
        auth::view::{self, SignInAnswer},
        provider_sign_in::{self, callback::CallbackParams, exchange, start::StartRequest},
    },
    auth::public::{client_ip, limit, public_caller, session_ttl},
    error::{ApiError, ApiResult},
    http::{body::Body, envelope, query::Query, redirect},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(start, callback, callback_form, exchange_code))]
struct Operations;

const START_ROUTE: &str = "/v1/auth/oauth/{provider}/start";
const CALLBACK_ROUTE: &str = "/v1/auth/oauth/{provider}/callback";

/// A browser's sign-in carries no header: its start names the application
/// in the query, its callback in the `state` the start made.
pub const APPLICATION_IN: &[ApplicationIn] = &[
    ApplicationIn { route: START_ROUTE, from: ApplicationFrom::Query("application_id") },
    ApplicationIn {
        route: CALLBACK_ROUTE,
        from: ApplicationFrom::QueryRead("state", crate::areas::provider_sign_in::application_of_state),
    },
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/oauth/exchange").route(web::post().to(exchange_code)))
        .service(web::resource(&START_ROUTE["/v1".len()..]).route(web::get().to(start)))
        .service(
            web::resource(&CALLBACK_ROUTE["/v1".len()..])
                .route(web::get().to(callback))
                .route(web::post().to(callback_form)),
        );
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StartQuery {
    /// The application (a browser navigation carries no `x-application-id`).
    pub application_id: Option<uuid::Uuid>,
    /// Where the browser is sent back with `code` (or `error`): an absolute
    /// http(s) URL on one of the application's `allowed_origins`.
    #[param(schema_with = crate::openapi::fields::redirect_uri)]
    pub redirect_uri: String,
    /// The application's own value, given back with the redirect.
    #[param(max_length = 512)]
    pub state: Option<String>,
    /// The application's PKCE challenge (RFC 7636, S256); when sent, the
    /// exchange must present its verifier.
    #[param(min_length = 43, max_length = 128)]
    pub code_challenge: Option<String>,
    /// `S256` (the only method accepted).
    pub code_challenge_method: Option<String>,
}

/// Start a sign-in with a provider: answers 302 to the provider's
/// authorization endpoint with a single-use `state` (10 minutes), a PKCE
/// challenge and, for OpenID providers, a nonce.
#[utoipa::path(get, path = "/v1/auth/oauth/{provider}/start", tag = "auth",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("provider" = String, Path, description = "`google`, `github`, `microsoft`, `apple`, `gitlab`, `discord`, `linkedin` or `slack`"),
        StartQuery),
    responses((status = 302, description = "To the provider's authorization endpoint",
            headers(("Location" = String, description = "The provider's authorization URL"))),
        (status = 401, description = "No such application"),
        (status = 404, description = "The provider is not enabled (or has no credentials to use) for this application"),
        (status = 422, description = "`invalid_url`: `redirect_uri` is not on the application's allowed origins; `validation_failed`"),
        (status = 429)))]
pub async fn start(
    state: web::Data<AppState>,
    req: HttpRequest,
    provider: web::Path<String>,
    query: Query<StartQuery>,
) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(&state, &req, format!("oauth_start:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let query = query.parsed()?;
    let provider = provider.into_inner();
    // An SSO connection starts at `POST /v1/auth/sso/start`, from the address.
    if crate::areas::sso_connections::connection_of_provider(&provider).is_some() {
        return Err(provider_sign_in::ProviderSignInError::NotEnabled(provider).into());
    }
    let request = StartRequest {
        provider,
        redirect_uri: query.redirect_uri,
        state: query.state,
        code_challenge: query.code_challenge,
        code_challenge_method: query.code_challenge_method,
        login_hint: None,
    };
    let location = provider_sign_in::start::start(&scope, &state.provider_sign_in(), request).await?;
    Ok(redirect(actix_web::http::StatusCode::FOUND, &location))
}

/// The provider's callback: takes the `state` once, exchanges the code,
/// links the account to a user (creating one as at sign-up) and answers
/// 303 to the application's `redirect_uri` with a one-time `code` (60 s,
/// for `POST /v1/auth/oauth/exchange`) or an `error` (`access_denied`,
/// `provider_error`, `invalid_id_token`, `email_required`,
/// `email_not_verified`, `profile_incomplete`, `sign_up_denied`,
/// `hook_unavailable`, `temporarily_unavailable`; a hook's refusal message
/// in `error_description`), and its own `state`.
#[utoipa::path(get, path = "/v1/auth/oauth/{provider}/callback", tag = "auth",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("provider" = String, Path), CallbackParams),
    responses((status = 303, description = "To the application's `redirect_uri`",
            headers(("Location" = String, description = "`redirect_uri` with `code` or `error`, and `state`"))),
        (status = 400, description = "`invalid_state`: unknown, expired, already used, or naming no application")))]
pub async fn callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    provider: web::Path<String>,
    query: Query<CallbackParams>,
) -> ApiResult<HttpResponse> {
    let Some(scope) = public_caller(&req, &state).ok() else {
        return Err(provider_sign_in::ProviderSignInError::InvalidState.into());
    };
    let params = query.parsed().map_err(|_| ApiError::from(provider_sign_in::ProviderSignInError::InvalidState))?;
    let hook_caller = state.hook_caller();
    let location =
        provider_sign_in::callback::callback(&scope, &state.provider_sign_in(), &hook_caller, &provider, params)
            .await?;
    Ok(redirect(actix_web::http::StatusCode::SEE_OTHER, &location))
}

/// A provider's answer by `form_post` (OAuth 2.0 Form Post Response Mode).
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description; read by hand below
pub struct CallbackForm {
    /// The sign-in's state, given back unchanged.
    state: String,
    /// The provider's authorization code.
    code: Option<String>,
    /// The provider's error, in place of a code.
    error: Option<String>,
    /// The provider's issuer (RFC 9207).
    iss: Option<String>,
    /// Apple's `user` (the name, on a first sign-in): ignored.
    user: Option<String>,
    /// Apple's `id_token`: ignored (the code is exchanged for one).
    id_token: Option<String>,
}

/// The callback of providers that POST their answer as a form (Apple's
/// `form_post`): 303 to the same callback with the answer in the query,
/// where the `state` finds the application and its region.
#[utoipa::path(post, path = "/v1/auth/oauth/{provider}/callback", tag = "auth",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("provider" = String, Path)),
    request_body(content = CallbackForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "To `GET` of the same callback",
            headers(("Location" = String, description = "The callback with the answer in its query"))),
        (status = 400, description = "`invalid_state`: the form is not one, or carries no `state`")))]
pub async fn callback_form(req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let bytes = body.raw().await?;
    let invalid = || ApiError::from(provider_sign_in::ProviderSignInError::InvalidState);
    let answer: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes).map_err(|_| invalid())?;
    let wanted = ["state", "code", "error", "iss"];
    let kept: Vec<&(String, String)> = answer.iter().filter(|(name, _)| wanted.contains(&name.as_str())).collect();
    if !kept.iter().any(|(name, value)| name == "state" && !value.is_empty()) {
        return Err(invalid());
    }
    let query = serde_urlencoded::to_string(kept).map_err(|_| invalid())?;
    Ok(redirect(actix_web::http::StatusCode::SEE_OTHER, &format!("{}?{query}", req.path())))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRequest {
    /// The one-time code from the redirect.
    #[schema(max_length = 256)]
    pub code: String,
    /// The verifier of the `code_challenge` sent at the start, if one was.
    #[schema(min_length = 43, max_length = 128)]
    pub code_verifier: Option<String>,
}

/// Exchange the one-time code of a provider sign-in for a session and
/// tokens, exactly as `POST /v1/auth/sign-in` answers them.
#[utoipa::path(post, path = "/v1/auth/oauth/exchange", tag = "auth", request_body = ExchangeRequest,
    responses((status = 200, body = SignInAnswer),
        (status = 400, description = "`invalid_grant`: unknown, expired (60 s), already used, or the verifier does not match"),
        (status = 401), (status = 429)))]
pub async fn exchange_code(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(&state, &req, format!("oauth_exchange:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let request: ExchangeRequest = body.json().await?;
    let issuer = state.issuer();
    let outcome =
        exchange::exchange(&scope, &issuer, &request.code, request.code_verifier.as_deref(), session_ttl(&state))
            .await?;
    // An SSO sign-in's session opened in its organization.
    Ok(envelope::ok(view::answer_in_organization(&issuer, &scope, outcome).await?))
}
