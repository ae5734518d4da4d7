//! End users: created by sign-up or with a secret key, listed, changed and
//! deleted. Emails are unique per application, compared in one normal form
//! ([`normalize_email`]).
pub mod export;
pub mod http;
pub mod imports;
pub mod view;

use entity::{
    email_verification, hosted_login, invitation, membership, messaging_outbox, mfa_challenge, mfa_factor, oauth_code,
    oauth_consent, oauth_flow, passkey, passkey_ceremony, password_reset, recovery_code, refresh_token, session, user,
    user_api_key, user_identity,
};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::{profile_fields, unless_unique, validate::Issues};
use crate::{
    audit::personal::{self, Subject},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope, TenantTxn},
};

pub const MIN_PASSWORD: usize = 8;
pub const MAX_PASSWORD: usize = 256;

/// What went wrong with an end user.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("user `{0}` not found")]
    NotFound(Uuid),
    /// Emails (in their normal form) are unique within the application.
    #[error("a user with this email already exists")]
    EmailTaken,
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<UserError> for ApiError {
    fn from(err: UserError) -> Self {
        match err {
            UserError::NotFound(id) => ApiError::not_found("User", id),
            UserError::EmailTaken => ApiError::new(Code::Conflict, "A user with this email already exists."),
            UserError::Db(err) => err.into(),
        }
    }
}

/// The stored (and compared) form of an email, the one way every entry
/// point reads one: Unicode NFKC (so `ｕ1@example.com` is `u1@example.com`),
/// trimmed, the local part lower-cased, the domain through IDNA (UTS 46) to
/// its ASCII form (`bücher.example` is `xn--bcher-kva.example`). `None`:
/// it does not normalise (no `@`, a domain IDNA refuses).
pub fn normalize_email(raw: &str) -> Option<String> {
    use unicode_normalization::UnicodeNormalization;
    let nfkc: String = raw.trim().nfkc().collect();
    let (local, domain) = nfkc.rsplit_once('@')?;
    let domain = idna::domain_to_ascii(domain).ok().filter(|d| !d.is_empty())?;
    Some(format!("{}@{domain}", local.to_lowercase()))
}

/// The stored form of an email, or an issue named `email`.
pub fn email(issues: &mut Issues, raw: &str) -> String {
    match normalize_email(raw).filter(|email| profile_fields::is_email(email)) {
        Some(email) => email,
        None => {
            issues.add("email", "must be an email address");
            raw.to_string()
        }
    }
}

pub fn password(issues: &mut Issues, raw: &str) {
    let length = raw.chars().count();
    if !(MIN_PASSWORD..=MAX_PASSWORD).contains(&length) {
        issues.add("password", format!("must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"));
    }
}

/// Checks a profile (absent: empty) against the application's schema.
pub async fn profile(
    db: &impl TenantConn,
    issues: &mut Issues,
    profile: Option<Value>,
) -> Result<Map<String, Value>, DbErr> {
    let profile = match profile {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            issues.add("profile", "must be a JSON object");
            return Ok(Map::new());
        }
    };
    let schema = profile_fields::schema(db).await?;
    profile_fields::check_profile(&schema, &profile, issues);
    Ok(profile)
}

/// Creates a user (no session).
pub async fn create(
    scope: &TenantScope,
    email: String,
    password_hash: Option<String>,
    profile: Map<String, Value>,
) -> Result<user::Model, UserError> {
    let mut txn = scope.begin().await?;
    let user = insert(&mut txn, email, password_hash, profile).await?;
    txn.commit().await?;
    Ok(user)
}

/// Inserts a user and its `user.created` row in the caller's transaction.
pub async fn insert(
    txn: &mut TenantTxn,
    email: String,
    password_hash: Option<String>,
    profile: Map<String, Value>,
) -> Result<user::Model, UserError> {
    let now = crate::clock::now();
    let user = user::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        email,
        password_hash,
        profile: Value::Object(profile),
        last_sign_in_at: None,
        email_verified_at: None,
        created_at: now,
        updated_at: now,
        external_id: None,
    };
    txn.insert(user::ActiveModel::from(user.clone())).await.map_err(unless_unique(UserError::EmailTaken))?;
    let email = personal::fields([("email", json!(user.email))]);
    txn.audit_personal(EventType::UserCreated, Some(user.id), json!({}), Subject::User(user.id), email).await?;
    Ok(user)
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<user::Model, UserError> {
    db.find_by_id::<user::Entity>(id).one(db.conn()).await?.ok_or(UserError::NotFound(id))
}

