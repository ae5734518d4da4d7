//! TOTP factors (RFC 6238: HMAC-SHA1, 6 digits, 30-second steps, as every
//! authenticator app reads an `otpauth://` URI): enrolment, confirmation,
//! checking a code, removal. A code matches the current step or the one
//! before or after (clock drift); a step is accepted once per factor
//! (`last_used_step` only moves forward, by a conditional update), so a
//! code cannot be replayed inside its window.
use entity::{mfa_factor, recovery_code, session};
use rand::{rngs::OsRng, RngCore};
use sea_orm::{
    sea_query::{Expr, SelectStatement},
    ColumnTrait, Condition, IntoActiveModel, QueryFilter, QueryTrait, Select, UpdateMany,
};
use serde_json::json;
use totp_rs::{Algorithm, TOTP};
use uuid::Uuid;

use super::{recovery, SecondFactorError};
use crate::{
    crypto::{master_key::MasterKey, seal},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

const KIND: &str = "totp";
const DIGITS: usize = 6;
const STEP_SECONDS: u64 = 30;
const PENDING: &str = "pending";
const ACTIVE: &str = "active";

/// A started enrolment: what an authenticator app needs.
pub struct Enrolment {
    /// `otpauth://totp/…` for a QR code.
    pub otpauth_uri: String,
    /// The secret in base32, for typing in by hand.
    pub secret: String,
}

pub fn context(application_id: Uuid, user_id: Uuid) -> String {
    format!("mfa-totp/{application_id}/{user_id}")
}

fn generator(secret: Vec<u8>, issuer: Option<String>, account: String) -> TOTP {
    TOTP::new_unchecked(Algorithm::SHA1, DIGITS, 1, STEP_SECONDS, secret, issuer, account)
}

/// The time step `code` is for: the current one, the one before or the one after.
pub fn matching_step(secret: &[u8], code: &str, now: i64) -> Option<i64> {
    if code.len() != DIGITS || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let totp = generator(secret.to_vec(), None, String::new());
    let current = now.max(0) / STEP_SECONDS as i64;
    (current - 1..=current + 1).find(|step| {
        let expected = totp.generate((*step).max(0) as u64 * STEP_SECONDS);
        crate::crypto::constant_time_eq(expected.as_bytes(), code.as_bytes())
    })
}

/// The user's TOTP factor, in any state.
pub async fn find(conn: &impl TenantConn, user_id: Uuid) -> Result<Option<mfa_factor::Model>, sea_orm::DbErr> {
    of_user(conn, user_id).one(conn.conn()).await
}

fn of_user(conn: &impl TenantConn, user_id: Uuid) -> Select<mfa_factor::Entity> {
    conn.find::<mfa_factor::Entity>()
        .filter(mfa_factor::Column::UserId.eq(user_id))
        .filter(mfa_factor::Column::Kind.eq(KIND))
}

/// The user's active factor, as a query: a sign-in asks whether it exists
/// (it then needs the factor).
pub fn active_of(conn: &impl TenantConn, user_id: Uuid) -> SelectStatement {
    of_user(conn, user_id).filter(mfa_factor::Column::Status.eq(ACTIVE)).into_query()
}

/// Starts (or restarts) enrolment with a new secret; an active factor must
/// be removed first.
pub async fn start(
    scope: &TenantScope,
    master_key: &MasterKey,
    user_id: Uuid,
    account: &str,
) -> Result<Enrolment, SecondFactorError> {
    let mut txn = scope.begin().await?;
    if let Some(existing) = find(&txn, user_id).await? {
        if existing.status == ACTIVE {
            return Err(SecondFactorError::AlreadyEnrolled);
        }
        txn.delete::<mfa_factor::Entity>(mfa_factor::Column::Id.eq(existing.id)).await?;
    }
    let mut secret = vec![0u8; 20];
    OsRng.fill_bytes(&mut secret);
    let application_id = scope.tenant().id;
    let sealed = seal::seal(master_key, &context(application_id, user_id), &secret);
    let now = crate::clock::now();
    let row = mfa_factor::Model {
        id: Uuid::now_v7(),
        application_id,
        user_id,
        kind: KIND.into(),
        secret_sealed: sealed,
        status: PENDING.into(),
        last_used_step: None,
        created_at: now,
        confirmed_at: None,
    };
    txn.insert(row.into_active_model()).await?;
    txn.audit(EventType::MfaEnrollmentStarted, Some(user_id), json!({"kind": KIND})).await?;
    txn.commit().await?;
    // The issuer is the application's name; `:` separates issuer and account in the label.
    let issuer = scope.tenant().name.replace(':', " ");
    let totp = generator(secret, Some(issuer), account.replace(':', " "));
    Ok(Enrolment { otpauth_uri: totp.get_url(), secret: totp.get_secret_base32() })
}

/// Confirms the pending factor with a first code; answers the ten recovery
/// codes (shown this once).
pub async fn confirm(
    scope: &TenantScope,
    master_key: &MasterKey,
    user_id: Uuid,
    code: &str,
) -> Result<Vec<String>, SecondFactorError> {
    let mut txn = scope.begin().await?;
    let factor = find(&txn, user_id).await?.filter(|f| f.status == PENDING).ok_or(SecondFactorError::NotEnrolling)?;
    let secret = open_secret(master_key, &factor)?;
    let step = matching_step(&secret, code, crate::clock::now().timestamp()).ok_or(SecondFactorError::WrongCode)?;
    let confirmed = txn
        .update_many(|q: UpdateMany<mfa_factor::Entity>| {
            q.col_expr(mfa_factor::Column::Status, Expr::value(ACTIVE))
                .col_expr(mfa_factor::Column::ConfirmedAt, Expr::value(crate::clock::now()))
                .col_expr(mfa_factor::Column::LastUsedStep, Expr::value(step))
                .filter(mfa_factor::Column::Id.eq(factor.id))
                .filter(mfa_factor::Column::Status.eq(PENDING))
        })
        .await?;
    if confirmed == 0 {
        return Err(SecondFactorError::NotEnrolling);
    }
    let codes = recovery::replace(&mut txn, master_key, user_id).await?;
    txn.audit(EventType::MfaEnrolled, Some(user_id), json!({"kind": KIND, "recovery_codes": codes.len()})).await?;
    txn.commit().await?;
    Ok(codes)
}

/// Takes a code for the user's active factor, once: the step it matches
/// must be newer than every step accepted before.
pub async fn accept_code(
    txn: &mut TenantTxn,
    master_key: &MasterKey,
    user_id: Uuid,
    code: &str,
) -> Result<bool, SecondFactorError> {
    let Some(factor) = find(&*txn, user_id).await?.filter(|f| f.status == ACTIVE) else {
        return Ok(false);
    };
    let secret = open_secret(master_key, &factor)?;
    let Some(step) = matching_step(&secret, code, crate::clock::now().timestamp()) else {
        return Ok(false);
    };
    let taken = txn
        .update_many(|q: UpdateMany<mfa_factor::Entity>| {
            q.col_expr(mfa_factor::Column::LastUsedStep, Expr::value(step))
                .filter(mfa_factor::Column::Id.eq(factor.id))
                .filter(
                    Condition::any()
                        .add(mfa_factor::Column::LastUsedStep.is_null())
                        .add(mfa_factor::Column::LastUsedStep.lt(step)),
                )
        })
        .await?;
    Ok(taken == 1)
}

/// Removes the user's factor and recovery codes; only from a session that
/// proved a second factor in the last minutes.
pub async fn remove(scope: &TenantScope, session: &session::Model) -> Result<(), SecondFactorError> {
    super::require_fresh_aal2(session)?;
    let mut txn = scope.begin().await?;
    let user_id = session.user_id;
    let removed = txn
        .delete::<mfa_factor::Entity>(
            Condition::all().add(mfa_factor::Column::UserId.eq(user_id)).add(mfa_factor::Column::Kind.eq(KIND)),
        )
        .await?;
    if removed == 0 {
        return Err(SecondFactorError::NotEnrolled);
    }
    txn.delete::<recovery_code::Entity>(recovery_code::Column::UserId.eq(user_id)).await?;
    txn.audit(EventType::MfaRemoved, Some(user_id), json!({"kind": KIND})).await?;
    txn.commit().await?;
    Ok(())
}

fn open_secret(master_key: &MasterKey, factor: &mfa_factor::Model) -> Result<Vec<u8>, SecondFactorError> {
    seal::open(master_key, &context(factor.application_id, factor.user_id), &factor.secret_sealed)
        .map_err(|_| SecondFactorError::SecretUnreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6238_sha1_test_vectors_match_with_one_step_of_drift() {
        // RFC 6238 appendix B: the 20-byte ASCII secret, 8 digits there; the
        // last 6 digits are the 6-digit code of the same step.
        let secret = b"12345678901234567890";
        for (time, eight) in
            [(59, "94287082"), (1111111109, "07081804"), (1234567890, "89005924"), (2000000000, "69279037")]
        {
            let code = &eight[2..];
            assert_eq!(matching_step(secret, code, time), Some(time / 30), "at {time}");
            assert_eq!(matching_step(secret, code, time + 30), Some(time / 30), "one step late");
            assert_eq!(matching_step(secret, code, time + 90), None, "three steps late");
        }
        assert_eq!(matching_step(secret, "28708", 59), None);
        assert_eq!(matching_step(secret, "2870a2", 59), None);
    }
}
