//! Second factors: TOTP enrolment, confirmation (with recovery codes) and
//! removal for the signed-in user, and the sign-in's second step.
pub mod passkeys;

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use webauthn_rs::prelude::PublicKeyCredential;

use crate::{
    area::Area,
    areas::{
        auth::view::signed_in_in_organization,
        second_factors::{self, challenges, recovery, step_up, totp, Proof},
        users::view::SessionView,
    },
    auth::{
        end_user::EndUser,
        public::{limit, public_caller, session_ttl},
    },
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
#[openapi(paths(
    list_factors,
    start_totp,
    confirm_totp,
    remove_totp,
    complete_sign_in,
    step_up_session,
    passkeys::passkey_registration_options,
    passkeys::register_passkey,
    passkeys::list_passkeys,
    passkeys::remove_passkey,
    passkeys::passkey_sign_in_options,
    passkeys::sign_in_with_passkey,
    passkeys::passkey_second_step_options,
    passkeys::passkey_step_up_options
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/sign-in/mfa").route(web::post().to(complete_sign_in)))
        .service(web::resource("/auth/me/mfa").route(web::get().to(list_factors)))
        .service(
            web::resource("/auth/me/mfa/totp").route(web::post().to(start_totp)).route(web::delete().to(remove_totp)),
        )
        .service(web::resource("/auth/me/mfa/totp/confirm").route(web::post().to(confirm_totp)))
        .service(web::resource("/auth/mfa/step-up").route(web::post().to(step_up_session)))
        .service(web::resource("/auth/mfa/step-up/passkey").route(web::post().to(passkeys::passkey_step_up_options)))
        .service(
            web::resource("/auth/sign-in/mfa/passkey").route(web::post().to(passkeys::passkey_second_step_options)),
        )
        .service(web::resource("/auth/passkeys/options").route(web::post().to(passkeys::passkey_sign_in_options)))
        .service(web::resource("/auth/sign-in/passkey").route(web::post().to(passkeys::sign_in_with_passkey)))
        .service(
            web::resource("/auth/me/passkeys/options").route(web::post().to(passkeys::passkey_registration_options)),
        )
        .service(
            web::resource("/auth/me/passkeys")
                .route(web::post().to(passkeys::register_passkey))
                .route(web::get().to(passkeys::list_passkeys)),
        )
        .service(web::resource("/auth/me/passkeys/{passkey_id}").route(web::delete().to(passkeys::remove_passkey)));
}

#[derive(Serialize, ToSchema)]
pub struct SecondFactorsView {
    /// The TOTP factor: `pending` until a first code confirms it, then `active`; null when none.
    pub totp: Option<TotpFactorView>,
    /// Recovery codes not used yet.
    pub recovery_codes_remaining: u64,
    /// Registered passkeys (`GET /v1/auth/me/passkeys` lists them).
    pub passkeys: usize,
}

#[derive(Serialize, ToSchema)]
pub struct TotpFactorView {
    pub status: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub confirmed_at: Option<DateTime<Utc>>,
}

/// The signed-in user's second factors.
#[utoipa::path(get, path = "/v1/auth/me/mfa", tag = "auth",
    responses((status = 200, body = SecondFactorsView), (status = 401)), security(("access_token" = [])))]
