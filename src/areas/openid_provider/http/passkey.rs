//! Passkeys on the hosted pages: a passwordless sign-in (the sign-in
//! page's "Sign in with a passkey") and a sign-in's second step. Each
//! begins a ceremony through the API's own passkeys and answers a page
//! whose one script runs the browser's WebAuthn prompt and posts the
//! assertion back (`passkey=assert`). They are offered only where the
//! browser can hold the application's ceremonies: when this service's
//! public origin is one of the application's allowed origins, on its
//! `passkey_rp_id` (a custom domain such as `auth.example.com`).
use std::collections::BTreeMap;

use actix_web::{http::StatusCode, HttpRequest};
use webauthn_rs::prelude::PublicKeyCredential;

use super::{
    browser::{form_page_with_script, shown, too_many},
    next::Next,
    pages,
};
use crate::{
    areas::{
        auth::{self, AuthError},
        openid_provider::authorize::{self, Checked, Login},
        second_factors::{challenges, passkeys, Proof, SecondFactorError},
    },
    auth::public::{limit_sign_ins_per_ip, session_ttl},
    error::ApiResult,
    state::AppState,
    storage::TenantScope,
};

/// Whether the hosted pages can offer the application's passkeys.
pub(super) fn available(state: &AppState, scope: &TenantScope) -> bool {
    let origin = url::Url::parse(&state.settings.public_url()).map(|u| u.origin().ascii_serialization());
    origin.is_ok_and(|origin| passkeys::ceremonies_at(scope.tenant(), &origin))
}

/// A step: `sign_in` (a passwordless sign-in's prompt), `second_step`
/// (with `mfa_challenge`), or `assert` (with `passkey_ceremony`,
/// `passkey_credential` and, for a second step, `mfa_challenge`).
pub(super) async fn submitted(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    step: &str,
    mut given: BTreeMap<String, String>,
) -> ApiResult<Next> {
    let mfa_challenge = given.remove("mfa_challenge");
    let ceremony = given.remove("passkey_ceremony").unwrap_or_default();
    let credential = given.remove("passkey_credential").unwrap_or_default();
    let checked = match authorize::check(scope, &given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Next::Refused(refused)),
    };
    if !available(state, scope) {
        return Ok(Next::Shown(shown(scope, StatusCode::NOT_FOUND, "Passkeys are not available here.")));
    }
    if let Err(err) = limit_sign_ins_per_ip(state, req, scope).await {
        return too_many(scope, err).map(Next::Shown);
    }
    let user_id = match &mfa_challenge {
        Some(challenge) => match challenges::user_of(scope, challenge).await? {
            Some(user_id) => Some(user_id),
            None => return Ok(Next::Shown(shown(scope, StatusCode::FORBIDDEN, EXPIRED))),
        },
        None => None,
    };
    if step != "assert" {
        let begun = match passkeys::start_authentication(scope, user_id).await {
            Ok(begun) => begun,
            Err(SecondFactorError::NoPasskey) => return Ok(again(checked)),
            Err(err) => return Err(err.into()),
        };
        let heading = ("Sign in with a passkey", StatusCode::OK);
        let page = form_page_with_script(state, scope, &checked, heading, Some(pages::PASSKEY_SCRIPT), |csrf| {
            let form = pages::PasskeyForm {
                application: &scope.tenant().name,
                action: req.path(),
                parameters: &checked.parameters,
                csrf,
                ceremony: &begun.handle,
                options: &begun.options,
                mfa_challenge: mfa_challenge.as_deref(),
            };
            form.render()
        });
        return Ok(Next::Shown(page));
    }
    let Ok(credential) = serde_json::from_str::<PublicKeyCredential>(&credential) else { return Ok(again(checked)) };
    let ttl = session_ttl(state);
    let login = match mfa_challenge {
        Some(challenge) => {
            let proof = Proof::Passkey { ceremony, credential: Box::new(credential) };
            match challenges::complete(scope, &state.master_key, &challenge, &proof, ttl).await {
                Ok(completed) => {
                    let amr = authorize::amr_of(&completed.method, Some(completed.factor));
                    Login { session: completed.opened.session, amr }
                }
                Err(SecondFactorError::InvalidChallenge) => {
                    return Ok(Next::Shown(shown(scope, StatusCode::FORBIDDEN, EXPIRED)))
                }
                Err(SecondFactorError::InvalidCode | SecondFactorError::InvalidCeremony) => return Ok(again(checked)),
                Err(err) => return Err(err.into()),
            }
        }
        None => {
            let codes = state.email_codes();
            match auth::sign_in_with_passkey(scope, &state.issuer(), codes, &ceremony, &credential, ttl).await {
                Ok((_, _, opened)) => Login { session: opened.session, amr: authorize::amr_of("passkey", None) },
                Err(AuthError::InvalidCredentials | AuthError::SecondFactor(SecondFactorError::InvalidCeremony)) => {
                    return Ok(again(checked))
                }
                Err(AuthError::EmailNotVerified) => {
                    let text = "Verify your email first: we sent you a code.";
                    return Ok(Next::Shown(shown(scope, StatusCode::FORBIDDEN, text)));
                }
                Err(err) => return Err(err.into()),
            }
        }
    };
    Ok(Next::SignedIn(Box::new(checked), Box::new(login)))
}

const EXPIRED: &str = "This sign-in has expired or had too many tries. Go back to the application and start again.";

/// The sign-in page again: the passkey was not accepted.
fn again(checked: Checked) -> Next {
    let email = checked.login_hint.clone().unwrap_or_default();
    Next::SignIn(Box::new(checked), email, "The passkey was not accepted. Try again, or sign in another way.")
}