pub async fn find_by_email(db: &impl TenantConn, email: &str) -> Result<Option<user::Model>, DbErr> {
    db.find::<user::Entity>().filter(user::Column::Email.eq(email)).one(db.conn()).await
}

pub async fn list(db: &impl TenantConn, email: Option<&str>, page: Page) -> Result<(Vec<user::Model>, bool), DbErr> {
    let mut query = db.find::<user::Entity>();
    if let Some(email) = email {
        // An email that does not normalise matches nobody.
        query = query.filter(user::Column::Email.eq(normalize_email(email).unwrap_or_default()));
    }
    page.fetch(query.order_by_desc(user::Column::CreatedAt).order_by_desc(user::Column::Id), db.conn()).await
}

/// A change to a user; `profile` replaces the whole profile.
#[derive(Default)]
pub struct UserPatch {
    pub email: Option<String>,
    pub password_hash: Option<String>,
    pub profile: Option<Map<String, Value>>,
}

pub async fn update(scope: &TenantScope, id: Uuid, patch: UserPatch) -> Result<user::Model, UserError> {
    let mut txn = scope.begin().await?;
    let mut user = find(&txn, id).await?;
    let mut changed = Vec::new();
    let email_changed = patch.email.as_ref().is_some_and(|email| *email != user.email);
    if let Some(email) = patch.email {
        changed.push("email");
        user.email = email;
    }
    if email_changed {
        // A new address is not proven: its owner gets a code (the caller sends it).
        user.email_verified_at = None;
        txn.update_many(|q: UpdateMany<session::Entity>| {
            q.col_expr(session::Column::EmailVerified, Expr::value(false)).filter(session::Column::UserId.eq(id))
        })
        .await?;
        // Codes sent to the old address prove nothing about the new one.
        txn.update_many(|q: UpdateMany<entity::email_verification::Entity>| {
            q.col_expr(entity::email_verification::Column::UsedAt, Expr::value(crate::clock::now()))
                .filter(entity::email_verification::Column::UserId.eq(id))
                .filter(entity::email_verification::Column::UsedAt.is_null())
        })
        .await?;
    }
    if let Some(hash) = patch.password_hash {
        changed.push("password");
        user.password_hash = Some(hash);
    }
    if let Some(profile) = patch.profile {
        changed.push("profile");
        user.profile = Value::Object(profile);
    }
    user.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<user::Entity>| {
        q.col_expr(user::Column::Email, Expr::value(user.email.clone()))
            .col_expr(user::Column::PasswordHash, Expr::value(user.password_hash.clone()))
            .col_expr(user::Column::Profile, Expr::value(user.profile.clone()))
            .col_expr(user::Column::EmailVerifiedAt, Expr::value(user.email_verified_at))
            .col_expr(user::Column::UpdatedAt, Expr::value(user.updated_at))
            .filter(user::Column::Id.eq(id))
    })
    .await
    .map_err(unless_unique(UserError::EmailTaken))?;
    txn.audit(EventType::UserUpdated, Some(id), json!({"changed": changed})).await?;
    txn.commit().await?;
    Ok(user)
}

/// What erasing a user removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Erasure {
    /// Rows deleted, the user's own included.
    pub rows_deleted: u64,
    /// Keys destroyed that sealed their personal data in audit rows.
    pub keys_destroyed: u64,
}

