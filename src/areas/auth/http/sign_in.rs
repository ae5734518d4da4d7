//! Sign-up, sign-in, refresh and sign-out.
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    areas::{
        auth::{
            self,
            view::{signed_in, SignInAnswer, SignedInView},
            NewSignUp,
        },
        sessions,
        users::{self, view::SessionView},
        validate::Issues,
    },
    auth::{
        end_user::EndUser,
        public::{client_ip, limit, limit_sign_ins_per_ip, public_caller, session_ttl},
    },
    error::ApiResult,
    http::{body::Body, envelope},
    state::AppState,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignUpRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    #[schema(schema_with = crate::openapi::fields::password)]
    pub password: String,
    /// Values for the application's profile fields.
    #[schema(value_type = Option<Object>)]
    pub profile: Option<serde_json::Value>,
}

/// Sign up: checks the profile against the schema, runs the `pre_sign_up`
/// hooks, creates the user and a session.
#[utoipa::path(post, path = "/v1/auth/sign-up", tag = "auth", request_body = SignUpRequest,
    responses((status = 201, body = SignedInView), (status = 403, description = "`sign_up_denied`: the email's domain is restricted (`/v1/sign-up-restrictions`), or a `pre_sign_up` hook refused; `sso_required`: the address's organization requires its SSO connection; or `origin_not_allowed`"),
        (status = 409, description = "email in use"), (status = 422), (status = 429), (status = 503, description = "hook_unavailable")))]
pub async fn sign_up(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_up_per_ip_per_minute;
    limit(&state, &req, format!("sign_up:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let request: SignUpRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    users::password(&mut issues, &request.password);
    let profile = users::profile(&scope, &mut issues, request.profile).await?;
    issues.finish()?;
    let caller = state.hook_caller();
    let new = NewSignUp { email, password: request.password, profile };
    let (signer, user, opened) = auth::sign_up(
        &scope,
        &state.issuer(),
        &state.passwords,
        &caller,
        state.email_codes(),
        new,
        session_ttl(&state),
    )
    .await?;
    Ok(envelope::created(signed_in(&signer, &user, opened)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInRequest {
    pub email: String,
    pub password: String,
}

/// Sign in with email and password. A wrong password and an unknown email
/// get the same 401 `invalid_credentials`, after the same work. A user with
/// a second factor gets `{mfa_required: true, challenge}` and no tokens.
#[utoipa::path(post, path = "/v1/auth/sign-in", tag = "auth", request_body = SignInRequest,
    responses((status = 200, body = SignInAnswer), (status = 401, description = "invalid_credentials"),
        (status = 403, description = "`sso_required`: the address's organization requires its SSO connection"), (status = 429)))]
pub async fn sign_in(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let application_id = scope.tenant().id;
    let limits = &state.settings.rate_limits;
    limit_sign_ins_per_ip(&state, &req, &scope).await?;
    let request: SignInRequest = body.json().await?;
    let email = users::normalize_email(&request.email).unwrap_or_default();
    if email.is_empty() || email.chars().count() > 254 || request.password.len() > 4 * users::MAX_PASSWORD {
        let shown: String = request.email.trim().chars().filter(|c| !c.is_control()).take(254).collect();
        return Err(auth::failed_sign_in(&scope, &shown, None, "malformed").await.into());
    }
    limit(&state, &req, format!("sign_in:email:{application_id}:{email}"), limits.sign_in_per_email_per_minute).await?;
    let outcome = auth::sign_in(
        &scope,
        &state.issuer(),
        &state.passwords,
        state.email_codes(),
        &email,
        request.password,
        session_ttl(&state),
    )
    .await?;
    Ok(envelope::ok(SignInAnswer::from(outcome)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRequest {
    pub refresh_token: String,
}

#[derive(Serialize, ToSchema)]
pub struct RefreshedView {
    pub session: SessionView,
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
}

/// Exchange a refresh token for a new access token and a new refresh token.
/// A refresh token already exchanged once revokes its whole session.
#[utoipa::path(post, path = "/v1/auth/token", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, body = RefreshedView), (status = 401)))]
pub async fn refresh(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let request: RefreshRequest = body.json().await?;
    let (opened, access) =
        auth::refresh(&scope, &state.issuer(), &state.rotations, &request.refresh_token, None).await?;
    Ok(envelope::ok(RefreshedView {
        session: (&opened.session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        refresh_token: opened.refresh_token,
    }))
}

/// Sign out: ends the session of the access token.
#[utoipa::path(post, path = "/v1/auth/sign-out", tag = "auth",
    responses((status = 200, body = SessionView), (status = 401)), security(("access_token" = [])))]
pub async fn sign_out(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    body.no_fields().await?;
    let session = sessions::revoke(&user.scope, user.session.id, "sign_out").await?;
    Ok(envelope::ok(SessionView::from(&session)))
}