pub async fn list_factors(user: EndUser) -> ApiResult<HttpResponse> {
    let user_id = user.session.user_id;
    let factor = totp::find(&user.scope, user_id).await?;
    Ok(envelope::ok(SecondFactorsView {
        totp: factor.map(|f| TotpFactorView {
            status: f.status,
            created_at: f.created_at,
            confirmed_at: f.confirmed_at,
        }),
        recovery_codes_remaining: recovery::remaining(&user.scope, user_id).await?,
        passkeys: second_factors::passkeys::list(&user.scope, user_id).await?.len(),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct TotpEnrolmentView {
    /// `otpauth://totp/…` (SHA1, 6 digits, 30 s) for an authenticator app's QR scanner.
    pub otpauth_uri: String,
    /// The same secret in base32, to type in by hand.
    pub secret: String,
}

/// Start TOTP enrolment (again, if one is pending): a new secret. It
/// becomes the user's factor once a code from it is confirmed.
#[utoipa::path(post, path = "/v1/auth/me/mfa/totp", tag = "auth",
    responses((status = 201, body = TotpEnrolmentView), (status = 401), (status = 409, description = "`conflict`: a TOTP factor is active; remove it first")),
    security(("access_token" = [])))]
pub async fn start_totp(state: web::Data<AppState>, user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    body.no_fields().await?;
    let account = crate::areas::users::find(&user.scope, user.session.user_id).await?.email;
    let enrolment = totp::start(&user.scope, &state.master_key, user.session.user_id, &account).await?;
    Ok(envelope::created(TotpEnrolmentView { otpauth_uri: enrolment.otpauth_uri, secret: enrolment.secret }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpCodeRequest {
    /// The 6 digits the authenticator app shows now.
    #[schema(pattern = "^[0-9]{6}$")]
    pub code: String,
}

#[derive(Serialize, ToSchema)]
pub struct RecoveryCodesView {
    /// Ten single-use codes, each accepted once in place of a TOTP code.
    /// Shown this once.
    pub recovery_codes: Vec<String>,
}

/// Confirm TOTP enrolment with a first code: the factor becomes active and
/// ten recovery codes are answered (shown once). Tries are limited per user.
#[utoipa::path(post, path = "/v1/auth/me/mfa/totp/confirm", tag = "auth", request_body = TotpCodeRequest,
    responses((status = 200, body = RecoveryCodesView), (status = 400, description = "`invalid_grant`: the code is wrong"),
        (status = 401), (status = 404, description = "no enrolment is pending"), (status = 429)),
    security(("access_token" = [])))]
pub async fn confirm_totp(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: EndUser,
    body: Body,
) -> ApiResult<HttpResponse> {
    let request: TotpCodeRequest = body.json().await?;
    let per_minute = state.settings.rate_limits.sign_in_per_email_per_minute;
    limit(&state, &req, format!("mfa:user:{}:{}", user.tenant().id, user.session.user_id), per_minute).await?;
    let codes = totp::confirm(&user.scope, &state.master_key, user.session.user_id, &request.code).await?;
    Ok(envelope::ok(RecoveryCodesView { recovery_codes: codes }))
}

/// Remove the TOTP factor and its recovery codes. Needs a fresh `aal2`
/// session: one opened by a sign-in that proved the factor in the last 15
/// minutes (403 `aal2_required` otherwise).
#[utoipa::path(delete, path = "/v1/auth/me/mfa/totp", tag = "auth",
    responses((status = 200, description = "`data: {}`"), (status = 401), (status = 403, description = "`aal2_required`"), (status = 404)),
    security(("access_token" = [])))]
pub async fn remove_totp(user: EndUser) -> ApiResult<HttpResponse> {
    totp::remove(&user.scope, &user.session).await?;
    Ok(envelope::ok(json!({})))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteSignInRequest {
    /// The `challenge` of the sign-in's answer.
    #[schema(schema_with = crate::openapi::fields::text::<100>)]
    pub challenge: String,
    /// A TOTP code (6 digits) or an unused recovery code (`xxxxx-xxxxx`).
    #[schema(schema_with = crate::openapi::fields::optional_text::<32>)]
    pub code: Option<String>,
    /// A passkey ceremony begun for this sign-in (`POST /v1/auth/sign-in/mfa/passkey`).
    #[schema(schema_with = crate::openapi::fields::optional_text::<100>)]
    pub ceremony: Option<String>,
    /// The passkey's assertion as `PublicKeyCredential.toJSON()` gives it.
    #[schema(schema_with = crate::openapi::fields::optional_passkey_assertion)]
    pub credential: Option<PublicKeyCredential>,
}

/// A second factor: a `code`, or a passkey's `ceremony` and `credential`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProofRequest {
    /// A TOTP code (6 digits) or an unused recovery code (`xxxxx-xxxxx`).
    #[schema(schema_with = crate::openapi::fields::optional_text::<32>)]
    pub code: Option<String>,
    /// A passkey ceremony begun for this sign-in or step-up.
    #[schema(schema_with = crate::openapi::fields::optional_text::<100>)]
    pub ceremony: Option<String>,
    /// The passkey's assertion as `PublicKeyCredential.toJSON()` gives it.
    #[schema(schema_with = crate::openapi::fields::optional_passkey_assertion)]
    pub credential: Option<PublicKeyCredential>,
}

impl ProofRequest {
    fn proof(self) -> ApiResult<Proof> {
        proof(self.code, self.ceremony, self.credential)
    }
}

/// A code, or a passkey's ceremony and assertion: one of the two.
fn proof(code: Option<String>, ceremony: Option<String>, credential: Option<PublicKeyCredential>) -> ApiResult<Proof> {
    match (code, ceremony, credential) {
        (Some(code), None, None) => Ok(Proof::Code(code)),
        (None, Some(ceremony), Some(credential)) => Ok(Proof::Passkey { ceremony, credential: Box::new(credential) }),
        _ => Err(ApiError::invalid("code", "send either `code`, or `ceremony` and `credential` of a passkey")),
    }
}

/// Complete a sign-in that answered `mfa_required` with a TOTP code, a
/// recovery code or a passkey (options from `POST
/// /v1/auth/sign-in/mfa/passkey`): a session at `aal2`. Five tries per challenge (5
/// minutes, single use) and a per-user limit; a code is accepted once.
#[utoipa::path(post, path = "/v1/auth/sign-in/mfa", tag = "auth", request_body = CompleteSignInRequest,
    responses((status = 200, body = crate::areas::auth::view::SignedInView),
        (status = 400, description = "`invalid_grant`: the challenge is unknown, expired, used or out of tries"),
        (status = 401, description = "`invalid_credentials`: the code is wrong or already used"),
        (status = 409, description = "`passkeys_not_configured`: a passkey proof while the application has no `passkey_rp_id`"), (status = 429)))]
