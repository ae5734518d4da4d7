//! End users' personal API keys (operation 7, list, revoke) and the
//! verification of user keys for the application's backend.
pub mod http;

use entity::user_api_key;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::api_keys::NewApiKey;
use crate::{
    crypto::{key_format, sha256},
    error::ApiError,
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope, Unaudited},
};

/// What went wrong with an end user's personal key.
#[derive(Debug, thiserror::Error)]
pub enum PersonalKeyError {
    /// Absent, or another user's.
    #[error("personal key `{0}` not found")]
    NotFound(Uuid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<PersonalKeyError> for ApiError {
    fn from(err: PersonalKeyError) -> Self {
        match err {
            PersonalKeyError::NotFound(id) => ApiError::not_found("API key", id),
            PersonalKeyError::Limit(err) => err.into(),
            PersonalKeyError::Db(err) => err.into(),
        }
    }
}

fn of_user(db: &impl TenantConn, user_id: Uuid) -> sea_orm::Select<user_api_key::Entity> {
    db.find::<user_api_key::Entity>().filter(user_api_key::Column::UserId.eq(user_id))
}

pub async fn create(
    scope: &TenantScope,
    user_id: Uuid,
    live: bool,
    new: &NewApiKey,
    max_active: u64,
) -> Result<(user_api_key::Model, String), PersonalKeyError> {
    let mut txn = scope.begin().await?;
    let limit = Limit { max: max_active, what: "active keys of one user", field: "name" };
    txn.reserve(limit, |keys: sea_orm::Select<user_api_key::Entity>| {
        keys.filter(user_api_key::Column::UserId.eq(user_id)).filter(user_api_key::Column::RevokedAt.is_null())
    })
    .await?;
    let secret = key_format::generate(key_format::KeyKind::User, live);
    let key = user_api_key::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        user_id,
        name: new.name.clone(),
        prefix: key_format::display_prefix(&secret),
        secret_hash: sha256(&secret).to_vec(),
        scopes: json!(new.scopes),
        expires_at: new.expires_at,
        created_at: crate::clock::now(),
        last_used_at: None,
        revoked_at: None,
    };
    txn.insert(user_api_key::ActiveModel::from(key.clone())).await?;
    txn.audit(
        EventType::ApiKeyCreated,
        Some(key.id),
        json!({"kind": "user", "user_id": user_id, "name": key.name, "prefix": key.prefix, "scopes": new.scopes}),
    )
    .await?;
    txn.commit().await?;
    Ok((key, secret))
}

pub async fn list(db: &impl TenantConn, user_id: Uuid, page: Page) -> Result<(Vec<user_api_key::Model>, bool), DbErr> {
    page.fetch(
        of_user(db, user_id).order_by_desc(user_api_key::Column::CreatedAt).order_by_desc(user_api_key::Column::Id),
        db.conn(),
    )
    .await
}

/// Revokes one of the user's keys; another user's key is 404.
pub async fn revoke(scope: &TenantScope, user_id: Uuid, id: Uuid) -> Result<user_api_key::Model, PersonalKeyError> {
    let mut txn = scope.begin().await?;
    let mut key = of_user(&txn, user_id)
        .filter(user_api_key::Column::Id.eq(id))
        .one(txn.conn())
        .await?
        .ok_or(PersonalKeyError::NotFound(id))?;
    if key.revoked_at.is_some() {
        return Ok(key);
    }
    let now = crate::clock::now();
    if !txn.revoke::<user_api_key::Entity>(id, now).await? {
        // Another request revoked it first: answer the key as it is now.
        drop(txn);
        let key = of_user(scope, user_id).filter(user_api_key::Column::Id.eq(id)).one(scope.conn()).await?;
        return key.ok_or(PersonalKeyError::NotFound(id));
    }
    txn.audit(
        EventType::ApiKeyRevoked,
        Some(id),
        json!({"kind": "user", "user_id": user_id, "name": key.name, "prefix": key.prefix}),
    )
    .await?;
    txn.commit().await?;
    key.revoked_at = Some(now);
    Ok(key)
}

/// The usable user key a secret names in this application, if any.
pub async fn verify(db: &impl TenantConn, live: bool, secret: &str) -> Result<Option<user_api_key::Model>, DbErr> {
    if key_format::parse(key_format::KeyKind::User, secret) != Some(live) {
        return Ok(None);
    }
    let now = crate::clock::now();
    let key = db
        .find::<user_api_key::Entity>()
        .filter(user_api_key::Column::SecretHash.eq(sha256(secret).to_vec()))
        .one(db.conn())
        .await?;
    Ok(key.filter(|k| super::api_keys::is_usable(k.revoked_at, k.expires_at, now)))
}

/// Records that a key was presented, at most once a minute per key (judged
/// from the stored value, so across nodes too).
pub async fn touch_if_due(scope: &TenantScope, key: &user_api_key::Model) -> Result<(), DbErr> {
    let now = crate::clock::now();
    if key.last_used_at.is_some_and(|at| now - at < chrono::Duration::seconds(60)) {
        return Ok(());
    }
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::KeyLastUsed);
    txn.update_many(|q: UpdateMany<user_api_key::Entity>| {
        q.col_expr(user_api_key::Column::LastUsedAt, Expr::value(now)).filter(user_api_key::Column::Id.eq(key.id))
    })
    .await?;
    txn.commit().await
}
