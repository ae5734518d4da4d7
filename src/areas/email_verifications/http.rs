//! Email verification: prove the email with the code it was sent, or ask
//! for a new code.
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{email_verifications, users, validate::Issues},
    auth::public::{client_ip, limit, public_caller},
    error::ApiResult,
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
#[openapi(paths(verify_email, resend_code))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/email/verify").route(web::post().to(verify_email)))
        .service(web::resource("/auth/email/resend").route(web::post().to(resend_code)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyEmailRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    /// The 6-digit code the email carries.
    #[schema(pattern = "^[0-9]{6}$")]
    pub code: String,
}

#[derive(Serialize, ToSchema)]
pub struct VerifiedEmailView {
    pub user_id: Uuid,
    pub email: String,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub email_verified_at: Option<DateTime<Utc>>,
}

/// Prove an email with its code (6 digits, 15 minutes, single use, 5
/// tries). The user's tokens carry `email_verified: true` from their next
/// refresh or sign-in.
#[utoipa::path(post, path = "/v1/auth/email/verify", tag = "auth", request_body = VerifyEmailRequest,
    responses((status = 200, body = VerifiedEmailView),
        (status = 400, description = "`invalid_grant`: wrong, expired, used or tried too often (one answer for each, and for an unknown email)"),
        (status = 422), (status = 429)))]
pub async fn verify_email(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let limits = &state.settings.rate_limits;
    let ip_key = format!("email_verify:ip:{}:{}", scope.tenant().id, client_ip(&req));
    limit(&state, &req, ip_key, limits.sign_in_per_ip_per_minute).await?;
    let request: VerifyEmailRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    if request.code.len() != 6 || !request.code.bytes().all(|b| b.is_ascii_digit()) {
        issues.add("code", "must be the 6 digits the email carries");
    }
    issues.finish()?;
    let user = email_verifications::verify(&scope, &state.master_key, &email, &request.code).await?;
    Ok(envelope::ok(VerifiedEmailView {
        user_id: user.id,
        email: user.email,
        email_verified_at: user.email_verified_at,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResendCodeRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct ResendCodeView {
    /// Always true: whether the email is an unverified user's is not said.
    pub accepted: bool,
}

/// Ask for a new code. Answers 202 the same way whether or not the email
/// is a user's; an unverified user gets a code (at most one a minute),
/// which supersedes the older ones.
#[utoipa::path(post, path = "/v1/auth/email/resend", tag = "auth", request_body = ResendCodeRequest,
    responses((status = 202, body = ResendCodeView), (status = 422), (status = 429)))]
pub async fn resend_code(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let limits = &state.settings.rate_limits;
    let ip_key = format!("email_resend:ip:{}:{}", scope.tenant().id, client_ip(&req));
    limit(&state, &req, ip_key, limits.sign_in_per_ip_per_minute).await?;
    let request: ResendCodeRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    issues.finish()?;
    state.email_codes().resend(&scope, email).await?;
    Ok(envelope::accepted(ResendCodeView { accepted: true }))
}
