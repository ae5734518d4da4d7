//! Application secret keys: issue, list, find, revoke.
use chrono::{DateTime, Duration, Utc};
use entity::api_key;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

mod cache;
pub mod http;
pub mod view;
pub use cache::{Authenticated, KeyCache};

use super::{
    unless_unique,
    validate::{is_scope, Invalid, Issues},
};
use crate::{
    crypto::{key_format, sha256},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope, TenantTxn, Unaudited},
};

pub const MAX_SCOPES: usize = 50;

/// The scope that implies every other: what operations 3, 9, 11 and 17,
/// key revocation and signing-key rotation require themselves.
pub const ADMIN_SCOPE: &str = "admin";

/// What went wrong with an application's secret key.
#[derive(Debug, thiserror::Error)]
pub enum ApiKeyError {
    #[error("API key `{0}` not found")]
    NotFound(Uuid),
    /// Active keys' names are unique within the application.
    #[error("an active key named `{0}` already exists")]
    NameTaken(String),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ApiKeyError> for ApiError {
    fn from(err: ApiKeyError) -> Self {
        match err {
            ApiKeyError::NotFound(id) => ApiError::not_found("API key", id),
            ApiKeyError::NameTaken(name) => {
                ApiError::new(Code::Conflict, format!("An active key named `{name}` already exists."))
            }
            ApiKeyError::Invalid(err) => err.into(),
            ApiKeyError::Limit(err) => err.into(),
            ApiKeyError::Db(err) => err.into(),
        }
    }
}

/// A validated request for a new key.
pub struct NewApiKey {
    pub name: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl NewApiKey {
    pub fn parse(name: &str, scopes: Option<Vec<String>>, expires_in_days: Option<i64>) -> Result<NewApiKey, Invalid> {
        let mut issues = Issues::default();
        let name = issues.text("name", name, 255);
        let mut scopes = scopes.unwrap_or_default();
        if scopes.len() > MAX_SCOPES {
            issues.add("scopes", format!("at most {MAX_SCOPES} scopes"));
        }
        if let Some(bad) = scopes.iter().find(|s| !is_scope(s)) {
            issues.add("scopes", format!("`{}` is not a scope name", bad.escape_debug()));
        }
        scopes.sort();
        scopes.dedup();
        let expires_at = match expires_in_days {
            None => None,
            Some(days @ 1..=3650) => Some(crate::clock::now() + Duration::days(days)),
            Some(_) => {
                issues.add("expires_in_days", "must be between 1 and 3650, or null");
                None
            }
        };
        issues.finish()?;
        Ok(NewApiKey { name, scopes, expires_at })
    }
}

/// A key just issued, with its secret (shown once).
pub struct Issued {
    pub key: api_key::Model,
    pub secret: String,
}

/// Inserts a key and its audit row in the caller's transaction.
pub async fn insert(txn: &mut TenantTxn, live: bool, new: &NewApiKey) -> Result<Issued, ApiKeyError> {
    let secret = key_format::generate(key_format::KeyKind::Secret, live);
    let key = api_key::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name: new.name.clone(),
        prefix: key_format::display_prefix(&secret),
        secret_hash: sha256(&secret).to_vec(),
        scopes: json!(new.scopes),
        expires_at: new.expires_at,
        created_at: crate::clock::now(),
        last_used_at: None,
        revoked_at: None,
    };
    txn.insert(api_key::ActiveModel::from(key.clone()))
        .await
        .map_err(unless_unique(ApiKeyError::NameTaken(new.name.clone())))?;
    txn.audit(
        EventType::ApiKeyCreated,
        Some(key.id),
        json!({"name": key.name, "prefix": key.prefix, "scopes": new.scopes, "expires_at": key.expires_at}),
    )
    .await?;
    Ok(Issued { key, secret })
}

/// Issues a key, within the application's limit of active keys.
pub async fn create(scope: &TenantScope, new: &NewApiKey, max_active: u64) -> Result<Issued, ApiKeyError> {
    let mut txn = scope.begin().await?;
    txn.reserve(Limit { max: max_active, what: "active keys", field: "name" }, only_active).await?;
    let issued = insert(&mut txn, scope.tenant().environment.is_live(), new).await?;
    txn.commit().await?;
    Ok(issued)
}

/// A key (of any kind) works until it is revoked or its expiry passes.
pub fn is_usable(revoked_at: Option<DateTime<Utc>>, expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    revoked_at.is_none() && expires_at.is_none_or(|at| at > now)
}

/// Scopes as stored: a JSON array of strings (of any kind of key).
pub fn scope_list(stored: &serde_json::Value) -> impl Iterator<Item = String> + '_ {
    stored.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned))
}

fn only_active(keys: sea_orm::Select<api_key::Entity>) -> sea_orm::Select<api_key::Entity> {
    keys.filter(api_key::Column::RevokedAt.is_null())
        .filter(api_key::Column::ExpiresAt.is_null().or(api_key::Column::ExpiresAt.gt(Utc::now())))
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<api_key::Model>, bool), DbErr> {
    page.fetch(
        db.find::<api_key::Entity>().order_by_desc(api_key::Column::CreatedAt).order_by_desc(api_key::Column::Id),
        db.conn(),
    )
    .await
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<api_key::Model, ApiKeyError> {
    find_optional(db, id).await?.ok_or(ApiKeyError::NotFound(id))
}

pub async fn find_optional(db: &impl TenantConn, id: Uuid) -> Result<Option<api_key::Model>, DbErr> {
    db.find_by_id::<api_key::Entity>(id).one(db.conn()).await
}

pub async fn find_by_hash(db: &impl TenantConn, hash: &[u8]) -> Result<Option<api_key::Model>, DbErr> {
    db.find::<api_key::Entity>().filter(api_key::Column::SecretHash.eq(hash.to_vec())).one(db.conn()).await
}

/// Revokes a key; revoking a revoked key answers it unchanged. The key
/// stops working at once here and, through the bus, on every node.
pub async fn revoke(scope: &TenantScope, keys: &KeyCache, id: Uuid) -> Result<api_key::Model, ApiKeyError> {
    let mut txn = scope.begin().await?;
    let mut key = find(&txn, id).await?;
    if key.revoked_at.is_some() {
        return Ok(key);
    }
    let now = crate::clock::now();
    if !txn.revoke::<api_key::Entity>(id, now).await? {
        // Another request revoked it first: answer the key as it is now.
        drop(txn);
        return find(scope, id).await;
    }
    txn.audit(EventType::ApiKeyRevoked, Some(id), json!({"name": key.name, "prefix": key.prefix})).await?;
    txn.commit().await?;
    key.revoked_at = Some(now);
    keys.forget(&key).await;
    Ok(key)
}

/// Records when a key was last used. Off the request path, at most once a
/// minute per key (the caller decides when).
pub async fn touch(scope: &TenantScope, id: Uuid, at: DateTime<Utc>) -> Result<(), DbErr> {
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::KeyLastUsed);
    txn.update_many(|q: UpdateMany<api_key::Entity>| {
        q.col_expr(api_key::Column::LastUsedAt, Expr::value(at)).filter(api_key::Column::Id.eq(id))
    })
    .await?;
    txn.commit().await
}
