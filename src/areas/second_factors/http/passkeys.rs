//! Passkeys: registration, listing and removal by the signed-in user, and
//! the ceremonies that authenticate with one (a passwordless sign-in, a
//! sign-in's second step, a step-up). Each ceremony is two calls: the
//! options for the browser's `navigator.credentials`, then its answer.
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use entity::passkey;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use webauthn_rs::prelude::{PublicKeyCredential, RegisterPublicKeyCredential};

use crate::{
    areas::{
        auth,
        second_factors::{
            challenges,
            passkeys::{self, Ceremony, CEREMONY_MINUTES},
        },
        validate::Issues,
    },
    auth::{
        end_user::EndUser,
        public::{limit_sign_ins_per_ip, public_caller, session_ttl},
    },
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

#[derive(Serialize, ToSchema)]
pub struct PasskeyView {
    pub id: uuid::Uuid,
    pub name: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<&passkey::Model> for PasskeyView {
    fn from(row: &passkey::Model) -> Self {
        PasskeyView { id: row.id, name: row.name.clone(), created_at: row.created_at, last_used_at: row.last_used_at }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PasskeyCeremonyView {
    /// Send it back with the browser's answer: single use, 5 minutes.
    pub ceremony: String,
    pub expires_in: i64,
    /// `{publicKey: …}` for `navigator.credentials.create()` or `.get()`
    /// (binary fields base64url, as `PublicKeyCredential.parseCreationOptionsFromJSON`
    /// and `parseRequestOptionsFromJSON` read them).
    #[schema(value_type = Object)]
    pub options: Value,
}

impl From<Ceremony> for PasskeyCeremonyView {
    fn from(ceremony: Ceremony) -> Self {
        PasskeyCeremonyView { ceremony: ceremony.handle, expires_in: CEREMONY_MINUTES * 60, options: ceremony.options }
    }
}

/// Begin registering a passkey for the signed-in user: the options for
/// `navigator.credentials.create()`. Needs the application's
/// `passkey_rp_id` (409 `passkeys_not_configured` otherwise).
#[utoipa::path(post, path = "/v1/auth/me/passkeys/options", tag = "auth",
    responses((status = 200, body = PasskeyCeremonyView), (status = 401),
        (status = 403, description = "`aal2_required`: the application's `require_aal2_for` names `register_passkey`"),
        (status = 409, description = "`passkeys_not_configured`"), (status = 422, description = "the user has 20 passkeys")),
    security(("access_token" = [])))]
pub async fn passkey_registration_options(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    user.require_aal2_for("register_passkey")?;
    body.no_fields().await?;
    let account = crate::areas::users::find(&user.scope, user.session.user_id).await?;
    let ceremony = passkeys::start_registration(&user.scope, &account).await?;
    Ok(envelope::ok(PasskeyCeremonyView::from(ceremony)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterPasskeyRequest {
    #[schema(schema_with = crate::openapi::fields::text::<100>)]
    pub ceremony: String,
    /// The created credential as `PublicKeyCredential.toJSON()` gives it.
    #[schema(schema_with = crate::openapi::fields::passkey_attestation)]
    pub credential: RegisterPublicKeyCredential,
    /// What the user calls it; default `Passkey N`.
    #[schema(schema_with = crate::openapi::fields::optional_text::<100>)]
    pub name: Option<String>,
}

/// Register the passkey the browser created: the attestation is checked
/// against the ceremony (challenge, origin, relying party, user
/// verification). A user with a passkey is asked for a second factor at
/// password sign-in, and can sign in with the passkey alone.
#[utoipa::path(post, path = "/v1/auth/me/passkeys", tag = "auth", request_body = RegisterPasskeyRequest,
    responses((status = 201, body = PasskeyView),
        (status = 400, description = "`invalid_grant`: the ceremony is unknown, expired or used"), (status = 401),
        (status = 409, description = "`passkeys_not_configured`, or `conflict`: the passkey is registered already"),
        (status = 422, description = "the credential does not verify")),
    security(("access_token" = [])))]
pub async fn register_passkey(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    user.require_aal2_for("register_passkey")?;
    let request: RegisterPasskeyRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = request.name.map(|n| issues.text("name", &n, 100));
    issues.finish()?;
    let row =
        passkeys::finish_registration(&user.scope, user.session.user_id, &request.ceremony, &request.credential, name)
            .await?;
    Ok(envelope::created(PasskeyView::from(&row)))
}

/// The signed-in user's passkeys, oldest first.
#[utoipa::path(get, path = "/v1/auth/me/passkeys", tag = "auth",
    responses((status = 200, body = [PasskeyView]), (status = 401)), security(("access_token" = [])))]
pub async fn list_passkeys(user: EndUser) -> ApiResult<HttpResponse> {
    let rows = passkeys::list(&user.scope, user.session.user_id).await?;
    Ok(envelope::page(rows.iter().map(PasskeyView::from).collect(), false))
}

/// Remove one of the signed-in user's passkeys. Needs a fresh `aal2`
/// session (a second factor proven in the last 15 minutes).
#[utoipa::path(delete, path = "/v1/auth/me/passkeys/{passkey_id}", tag = "auth",
    params(("passkey_id" = Uuid, Path, description = "The passkey's id.")),
    responses((status = 200, description = "`data: {}`"), (status = 401), (status = 403, description = "`aal2_required`"), (status = 404)),
    security(("access_token" = [])))]
