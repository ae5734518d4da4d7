//! The second step of a sign-in: a user with an active factor who proved a
//! first factor gets a challenge (`mfa_` and 256 random bits, kept as its
//! SHA-256, 5 minutes) instead of a session; a TOTP code or a recovery code
//! or a passkey against it opens the session at `aal2`. Each try is counted before it is
//! compared (five per challenge, however many arrive at once); a wrong one
//! is audited `mfa.challenge_failed`; the challenge is used once.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chrono::Duration;
use entity::{mfa_challenge, user};
use rand::{rngs::OsRng, RngCore};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{Proof, Proved, SecondFactorError};
use crate::{
    areas::{
        sessions::{self, Opened},
        sso_connections, users,
    },
    audit::Actor,
    crypto::{master_key::MasterKey, sha256},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope},
};

pub const TTL_MINUTES: i64 = 5;
pub const MAX_ATTEMPTS: i32 = 5;
const PREFIX: &str = "mfa_";

/// A challenge just made: the token (shown once) and its lifetime.
pub struct Issued {
    pub challenge: String,
    pub expires_in: i64,
    /// What can complete it: `totp`, `recovery_code`, `passkey`.
    pub factors: Vec<&'static str>,
}

/// Makes a challenge for a user whose first factor (`method`: `password`,
/// or `oauth` with its `provider`) was proven and who has `factors`.
pub async fn issue(
    scope: &TenantScope,
    user_id: Uuid,
    method: &str,
    provider: Option<&str>,
    factors: Vec<&'static str>,
) -> Result<Issued, DbErr> {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let challenge = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let now = crate::clock::now();
    let row = mfa_challenge::Model {
        id: Uuid::now_v7(),
        application_id: scope.tenant().id,
        user_id,
        token_hash: sha256(&challenge).to_vec(),
        method: method.into(),
        provider: provider.map(str::to_string),
        attempts: 0,
        expires_at: now + Duration::minutes(TTL_MINUTES),
        used_at: None,
        created_at: now,
    };
    let mut txn = scope.begin().await?;
    txn.insert(row.into_active_model()).await?;
    let mut data = json!({"method": method, "factors": factors});
    if let Some(provider) = provider {
        data["provider"] = json!(provider);
    }
    txn.audit(EventType::SignInChallenged, Some(user_id), data).await?;
    txn.commit().await?;
    Ok(Issued { challenge, expires_in: TTL_MINUTES * 60, factors })
}

/// The user a live challenge is for (to limit tries per user); reads only.
pub async fn user_of(scope: &TenantScope, challenge: &str) -> Result<Option<Uuid>, DbErr> {
    let found = scope
        .find::<mfa_challenge::Entity>()
        .filter(mfa_challenge::Column::TokenHash.eq(sha256(challenge).to_vec()))
        .filter(mfa_challenge::Column::UsedAt.is_null())
        .one(scope.conn())
        .await?;
    Ok(found.map(|c| c.user_id))
}

/// A completed sign-in: the user, the new `aal2` session, the first
/// factor's method (`password` or `oauth`) and the factor that proved the
/// second step (`totp`, `recovery_code` or `passkey`).
pub struct Completed {
    pub user: user::Model,
    pub opened: Opened,
    pub method: String,
    pub factor: &'static str,
}

/// Completes a challenge with a code or a passkey: the try counted, the
/// proof taken once, the challenge used and the session opened, in one
/// transaction.
pub async fn complete(
    scope: &TenantScope,
    master_key: &MasterKey,
    challenge: &str,
    proof: &Proof,
    session_ttl: Duration,
) -> Result<Completed, SecondFactorError> {
    let hash = sha256(challenge).to_vec();
    let now = crate::clock::now();
    let mut txn = scope.begin().await?;
    let counted = txn
        .update_many_returning(|q: UpdateMany<mfa_challenge::Entity>| {
            q.col_expr(mfa_challenge::Column::Attempts, Expr::col(mfa_challenge::Column::Attempts).add(1))
                .filter(mfa_challenge::Column::TokenHash.eq(hash))
                .filter(mfa_challenge::Column::UsedAt.is_null())
                .filter(mfa_challenge::Column::ExpiresAt.gt(now))
                .filter(mfa_challenge::Column::Attempts.lt(MAX_ATTEMPTS))
        })
        .await?;
    let Some(counted) = counted.into_iter().next() else {
        return Err(SecondFactorError::InvalidChallenge);
    };
    let user_id = counted.user_id;
    let factor = match super::prove(&mut txn, scope.tenant(), master_key, user_id, proof).await? {
        Proved::Factor(factor) => factor,
        Proved::Not { reason } => {
            let attempts = json!({"method": counted.method, "attempts": counted.attempts, "attempts_left": MAX_ATTEMPTS - counted.attempts});
            txn.audit(EventType::MfaChallengeFailed, Some(user_id), Proved::failure(reason, attempts)).await?;
            txn.commit().await?;
            return Err(SecondFactorError::InvalidCode);
        }
    };
    let used = txn
        .update_many(|q: UpdateMany<mfa_challenge::Entity>| {
            q.col_expr(mfa_challenge::Column::UsedAt, Expr::value(now))
                .filter(mfa_challenge::Column::Id.eq(counted.id))
                .filter(mfa_challenge::Column::UsedAt.is_null())
        })
        .await?;
    let user = txn.find_by_id::<user::Entity>(user_id).one(txn.conn()).await?;
    let Some(user) = user.filter(|_| used == 1) else {
        return Err(SecondFactorError::InvalidChallenge);
    };
    users::touch_sign_in(&mut txn, user_id, now).await?;
    let verified = user.email_verified_at.is_some();
    let sso = match &counted.provider {
        Some(provider) => sso_connections::records::session_of(&txn, provider, "sso mfa").await?,
        None => None,
    };
    let opened = match sso {
        Some(sso) => sessions::open_for_sso(&mut txn, user_id, verified, "aal2", session_ttl, sso).await?,
        None => sessions::open(&mut txn, user_id, verified, "aal2", session_ttl).await?,
    };
    let mut data = json!({"session_id": opened.session.id, "method": counted.method, "second_factor": factor});
    if let Some(provider) = &counted.provider {
        data["provider"] = json!(provider);
    }
    txn.audit_as(&Actor::user(user_id), EventType::SignInSucceeded, Some(user_id), data).await?;
    txn.commit().await?;
    let method = counted.method;
    Ok(Completed { user: user::Model { last_sign_in_at: Some(now), ..user }, opened, method, factor })
}