/// Erases a user (GDPR Art. 17): deletes every row that is theirs, which
/// are their sessions (and so every refresh token and hosted-pages
/// sign-in), memberships, personal keys, identities, second factors
/// (TOTP, recovery codes, passkeys), pending codes, ceremonies and
/// authorization codes, the invitations and kept messages to their address
/// and the mail queued for them; and destroys the keys that sealed their
/// personal data in audit rows ([`personal`]: theirs, and their address's
/// from before they signed up). The audit chain keeps every row and still
/// verifies; those rows read as erased. `user.deleted` says what went, not
/// who.
pub async fn delete(scope: &TenantScope, id: Uuid) -> Result<Erasure, UserError> {
    let mut txn = scope.begin().await?;
    let user = find(&txn, id).await?;
    let sessions: Vec<Uuid> = txn
        .find::<session::Entity>()
        .filter(session::Column::UserId.eq(id))
        .all(txn.conn())
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut rows = 0;
    rows += txn.delete::<refresh_token::Entity>(refresh_token::Column::SessionId.is_in(sessions.clone())).await?;
    rows += txn.delete::<hosted_login::Entity>(hosted_login::Column::SessionId.is_in(sessions)).await?;
    rows += txn.delete::<session::Entity>(session::Column::UserId.eq(id)).await?;
    rows += txn.delete::<membership::Entity>(membership::Column::UserId.eq(id)).await?;
    rows += txn.delete::<user_api_key::Entity>(user_api_key::Column::UserId.eq(id)).await?;
    rows += txn.delete::<user_identity::Entity>(user_identity::Column::UserId.eq(id)).await?;
    rows += txn.delete::<oauth_flow::Entity>(oauth_flow::Column::UserId.eq(id)).await?;
    rows += txn.delete::<oauth_code::Entity>(oauth_code::Column::UserId.eq(id)).await?;
    rows += txn.delete::<oauth_consent::Entity>(oauth_consent::Column::UserId.eq(id)).await?;
    rows += txn.delete::<password_reset::Entity>(password_reset::Column::UserId.eq(id)).await?;
    rows += txn.delete::<email_verification::Entity>(email_verification::Column::UserId.eq(id)).await?;
    rows += txn.delete::<mfa_factor::Entity>(mfa_factor::Column::UserId.eq(id)).await?;
    rows += txn.delete::<recovery_code::Entity>(recovery_code::Column::UserId.eq(id)).await?;
    rows += txn.delete::<mfa_challenge::Entity>(mfa_challenge::Column::UserId.eq(id)).await?;
    rows += txn.delete::<passkey::Entity>(passkey::Column::UserId.eq(id)).await?;
    rows += txn.delete::<passkey_ceremony::Entity>(passkey_ceremony::Column::UserId.eq(id)).await?;
    rows += txn.delete::<invitation::Entity>(invitation::Column::Email.eq(user.email.clone())).await?;
    rows += txn.delete::<messaging_outbox::Entity>(messaging_outbox::Column::Recipient.eq(user.email.clone())).await?;
    rows += crate::areas::mail_queue::forget(&mut txn, id, &user.email).await?;
    rows += crate::areas::scim::records::forget_user(&mut txn, id).await?;
    rows += txn.delete::<user::Entity>(user::Column::Id.eq(id)).await?;
    let subjects = [Subject::User(id), Subject::Email(&user.email)];
    let keys_destroyed = txn.erase_personal_data(&subjects).await?;
    let erasure = Erasure { rows_deleted: rows, keys_destroyed };
    txn.audit(EventType::UserDeleted, Some(id), json!(erasure)).await?;
    txn.commit().await?;
    // The deleted rows' bytes leave SQLite's write-ahead log too.
    scope.checkpoint().await;
    Ok(erasure)
}

/// Replaces the user's password hash with `hash` if it is still
/// `previous`, in the caller's transaction; answers whether it was.
pub async fn replace_password_hash(
    txn: &mut TenantTxn,
    id: Uuid,
    previous: Option<&str>,
    hash: String,
) -> Result<bool, DbErr> {
    let replaced = txn
        .update_many(|q: UpdateMany<user::Entity>| {
            q.col_expr(user::Column::PasswordHash, Expr::value(hash))
                .filter(user::Column::Id.eq(id))
                .filter(user::Column::PasswordHash.eq(previous))
        })
        .await?;
    Ok(replaced == 1)
}

/// Records a successful sign-in, in the caller's transaction; false when
/// the user no longer exists.
pub async fn touch_sign_in(txn: &mut TenantTxn, id: Uuid, at: chrono::DateTime<chrono::Utc>) -> Result<bool, DbErr> {
    let touched = txn
        .update_many(|q: UpdateMany<user::Entity>| {
            q.col_expr(user::Column::LastSignInAt, Expr::value(at)).filter(user::Column::Id.eq(id))
        })
        .await?;
    Ok(touched == 1)
}

#[cfg(test)]
mod tests {
    use super::normalize_email;

    #[test]
    fn emails_have_one_normal_form() {
        for (raw, normal) in [
            ("u1@example.com", Some("u1@example.com")),
            ("ｕ1@example.com", Some("u1@example.com")),
            (" U1@ＥＸＡＭＰＬＥ.com ", Some("u1@example.com")),
            ("anna@Bücher.example", Some("anna@xn--bcher-kva.example")),
            ("Ä@example.com", Some("ä@example.com")),
            ("a＠example.com", Some("a@example.com")),
            ("no-at-sign", None),
            ("a@", None),
            ("a@exa\u{FFFD}mple.com", None),
        ] {
            assert_eq!(normalize_email(raw).as_deref(), normal, "{raw}");
        }
    }
}