pub async fn remove_passkey(user: EndUser, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("passkey", &path)?;
    passkeys::remove(&user.scope, &user.session, id).await?;
    Ok(envelope::ok(json!({})))
}

/// Begin a passwordless sign-in: options for `navigator.credentials.get()`
/// naming no credential, so the browser offers the user's passkeys for the
/// application's relying party. Limited per client address.
#[utoipa::path(post, path = "/v1/auth/passkeys/options", tag = "auth",
    responses((status = 200, body = PasskeyCeremonyView), (status = 401),
        (status = 409, description = "`passkeys_not_configured`"), (status = 429)))]
pub async fn passkey_sign_in_options(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    body.no_fields().await?;
    limit_sign_ins_per_ip(&state, &req, &scope).await?;
    let ceremony = passkeys::start_authentication(&scope, None).await?;
    Ok(envelope::ok(PasskeyCeremonyView::from(ceremony)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasskeySignInRequest {
    #[schema(schema_with = crate::openapi::fields::text::<100>)]
    pub ceremony: String,
    /// The assertion as `PublicKeyCredential.toJSON()` gives it.
    #[schema(schema_with = crate::openapi::fields::passkey_assertion)]
    pub credential: PublicKeyCredential,
}

/// Sign in with a passkey: the assertion is checked against the ceremony
/// (challenge, origin, relying party, user verification, signature,
/// counter); the session is at `aal2`. A refusal spends the ceremony.
#[utoipa::path(post, path = "/v1/auth/sign-in/passkey", tag = "auth", request_body = PasskeySignInRequest,
    responses((status = 200, body = crate::areas::auth::view::SignedInView),
        (status = 400, description = "`invalid_grant`: the ceremony is unknown, expired or used"),
        (status = 401, description = "`invalid_credentials`: the passkey is unknown here or its assertion does not verify"),
        (status = 403, description = "`email_not_verified`"), (status = 409, description = "`passkeys_not_configured`"),
        (status = 429)))]
pub async fn sign_in_with_passkey(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let request: PasskeySignInRequest = body.json().await?;
    limit_sign_ins_per_ip(&state, &req, &scope).await?;
    let (signer, user, opened) = auth::sign_in_with_passkey(
        &scope,
        &state.issuer(),
        state.email_codes(),
        &request.ceremony,
        &request.credential,
        session_ttl(&state),
    )
    .await?;
    Ok(envelope::ok(crate::areas::auth::view::signed_in(&signer, &user, opened)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecondStepOptionsRequest {
    /// The `challenge` of the sign-in's `mfa_required` answer.
    #[schema(schema_with = crate::openapi::fields::text::<100>)]
    pub challenge: String,
}

/// Options for a sign-in's second step with a passkey: the user's
/// passkeys as the allowed credentials. Complete with `POST
/// /v1/auth/sign-in/mfa {challenge, ceremony, credential}`.
#[utoipa::path(post, path = "/v1/auth/sign-in/mfa/passkey", tag = "auth", request_body = SecondStepOptionsRequest,
    responses((status = 200, body = PasskeyCeremonyView),
        (status = 400, description = "`invalid_grant`: the challenge is unknown, expired or used"),
        (status = 404, description = "the user has no passkey"), (status = 409, description = "`passkeys_not_configured`"),
        (status = 429)))]
pub async fn passkey_second_step_options(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let request: SecondStepOptionsRequest = body.json().await?;
    limit_sign_ins_per_ip(&state, &req, &scope).await?;
    let user_id = challenges::user_of(&scope, &request.challenge)
        .await?
        .ok_or(crate::areas::second_factors::SecondFactorError::InvalidChallenge)?;
    let ceremony = passkeys::start_authentication(&scope, Some(user_id)).await?;
    Ok(envelope::ok(PasskeyCeremonyView::from(ceremony)))
}

/// Options for a step-up with a passkey: the signed-in user's passkeys as
/// the allowed credentials. Complete with `POST /v1/auth/mfa/step-up
/// {ceremony, credential}`.
#[utoipa::path(post, path = "/v1/auth/mfa/step-up/passkey", tag = "auth",
    responses((status = 200, body = PasskeyCeremonyView), (status = 401),
        (status = 404, description = "the user has no passkey"), (status = 409, description = "`passkeys_not_configured`")),
    security(("access_token" = [])))]
pub async fn passkey_step_up_options(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    body.no_fields().await?;
    let ceremony = passkeys::start_authentication(&user.scope, Some(user.session.user_id)).await?;
    Ok(envelope::ok(PasskeyCeremonyView::from(ceremony)))
}
