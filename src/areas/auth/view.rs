//! A sign-in's answer on the wire: a session with its tokens, or a second
//! factor to complete. Every way of signing in answers with these.
use entity::user;
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    areas::{
        auth,
        sessions::Opened,
        users::view::{SessionView, UserView},
    },
    storage::TenantScope,
    tokens::{Issued, Signer},
};

#[derive(Serialize, ToSchema)]
pub struct SignedInView {
    pub user: UserView,
    pub session: SessionView,
    /// EdDSA JWT; verify against the application's JWKS.
    pub access_token: String,
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// Opaque; rotated on every use of `POST /v1/auth/token`.
    pub refresh_token: String,
}

/// A sign-in's answer: a session, or (for a user with a second factor) a
/// challenge to complete with `POST /v1/auth/sign-in/mfa`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // made once per sign-in and serialized at once
pub enum SignInAnswer {
    SignedIn(SignedInView),
    SecondFactorRequired(SecondFactorRequiredView),
}

#[derive(Serialize, ToSchema)]
pub struct SecondFactorRequiredView {
    /// Always true: no session yet, no tokens.
    pub mfa_required: bool,
    /// Single use, 5 minutes, 5 tries: `POST /v1/auth/sign-in/mfa` with a
    /// code, or with a passkey (options from `POST /v1/auth/sign-in/mfa/passkey`).
    pub challenge: String,
    /// Seconds until the challenge expires.
    pub expires_in: i64,
    /// What can complete it: `totp`, `recovery_code`, `passkey`.
    pub factors: Vec<&'static str>,
}

impl From<auth::SignedIn> for SignInAnswer {
    fn from(outcome: auth::SignedIn) -> Self {
        match outcome {
            auth::SignedIn::Session(signer, user, opened) => SignInAnswer::SignedIn(signed_in(&signer, &user, opened)),
            auth::SignedIn::SecondFactorRequired(issued) => {
                SignInAnswer::SecondFactorRequired(SecondFactorRequiredView {
                    mfa_required: true,
                    challenge: issued.challenge,
                    expires_in: issued.expires_in,
                    factors: issued.factors,
                })
            }
        }
    }
}

pub fn signed_in(signer: &Signer, user: &user::Model, opened: Opened) -> SignedInView {
    view_of(signer.issue(&opened.session, None), user, opened)
}

/// [`signed_in`], for a session that may have opened in an organization
/// (an SSO sign-in's): its token carries the organization and the role.
pub async fn signed_in_in_organization(
    issuer: &auth::Issuer<'_>,
    scope: &TenantScope,
    signer: &Signer,
    user: &user::Model,
    opened: Opened,
) -> Result<SignedInView, auth::AuthError> {
    let access = issuer.access_token(signer, scope, &opened.session).await?;
    Ok(view_of(access, user, opened))
}

/// [`SignInAnswer::from`], with [`signed_in_in_organization`].
pub async fn answer_in_organization(
    issuer: &auth::Issuer<'_>,
    scope: &TenantScope,
    outcome: auth::SignedIn,
) -> Result<SignInAnswer, auth::AuthError> {
    match outcome {
        auth::SignedIn::Session(signer, user, opened) => {
            Ok(SignInAnswer::SignedIn(signed_in_in_organization(issuer, scope, &signer, &user, opened).await?))
        }
        challenge => Ok(challenge.into()),
    }
}

fn view_of(access: Issued, user: &user::Model, opened: Opened) -> SignedInView {
    SignedInView {
        user: user.into(),
        session: (&opened.session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        refresh_token: opened.refresh_token,
    }
}
