//! Second factors: TOTP (RFC 6238) with recovery codes, passkeys
//! (WebAuthn, [`passkeys`]), and the sign-ins that need one. A user with a
//! factor who proves a first factor (a password, a provider) gets a
//! challenge instead of a session ([`challenges`]); a code or a passkey
//! completes it with a session at `aal2`.
//! Enrolment ([`totp`]) seals the secret with the master key, bound to the
//! application and the user; a first code confirms it and answers ten
//! recovery codes, shown once ([`recovery`]). A signed-in `aal1` session
//! proves a factor to continue at `aal2` ([`step_up`]). Removing the factor
//! needs a fresh `aal2` session.
pub mod challenges;
pub mod http;
pub mod passkeys;
pub mod recovery;
pub mod step_up;
pub mod totp;

use chrono::Duration;
use entity::{session, user};
use sea_orm::{sea_query::Expr, DbErr, QuerySelect};
use uuid::Uuid;

use webauthn_rs::prelude::PublicKeyCredential;

use crate::{
    crypto::master_key::MasterKey,
    error::{ApiError, Code},
    storage::{TenantConn, TenantTxn},
    tenancy::Tenant,
};

/// How long after a second factor was proven a session counts as fresh
/// enough to remove factors.
pub const FRESH_AAL2_MINUTES: i64 = 15;

/// Refuses a session that did not prove a second factor in the last
/// [`FRESH_AAL2_MINUTES`] (removing a factor needs one that did).
pub fn require_fresh_aal2(session: &session::Model) -> Result<(), SecondFactorError> {
    let fresh = crate::clock::now() - Duration::minutes(FRESH_AAL2_MINUTES);
    if session.aal != "aal2" || session.aal2_at.is_none_or(|at| at < fresh) {
        return Err(SecondFactorError::Aal2Required);
    }
    Ok(())
}

impl SecondFactorError {
    fn ceremony(err: webauthn_rs::prelude::WebauthnError) -> Self {
        SecondFactorError::CeremonyFailed(err.to_string())
    }
}

/// What a user offers as a second factor.
pub enum Proof {
    /// A TOTP code or a recovery code.
    Code(String),
    /// A passkey's assertion against a ceremony begun for this user.
    Passkey { ceremony: String, credential: Box<PublicKeyCredential> },
}

/// The second factors a user can prove (`totp`, `recovery_code`,
/// `passkey`); empty: a first factor is enough. One statement: `SELECT
/// EXISTS(<active TOTP>), EXISTS(<passkey>)` on the user's row (a user
/// deleted meanwhile has none).
pub async fn factors_of(conn: &impl TenantConn, user_id: Uuid) -> Result<Vec<&'static str>, DbErr> {
    let (totp, passkey): (bool, bool) = conn
        .find_by_id::<user::Entity>(user_id)
        .select_only()
        .expr(Expr::exists(totp::active_of(conn, user_id)))
        .expr(Expr::exists(passkeys::of_user(conn, user_id)))
        .into_tuple()
        .one(conn.conn())
        .await?
        .unwrap_or_default();
    let mut factors = Vec::new();
    if totp {
        factors.extend(["totp", "recovery_code"]);
    }
    if passkey {
        factors.push("passkey");
    }
    Ok(factors)
}