pub async fn complete_sign_in(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let request: CompleteSignInRequest = body.json().await?;
    let proof = proof(request.code, request.ceremony, request.credential)?;
    if let Some(user_id) = challenges::user_of(&scope, &request.challenge).await? {
        let per_minute = state.settings.rate_limits.sign_in_per_email_per_minute;
        limit(&state, &req, format!("mfa:user:{}:{user_id}", scope.tenant().id), per_minute).await?;
    }
    let completed =
        challenges::complete(&scope, &state.master_key, &request.challenge, &proof, session_ttl(&state)).await?;
    let issuer = state.issuer();
    let signer = issuer.signer(&scope).await?;
    // An SSO sign-in's session opened in its organization.
    let view = signed_in_in_organization(&issuer, &scope, &signer, &completed.user, completed.opened).await?;
    Ok(envelope::ok(view))
}

#[derive(Serialize, ToSchema)]
pub struct SteppedUpView {
    /// The same session, now at `aal2`.
    pub session: SessionView,
    /// A new access token saying `aal: aal2`; the refresh token is unchanged
    /// and its refreshes say `aal2` too.
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
}

/// Step up: the signed-in session proves a second factor (a TOTP code, an
/// unused recovery code or a passkey, options from `POST
/// /v1/auth/mfa/step-up/passkey`) and continues at `aal2`: same session id, a new
/// access token. Tries are limited per user; a code is accepted once.
#[utoipa::path(post, path = "/v1/auth/mfa/step-up", tag = "auth", request_body = ProofRequest,
    responses((status = 200, body = SteppedUpView),
        (status = 401, description = "`invalid_credentials`: the code is wrong or already used (or no factor)"),
        (status = 409, description = "`passkeys_not_configured`: a passkey proof while the application has no `passkey_rp_id`"), (status = 429)),
    security(("access_token" = [])))]
pub async fn step_up_session(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: EndUser,
    body: Body,
) -> ApiResult<HttpResponse> {
    let proof = body.json::<ProofRequest>().await?.proof()?;
    let per_minute = state.settings.rate_limits.sign_in_per_email_per_minute;
    limit(&state, &req, format!("mfa:user:{}:{}", user.tenant().id, user.session.user_id), per_minute).await?;
    let session = step_up::step_up(&user.scope, &state.master_key, &user.session, &proof).await?;
    let issuer = state.issuer();
    let signer = issuer.signer(&user.scope).await?;
    let access = issuer.access_token(&signer, &user.scope, &session).await?;
    Ok(envelope::ok(SteppedUpView {
        session: (&session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
    }))
}
