//! Email verification: a 6-digit code sent through the application's email
//! provider at sign-up, on a resend, and when a sign-in that requires a
//! verified email is refused. Codes are kept as HMAC-SHA256 under a key
//! derived from the master key (a 6-digit code's plain hash would fall to a
//! million guesses offline), live 15 minutes, are used once, die after 5
//! wrong tries (each try is counted before it is compared, so concurrent
//! guesses cannot exceed 5), and a newer code supersedes the older ones. A
//! user gets at most one code a minute. Proving the code sets the user's
//! `email_verified_at` and the `email_verified` of their sessions, whose
//! tokens carry it from their next refresh.
pub mod http;

use chrono::Duration;
use entity::{email_verification, session, user};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    mail_queue::{self, Mail},
    mailer::Message,
    users,
};
use crate::{
    audit::Actor,
    crypto::{constant_time_eq, master_key::MasterKey},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

pub const CODE_TTL_MINUTES: i64 = 15;
pub const MAX_ATTEMPTS: i32 = 5;
/// At most one code a minute per user: a request sooner sends nothing.
pub const RESEND_AFTER_SECONDS: i64 = 60;

#[derive(Debug, thiserror::Error)]
pub enum EmailVerificationError {
    /// Wrong, expired, used, superseded, tried too often, or no such user:
    /// one answer for each.
    #[error("the code is wrong, expired or used up; ask for a new one")]
    InvalidCode,
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<EmailVerificationError> for ApiError {
    fn from(err: EmailVerificationError) -> Self {
        match err {
            EmailVerificationError::InvalidCode => ApiError::new(
                Code::InvalidGrant,
                "The code is wrong, expired or used up; ask for a new one (POST /v1/auth/email/resend).",
            ),
            EmailVerificationError::Db(err) => err.into(),
        }
    }
}

/// What queues codes: a code is made and sent by the mail worker
/// (`mail_queue`), from a row written before the request answers.
#[derive(Clone, Copy)]
pub struct Codes<'a> {
    pub master_key: &'a MasterKey,
}

fn code_hash(master_key: &MasterKey, user_id: Uuid, code: &str) -> Vec<u8> {
    crate::crypto::user_code_hash(master_key, "email-verification-codes", user_id, code)
}

fn new_code() -> String {
    use rand::Rng;
    format!("{:06}", rand::thread_rng().gen_range(0..1_000_000))
}

impl Codes<'_> {
    /// Queues a new code for the user in the caller's transaction.
    pub async fn queue(&self, txn: &mut TenantTxn, user_id: Uuid) -> Result<(), DbErr> {
        mail_queue::queue(txn, self.master_key, &Mail::VerificationCode { user_id }).await
    }

    /// Queues a new code for the user on its own, before the answer (a
    /// refused sign-in, a changed address).
    pub async fn send(&self, scope: &TenantScope, user_id: Uuid) -> Result<(), DbErr> {
        mail_queue::queue_alone(scope, self.master_key, &Mail::VerificationCode { user_id }).await
    }

    /// A resend asked for by email: the same row whether or not the email
    /// is a user's; the mail worker looks it up and sends only to a user
    /// whose email is not verified yet.
    pub async fn resend(&self, scope: &TenantScope, email: String) -> Result<(), DbErr> {
        mail_queue::queue_alone(scope, self.master_key, &Mail::VerificationResend { email }).await
    }
}

/// Makes a code for the user and the message that carries it, in the mail
/// worker's transaction; none when the email is verified or a code went
/// out in the last minute.
pub async fn issue(
    txn: &mut TenantTxn,
    master_key: &MasterKey,
    application: &str,
    user: &user::Model,
) -> Result<Option<Message>, DbErr> {
    if user.email_verified_at.is_some() {
        return Ok(None);
    }
    let now = crate::clock::now();
    // The newest live code (one superseded by an email change does not count).
    let latest = txn
        .find::<email_verification::Entity>()
        .filter(email_verification::Column::UserId.eq(user.id))
        .filter(email_verification::Column::UsedAt.is_null())
        .order_by_desc(email_verification::Column::CreatedAt)
        .one(txn.conn())
        .await?;
    if latest.is_some_and(|row| row.created_at > now - Duration::seconds(RESEND_AFTER_SECONDS)) {
        return Ok(None);
    }
    let code = new_code();
    supersede(txn, user.id, now).await?;
    let row = email_verification::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        user_id: user.id,
        code_hash: code_hash(master_key, user.id, &code),
        attempts: 0,
        expires_at: now + Duration::minutes(CODE_TTL_MINUTES),
        used_at: None,
        created_at: now,
    };
    txn.insert(row.clone().into_active_model()).await?;
    txn.audit(EventType::UserEmailVerificationSent, Some(user.id), json!({"verification_id": row.id})).await?;
    let body = format!(
        "Your {application} verification code is:\n\n{code}\n\nIt expires in {CODE_TTL_MINUTES} minutes. If you did not sign up, ignore this message.\n"
    );
    Ok(Some(Message { to: user.email.clone(), subject: format!("Verify your email for {application}"), body }))
}