/// What a proof came to.
pub enum Proved {
    /// The factor it proved (`totp`, `recovery_code` or `passkey`), taken
    /// so it is never accepted again.
    Factor(&'static str),
    /// None: for a passkey, why (`counter_not_increased`, …), for the
    /// audit row; a wrong code has no reason to give.
    Not { reason: Option<&'static str> },
}

impl Proved {
    /// The audit data of a failed try, with the reason when there is one.
    pub fn failure(reason: Option<&'static str>, mut data: serde_json::Value) -> serde_json::Value {
        if let Some(reason) = reason {
            data["reason"] = serde_json::json!(reason);
        }
        data
    }
}

/// Which of the user's factors `proof` proves.
pub async fn prove(
    txn: &mut TenantTxn,
    tenant: &Tenant,
    master_key: &MasterKey,
    user_id: Uuid,
    proof: &Proof,
) -> Result<Proved, SecondFactorError> {
    match proof {
        Proof::Code(code) => {
            if totp::accept_code(txn, master_key, user_id, code).await? {
                return Ok(Proved::Factor("totp"));
            }
            if recovery::consume(txn, master_key, user_id, code).await? {
                return Ok(Proved::Factor("recovery_code"));
            }
            Ok(Proved::Not { reason: None })
        }
        Proof::Passkey { ceremony, credential } => {
            match passkeys::assert(txn, tenant, ceremony, passkeys::Purpose::Verify, Some(user_id), credential).await? {
                passkeys::Asserted::Proven { .. } => Ok(Proved::Factor("passkey")),
                passkeys::Asserted::Refused { reason, .. } => Ok(Proved::Not { reason: Some(reason) }),
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecondFactorError {
    #[error("the user already has an active TOTP factor")]
    AlreadyEnrolled,
    #[error("no TOTP enrolment waits for confirmation")]
    NotEnrolling,
    #[error("the user has no TOTP factor")]
    NotEnrolled,
    /// A wrong code at confirmation (or one already used).
    #[error("the code is wrong")]
    WrongCode,
    #[error("this needs a session that proved a second factor in the last {FRESH_AAL2_MINUTES} minutes")]
    Aal2Required,
    /// Unknown, expired, used, or tried too often: one answer for each.
    #[error("the challenge is unknown, expired or used up")]
    InvalidChallenge,
    /// A wrong, replayed or used code against a live challenge.
    #[error("the code is wrong or already used")]
    InvalidCode,
    /// The session ended while it stepped up.
    #[error("the session has ended")]
    SessionEnded,
    /// A stored secret does not open with this master key (another
    /// deployment's key, a row edited by hand).
    #[error("a stored TOTP secret cannot be opened with this master key")]
    SecretUnreadable,
    #[error("passkeys are not set up for this application: set its `passkey_rp_id`")]
    PasskeysOff,
    #[error("none of the application's allowed origins is on its `passkey_rp_id`")]
    NoOriginOnRpId,
    #[error("a user may have at most {} passkeys", passkeys::MAX_PER_USER)]
    TooManyPasskeys,
    /// Unknown, expired, used, or begun for another purpose or user.
    #[error("the passkey ceremony is unknown, expired or used")]
    InvalidCeremony,
    /// The authenticator's registration answer does not verify.
    #[error("the credential does not verify against the ceremony")]
    PasskeyRefused,
    #[error("this passkey is already registered")]
    PasskeyTaken,
    #[error("the user has no passkey")]
    NoPasskey,
    #[error("no such passkey")]
    PasskeyNotFound,
    /// A stored passkey or ceremony state does not parse (a row edited by hand).
    #[error("a stored passkey cannot be read")]
    PasskeyUnreadable,
    /// `webauthn-rs` could not begin a ceremony (not a caller's mistake).
    #[error("the passkey ceremony could not be begun: {0}")]
    CeremonyFailed(String),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<SecondFactorError> for ApiError {
    fn from(err: SecondFactorError) -> Self {
        let message = err.to_string();
        match err {
            SecondFactorError::AlreadyEnrolled => {
                ApiError::new(Code::Conflict, "A TOTP factor is active; remove it first.")
            }
            SecondFactorError::NotEnrolling
            | SecondFactorError::NotEnrolled
            | SecondFactorError::NoPasskey
            | SecondFactorError::PasskeyNotFound => ApiError::new(Code::NotFound, capitalized(&message)),
            SecondFactorError::WrongCode | SecondFactorError::InvalidChallenge | SecondFactorError::InvalidCeremony => {
                ApiError::new(Code::InvalidGrant, capitalized(&message))
            }
            SecondFactorError::PasskeysOff | SecondFactorError::NoOriginOnRpId => {
                ApiError::new(Code::PasskeysNotConfigured, capitalized(&message))
            }
            SecondFactorError::PasskeyTaken => ApiError::new(Code::Conflict, capitalized(&message)),
            SecondFactorError::TooManyPasskeys | SecondFactorError::PasskeyRefused => {
                ApiError::invalid("credential", message)
            }
            SecondFactorError::InvalidCode => ApiError::new(Code::InvalidCredentials, capitalized(&message)),
            SecondFactorError::Aal2Required => ApiError::new(Code::Aal2Required, capitalized(&message)),
            SecondFactorError::SecretUnreadable
            | SecondFactorError::PasskeyUnreadable
            | SecondFactorError::CeremonyFailed(_) => ApiError::internal(message),
            SecondFactorError::SessionEnded => ApiError::unauthenticated(),
            SecondFactorError::Db(err) => err.into(),
        }
    }
}

fn capitalized(message: &str) -> String {
    let mut chars = message.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".").unwrap_or_default()
}
