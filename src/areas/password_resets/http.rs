//! Password reset: ask for a reset email, then set a new password with its
//! token.
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    area::Area,
    areas::{
        applications, password_resets,
        users::{self, view::UserView},
        validate::Issues,
    },
    auth::public::{client_ip, limit, public_caller},
    error::{ApiError, ApiResult},
    http::{body::Body, envelope},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(forgot_password, reset_password))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/password/forgot").route(web::post().to(forgot_password)))
        .service(web::resource("/auth/password/reset").route(web::post().to(reset_password)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgotPasswordRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    /// The application's page that takes the token: the email then carries
    /// a link to it with `token` in its query (an absolute http(s) URL on
    /// the application's `allowed_origins`). Without it the email carries
    /// the token itself, to type in.
    #[schema(schema_with = crate::openapi::fields::optional_redirect_uri)]
    pub redirect_uri: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ForgotPasswordView {
    /// Always true: whether the email is a user's is not said.
    pub accepted: bool,
}

/// Ask for a password reset. Answers 202 the same way, after the same
/// work, whether or not the email is a user's; a user gets an email with a
/// token (30 minutes, single use) through the application's email provider.
#[utoipa::path(post, path = "/v1/auth/password/forgot", tag = "auth", request_body = ForgotPasswordRequest,
    responses((status = 202, body = ForgotPasswordView),
        (status = 422, description = "`validation_failed`: not an email address; `invalid_url`: `redirect_uri` is not on the application's allowed origins"),
        (status = 429)))]
pub async fn forgot_password(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let application_id = scope.tenant().id;
    let limits = &state.settings.rate_limits;
    limit(
        &state,
        &req,
        format!("password_forgot:ip:{application_id}:{}", client_ip(&req)),
        limits.sign_in_per_ip_per_minute,
    )
    .await?;
    let request: ForgotPasswordRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    issues.finish()?;
    if let Some(uri) = &request.redirect_uri {
        if let Some(issue) = applications::redirect_uri_issue(uri, &scope.tenant().allowed_origins) {
            return Err(ApiError::invalid_url("redirect_uri", issue));
        }
    }
    limit(&state, &req, format!("password_forgot:email:{application_id}:{email}"), limits.sign_in_per_email_per_minute)
        .await?;
    password_resets::request(&scope, &state.master_key, email, request.redirect_uri).await?;
    Ok(envelope::accepted(ForgotPasswordView { accepted: true }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordRequest {
    /// The token from the reset email.
    #[schema(max_length = 256)]
    pub token: String,
    #[schema(schema_with = crate::openapi::fields::password)]
    pub password: String,
}

#[derive(Serialize, ToSchema)]
pub struct PasswordResetView {
    pub user: UserView,
    /// How many of the user's sessions the reset ended (all of them).
    pub sessions_revoked: usize,
}

/// Set a new password with a reset token. Every session of the user ends.
#[utoipa::path(post, path = "/v1/auth/password/reset", tag = "auth", request_body = ResetPasswordRequest,
    responses((status = 200, body = PasswordResetView),
        (status = 400, description = "`invalid_grant`: the token is unknown, expired, used, or superseded by a newer one"),
        (status = 422), (status = 429)))]
pub async fn reset_password(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(&state, &req, format!("password_reset:ip:{}:{}", scope.tenant().id, client_ip(&req)), per_ip).await?;
    let request: ResetPasswordRequest = body.json().await?;
    let (user, sessions_revoked) =
        password_resets::reset(&scope, &state.passwords, &request.token, request.password).await?;
    Ok(envelope::ok(PasswordResetView { user: (&user).into(), sessions_revoked }))
}
