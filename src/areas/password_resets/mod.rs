//! Password reset: a user who forgot a password asks for a reset by email
//! ([`request`]) and sets a new password with the token it received
//! ([`reset`]). The request answers the same, after the same work, whether
//! or not the email is a user's: it queues one mail (`mail_queue`), and
//! the lookup, the token and the email happen in the mail worker. Tokens are 256 random bits, stored
//! hashed, valid 30 minutes, used once; a new one supersedes the user's
//! older ones. A reset revokes every session of the user.
pub mod http;

use chrono::Duration;
use entity::{password_reset, user};
use sea_orm::{sea_query::Expr, ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    mail_queue::{self, Mail},
    mailer::Message,
    sessions,
    users::{self, UserError},
    validate::{Invalid, Issues},
};
use crate::{
    audit::Actor,
    crypto::{
        master_key::MasterKey,
        password::{PasswordError, PasswordHasher},
        sha256,
    },
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

pub const TOKEN_TTL_MINUTES: i64 = 30;

#[derive(Debug, thiserror::Error)]
pub enum PasswordResetError {
    /// Unknown, expired, used or superseded: one answer for each.
    #[error("the reset token is unknown, expired or already used")]
    InvalidToken,
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Password(#[from] PasswordError),
    #[error(transparent)]
    User(#[from] UserError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<PasswordResetError> for ApiError {
    fn from(err: PasswordResetError) -> Self {
        match err {
            PasswordResetError::InvalidToken => ApiError::new(
                Code::InvalidGrant,
                "The reset token is unknown, expired or already used: ask for a new one.",
            ),
            PasswordResetError::Invalid(invalid) => invalid.into(),
            PasswordResetError::Password(err) => err.into(),
            PasswordResetError::User(err) => err.into(),
            PasswordResetError::Db(err) => err.into(),
        }
    }
}

/// Queues the reset before the answer: the same row whether or not the
/// email is a user's, so the answer and its work are the same either way;
/// the mail worker looks the email up and makes and sends a token only
/// for a user's.
pub async fn request(
    scope: &TenantScope,
    master_key: &MasterKey,
    email: String,
    redirect_uri: Option<String>,
) -> Result<(), DbErr> {
    mail_queue::queue_alone(scope, master_key, &Mail::PasswordReset { email, redirect_uri }).await
}

/// Makes a token for the user and the message that carries it, in the
/// mail worker's transaction: the user's older tokens stop working, the
/// newest email is the one.
pub async fn issue(
    txn: &mut TenantTxn,
    application: &str,
    user: &user::Model,
    redirect_uri: Option<&str>,
) -> Result<Message, DbErr> {
    let token = crate::oauth::random_token(32);
    let now = crate::clock::now();
    txn.update_many(|q: UpdateMany<password_reset::Entity>| {
        q.col_expr(password_reset::Column::UsedAt, Expr::value(now))
            .filter(password_reset::Column::UserId.eq(user.id))
            .filter(password_reset::Column::UsedAt.is_null())
    })
    .await?;
    let row = password_reset::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        user_id: user.id,
        token_hash: sha256(&token).to_vec(),
        expires_at: now + Duration::minutes(TOKEN_TTL_MINUTES),
        used_at: None,
        created_at: now,
    };
    txn.insert(row.clone().into_active_model()).await?;
    txn.audit(EventType::UserPasswordResetRequested, Some(user.id), json!({"reset_id": row.id})).await?;
    let how = match redirect_uri.and_then(|uri| url::Url::parse(uri).ok()) {
        Some(mut link) => {
            link.query_pairs_mut().append_pair("token", &token);
            format!("Open this link within {TOKEN_TTL_MINUTES} minutes to choose a new password:\n\n{link}")
        }
        None => format!("Use this code within {TOKEN_TTL_MINUTES} minutes to choose a new password:\n\n{token}"),
    };
    let body = format!(
        "Someone asked to reset the password of your account at {application}.\n\n{how}\n\nIf it was not you, ignore this message: your password stays as it is.\n"
    );
    Ok(Message { to: user.email.clone(), subject: format!("Reset your {application} password"), body })
}

/// Sets a new password with a reset token and revokes every session of
/// the user, in one transaction; answers the user and how many sessions
/// ended.
pub async fn reset(
    scope: &TenantScope,
    passwords: &PasswordHasher,
    token: &str,
    password: String,
) -> Result<(user::Model, usize), PasswordResetError> {
    let mut issues = Issues::default();
    users::password(&mut issues, &password);
    issues.finish()?;
    if token.is_empty() || token.len() > 256 {
        return Err(PasswordResetError::InvalidToken);
    }
    let now = crate::clock::now();
    let found = scope
        .find::<password_reset::Entity>()
        .filter(password_reset::Column::TokenHash.eq(sha256(token).to_vec()))
        .one(scope.conn())
        .await?
        .filter(|row| row.used_at.is_none() && row.expires_at > now)
        .ok_or(PasswordResetError::InvalidToken)?;
    let password_hash = passwords.hash(password).await?;
    let mut txn = scope.acting_as(Actor::user(found.user_id)).begin().await?;
    // Of two resets with one token, one wins.
    let taken = txn
        .update_many(|q: UpdateMany<password_reset::Entity>| {
            q.col_expr(password_reset::Column::UsedAt, Expr::value(now))
                .filter(password_reset::Column::Id.eq(found.id))
                .filter(password_reset::Column::UsedAt.is_null())
        })
        .await?;
    let user = match txn.find_by_id::<user::Entity>(found.user_id).one(txn.conn()).await? {
        Some(user) if taken == 1 => user,
        _ => return Err(PasswordResetError::InvalidToken),
    };
    let mut changed = user.clone().into_active_model();
    changed.password_hash = Set(Some(password_hash));
    changed.updated_at = Set(now);
    let user = txn.update(changed).await?;
    let revoked = sessions::revoke_all_of_user_in(&mut txn, user.id, "password_reset").await?;
    txn.audit(EventType::UserPasswordReset, Some(user.id), json!({"reset_id": found.id, "sessions_revoked": revoked}))
        .await?;
    txn.commit().await?;
    Ok((user, revoked))
}
