//! Second factors: TOTP (RFC 6238) with recovery codes, and the sign-ins
//! that need one. A user with an active factor who proves a first factor
//! (a password, a provider) gets a challenge instead of a session
//! ([`challenges`]); a code completes it with a session at `aal2`.
//! Enrolment ([`totp`]) seals the secret with the master key, bound to the
//! application and the user; a first code confirms it and answers ten
//! recovery codes, shown once ([`recovery`]). A signed-in `aal1` session
//! proves a factor to continue at `aal2` ([`step_up`]). Removing the factor
//! needs a fresh `aal2` session.
pub mod challenges;
pub mod recovery;
pub mod step_up;
pub mod totp;

use sea_orm::DbErr;
use uuid::Uuid;

use crate::{crypto::master_key::MasterKey, storage::TenantTxn};

/// How long after a second factor was proven a session counts as fresh
/// enough to remove factors.
pub const FRESH_AAL2_MINUTES: i64 = 15;

/// Which of the user's factors `code` proves (`totp` or `recovery_code`),
/// taking it so it is never accepted again; `None`: none does.
pub async fn prove(
    txn: &mut TenantTxn,
    master_key: &MasterKey,
    user_id: Uuid,
    code: &str,
) -> Result<Option<&'static str>, SecondFactorError> {
    if totp::accept_code(txn, master_key, user_id, code).await? {
        return Ok(Some("totp"));
    }
    if recovery::consume(txn, master_key, user_id, code).await? {
        return Ok(Some("recovery_code"));
    }
    Ok(None)
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
    #[error(transparent)]
    Db(#[from] DbErr),
}