/// The user's unused codes stop working.
async fn supersede(txn: &mut TenantTxn, user_id: Uuid, now: chrono::DateTime<chrono::Utc>) -> Result<u64, DbErr> {
    txn.update_many(|q: UpdateMany<email_verification::Entity>| {
        q.col_expr(email_verification::Column::UsedAt, Expr::value(now))
            .filter(email_verification::Column::UserId.eq(user_id))
            .filter(email_verification::Column::UsedAt.is_null())
    })
    .await
}

/// Marks the user's email verified, with their sessions (in the caller's
/// transaction): by a code, or by a provider that verified it. Whether it
/// was not verified before.
pub async fn mark_verified(txn: &mut TenantTxn, user_id: Uuid, method: &str) -> Result<bool, DbErr> {
    let now = crate::clock::now();
    let changed = txn
        .update_many(|q: UpdateMany<user::Entity>| {
            q.col_expr(user::Column::EmailVerifiedAt, Expr::value(now))
                .filter(user::Column::Id.eq(user_id))
                .filter(user::Column::EmailVerifiedAt.is_null())
        })
        .await?;
    if changed == 0 {
        return Ok(false);
    }
    txn.update_many(|q: UpdateMany<session::Entity>| {
        q.col_expr(session::Column::EmailVerified, Expr::value(true)).filter(session::Column::UserId.eq(user_id))
    })
    .await?;
    txn.audit(EventType::UserEmailVerified, Some(user_id), json!({"method": method})).await?;
    Ok(true)
}

/// Checks a code for an email; answers the user, now verified.
pub async fn verify(
    scope: &TenantScope,
    master_key: &MasterKey,
    email: &str,
    code: &str,
) -> Result<user::Model, EmailVerificationError> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(EmailVerificationError::InvalidCode);
    }
    let user = users::find_by_email(scope, email).await?.ok_or(EmailVerificationError::InvalidCode)?;
    let now = crate::clock::now();
    let mut txn = scope.acting_as(Actor::public()).begin().await?;
    // The try is counted before the code is compared.
    let tried = txn
        .update_many_returning(|q: UpdateMany<email_verification::Entity>| {
            q.col_expr(email_verification::Column::Attempts, Expr::col(email_verification::Column::Attempts).add(1))
                .filter(email_verification::Column::UserId.eq(user.id))
                .filter(email_verification::Column::UsedAt.is_null())
                .filter(email_verification::Column::ExpiresAt.gt(now))
                .filter(email_verification::Column::Attempts.lt(MAX_ATTEMPTS))
        })
        .await?;
    let Some(row) = tried.into_iter().next() else {
        return Err(EmailVerificationError::InvalidCode);
    };
    if !constant_time_eq(&row.code_hash, &code_hash(master_key, user.id, code)) {
        let data = json!({"verification_id": row.id, "attempts": row.attempts});
        txn.audit(EventType::UserEmailVerificationFailed, Some(user.id), data).await?;
        txn.commit().await?;
        return Err(EmailVerificationError::InvalidCode);
    }
    supersede(&mut txn, user.id, now).await?;
    if mark_verified(&mut txn, user.id, "code").await? {
        // The address is proven now: a verified SSO domain of it may join
        // the user to its organization (never at sign-up, when anyone may
        // type any address).
        let policies = super::sod::all(&txn).await?;
        super::sso_domains::auto_join(&mut txn, &policies, user.id, &user.email).await?;
    } else {
        // Verified meanwhile (a provider sign-in): the code is spent all the same.
        txn.audit(EventType::UserEmailVerificationUsed, Some(user.id), json!({"verification_id": row.id})).await?;
    }
    txn.commit().await?;
    Ok(user::Model { email_verified_at: user.email_verified_at.or(Some(now)), ..user })
}
