//! End users' own routes (contract §5): sign-up, sign-in, refresh and
//! sign-out ([`sign_in`]), the signed-in user and organization activation
//! ([`me`]), and personal API keys, operation 7 ([`personal_keys`]). The
//! flows live in `service::auth`; these parse, call one service function and
//! render.
pub mod email;
pub mod me;
pub mod mfa;
pub mod oauth;
pub mod passkeys;
pub mod password;
pub mod personal_keys;
pub mod sign_in;

use actix_web::{web, HttpMessage, HttpRequest};

use crate::{
    auth::public_scope,
    error::{ApiError, ApiResult},
    state::AppState,
    storage::TenantScope,
    tenancy::Tenant,
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/sign-up").route(web::post().to(sign_in::sign_up)))
        .service(web::resource("/auth/sign-in").route(web::post().to(sign_in::sign_in)))
        .service(web::resource("/auth/sign-in/mfa").route(web::post().to(mfa::complete_sign_in)))
        .service(web::resource("/auth/me/mfa").route(web::get().to(mfa::list_factors)))
        .service(
            web::resource("/auth/me/mfa/totp")
                .route(web::post().to(mfa::start_totp))
                .route(web::delete().to(mfa::remove_totp)),
        )
        .service(web::resource("/auth/me/mfa/totp/confirm").route(web::post().to(mfa::confirm_totp)))
        .service(web::resource("/auth/mfa/step-up").route(web::post().to(mfa::step_up_session)))
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
        .service(web::resource("/auth/me/passkeys/{passkey_id}").route(web::delete().to(passkeys::remove_passkey)))
        .service(web::resource("/auth/token").route(web::post().to(sign_in::refresh)))
        .service(web::resource("/auth/sign-out").route(web::post().to(sign_in::sign_out)))
        .service(web::resource("/auth/password/forgot").route(web::post().to(password::forgot_password)))
        .service(web::resource("/auth/password/reset").route(web::post().to(password::reset_password)))
        .service(web::resource("/auth/email/verify").route(web::post().to(email::verify_email)))
        .service(web::resource("/auth/email/resend").route(web::post().to(email::resend_code)))
        .service(web::resource("/auth/oauth/exchange").route(web::post().to(oauth::exchange_code)))
        .service(web::resource("/auth/oauth/{provider}/start").route(web::get().to(oauth::start)))
        .service(
            web::resource("/auth/oauth/{provider}/callback")
                .route(web::get().to(oauth::callback))
                .route(web::post().to(oauth::callback_form)),
        )
        .service(web::resource("/auth/me").route(web::get().to(me::me)))
        .service(web::resource("/auth/organizations/{organization_id}/activate").route(web::post().to(me::activate)))
        .service(
            web::resource("/auth/me/api-keys")
                .route(web::post().to(personal_keys::create_personal_key))
                .route(web::get().to(personal_keys::list_personal_keys)),
        )
        .service(
            web::resource("/auth/me/api-keys/{key_id}/revoke")
                .route(web::post().to(personal_keys::revoke_personal_key)),
        );
}

/// The application of an unauthenticated end-user request, from
/// `x-application-id`, as the public caller; unknown or missing is 401 like
/// a bad credential.
pub(crate) fn public_caller(req: &HttpRequest, state: &AppState) -> ApiResult<TenantScope> {
    let tenant = req.extensions().get::<Tenant>().cloned().ok_or_else(ApiError::unauthenticated)?;
    public_scope(state, tenant).ok_or_else(ApiError::unauthenticated)
}

/// Takes one attempt from a per-minute bucket (0: no limit).
async fn limit(state: &AppState, req: &HttpRequest, key: String, per_minute: u32) -> ApiResult<()> {
    state.limiter.take_for(req, &key, f64::from(per_minute) / 60.0, f64::from(per_minute)).await
}

/// Takes one attempt from the client address's sign-in bucket of the
/// application (password and passkey sign-ins share it).
async fn limit_sign_ins_per_ip(state: &AppState, req: &HttpRequest, scope: &TenantScope) -> ApiResult<()> {
    let per_minute = state.settings.rate_limits.sign_in_per_ip_per_minute;
    limit(state, req, format!("sign_in:ip:{}:{}", scope.tenant().id, client_ip(req)), per_minute).await
}

fn client_ip(req: &HttpRequest) -> String {
    req.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default()
}
