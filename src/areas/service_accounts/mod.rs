//! Service accounts (operation 14): machine principals of the application
//! and their keys (`sak_…`), which the application's backend resolves at
//! `POST /v1/api-keys/verify`. Keys and accounts are read from the database
//! on every verification (as personal keys are; nothing caches them), so a
//! disabled or deleted account, or a revoked key, is refused at once on
//! every node.
pub mod http;

use chrono::{DateTime, Utc};
use entity::{service_account, service_account_key};
use sea_orm::{
    sea_query::Expr, ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder, UpdateMany,
};
use serde_json::json;
use uuid::Uuid;

use super::{
    api_keys::{is_usable, scope_list, NewApiKey, MAX_SCOPES},
    validate::{is_scope, Invalid, Issues},
};
use crate::{
    clock,
    crypto::{key_format, sha256},
    error::ApiError,
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope, Unaudited},
};

/// What went wrong with a service account or one of its keys.
#[derive(Debug, thiserror::Error)]
pub enum ServiceAccountError {
    #[error("service account `{0}` not found")]
    NotFound(Uuid),
    /// Absent, or another account's.
    #[error("service account key `{0}` not found")]
    KeyNotFound(Uuid),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ServiceAccountError> for ApiError {
    fn from(err: ServiceAccountError) -> Self {
        match err {
            ServiceAccountError::NotFound(id) => ApiError::not_found("Service account", id),
            ServiceAccountError::KeyNotFound(id) => ApiError::not_found("Service account key", id),
            ServiceAccountError::Invalid(err) => err.into(),
            ServiceAccountError::Limit(err) => err.into(),
            ServiceAccountError::Db(err) => err.into(),
        }
    }
}

pub const MAX_NAME: usize = 255;
pub const MAX_DESCRIPTION: usize = 1024;

/// Checked scopes, sorted and without duplicates.
pub fn scopes(issues: &mut Issues, scopes: Vec<String>) -> Vec<String> {
    if scopes.len() > MAX_SCOPES {
        issues.add("scopes", format!("at most {MAX_SCOPES} scopes"));
    }
    if let Some(bad) = scopes.iter().find(|s| !is_scope(s)) {
        issues.add("scopes", format!("`{}` is not a scope name", bad.escape_debug()));
    }
    let mut scopes = scopes;
    scopes.sort();
    scopes.dedup();
    scopes
}

pub struct NewServiceAccount {
    pub name: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub scopes: Vec<String>,
}

#[derive(Default)]
pub struct ServiceAccountPatch {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub scopes: Option<Vec<String>>,
}

/// The scopes of an account, as stored.
pub fn account_scopes(account: &service_account::Model) -> Vec<String> {
    scope_list(&account.scopes).collect()
}

pub async fn create(
    scope: &TenantScope,
    new: NewServiceAccount,
    limit: u64,
) -> Result<service_account::Model, ServiceAccountError> {
    let mut txn = scope.begin().await?;
    txn.reserve::<service_account::Entity>(Limit { max: limit, what: "service accounts", field: "name" }, |all| all)
        .await?;
    let now = clock::now();
    let row = service_account::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name: new.name,
        description: new.description,
        enabled: new.enabled,
        scopes: json!(new.scopes),
        created_at: now,
        updated_at: now,
    };
    txn.insert(service_account::ActiveModel::from(row.clone())).await?;
    txn.audit(
        EventType::ServiceAccountCreated,
        Some(row.id),
        json!({"name": row.name, "enabled": row.enabled, "scopes": row.scopes}),
    )
    .await?;
    txn.commit().await?;
    Ok(row)
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<service_account::Model>, bool), DbErr> {
    page.fetch(
        db.find::<service_account::Entity>()
            .order_by_desc(service_account::Column::CreatedAt)
            .order_by_desc(service_account::Column::Id),
        db.conn(),
    )
    .await
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<service_account::Model, ServiceAccountError> {
    db.find_by_id::<service_account::Entity>(id).one(db.conn()).await?.ok_or(ServiceAccountError::NotFound(id))
}

/// Changes an account; disabling it refuses its keys from the commit on.
pub async fn update(
    scope: &TenantScope,
    id: Uuid,
    patch: ServiceAccountPatch,
) -> Result<service_account::Model, ServiceAccountError> {
    let mut txn = scope.begin().await?;
    let mut row = find(&txn, id).await?.into_active_model();
    let mut changed = Vec::new();
    if let Some(name) = patch.name {
        row.name = Set(name);
        changed.push("name");
    }
    if let Some(description) = patch.description {
        row.description = Set(description);
        changed.push("description");
    }
    if let Some(enabled) = patch.enabled {
        row.enabled = Set(enabled);
        changed.push("enabled");
    }
    if let Some(scopes) = patch.scopes {
        row.scopes = Set(json!(scopes));
        changed.push("scopes");
    }
    row.updated_at = Set(clock::now());
    let updated = txn.update(row).await?;
    txn.audit(
        EventType::ServiceAccountUpdated,
        Some(id),
        json!({"changed": changed, "enabled": updated.enabled, "scopes": updated.scopes}),
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Deletes an account and its keys, in one transaction.
pub async fn delete(scope: &TenantScope, id: Uuid) -> Result<(), ServiceAccountError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    let keys = txn.delete::<service_account_key::Entity>(service_account_key::Column::ServiceAccountId.eq(id)).await?;
    txn.delete::<service_account::Entity>(service_account::Column::Id.eq(id)).await?;
    txn.audit(EventType::ServiceAccountDeleted, Some(id), json!({"name": row.name, "keys_deleted": keys})).await?;
    txn.commit().await?;
    Ok(())
}

fn keys_of(db: &impl TenantConn, account_id: Uuid) -> sea_orm::Select<service_account_key::Entity> {
    db.find::<service_account_key::Entity>().filter(service_account_key::Column::ServiceAccountId.eq(account_id))
}

/// Issues a key of the account, within the limit of its unrevoked keys.
/// Answers the account too (the key carries its scopes).
pub async fn create_key(
    scope: &TenantScope,
    account_id: Uuid,
    new: &NewApiKey,
    max_active: u64,
) -> Result<(service_account::Model, service_account_key::Model, String), ServiceAccountError> {
    let mut txn = scope.begin().await?;
    let account = find(&txn, account_id).await?;
    let limit = Limit { max: max_active, what: "active keys of one service account", field: "name" };
    txn.reserve(limit, |keys: sea_orm::Select<service_account_key::Entity>| {
        keys.filter(service_account_key::Column::ServiceAccountId.eq(account_id))
            .filter(service_account_key::Column::RevokedAt.is_null())
    })
    .await?;
    let secret = key_format::generate(key_format::KeyKind::ServiceAccount, scope.tenant().environment.is_live());
    let key = service_account_key::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        service_account_id: account_id,
        name: new.name.clone(),
        prefix: key_format::display_prefix(&secret),
        secret_hash: sha256(&secret).to_vec(),
        expires_at: new.expires_at,
        created_at: clock::now(),
        last_used_at: None,
        revoked_at: None,
    };
    txn.insert(service_account_key::ActiveModel::from(key.clone())).await?;
    txn.audit(
        EventType::ApiKeyCreated,
        Some(key.id),
        json!({"kind": "service_account", "service_account_id": account_id, "name": key.name,
               "prefix": key.prefix, "expires_at": key.expires_at}),
    )
    .await?;
    txn.commit().await?;
    Ok((account, key, secret))
}

/// A page of the account's keys, newest first, with the account.
pub async fn list_keys(
    db: &impl TenantConn,
    account_id: Uuid,
    page: Page,
) -> Result<(service_account::Model, Vec<service_account_key::Model>, bool), ServiceAccountError> {
    let account = find(db, account_id).await?;
    let (keys, has_more) = page
        .fetch(
            keys_of(db, account_id)
                .order_by_desc(service_account_key::Column::CreatedAt)
                .order_by_desc(service_account_key::Column::Id),
            db.conn(),
        )
        .await?;
    Ok((account, keys, has_more))
}

/// Revokes one of the account's keys; revoking a revoked key answers it
/// unchanged. Another account's key is 404.
pub async fn revoke_key(
    scope: &TenantScope,
    account_id: Uuid,
    key_id: Uuid,
) -> Result<(service_account::Model, service_account_key::Model), ServiceAccountError> {
    let mut txn = scope.begin().await?;
    let account = find(&txn, account_id).await?;
    let mut key = keys_of(&txn, account_id)
        .filter(service_account_key::Column::Id.eq(key_id))
        .one(txn.conn())
        .await?
        .ok_or(ServiceAccountError::KeyNotFound(key_id))?;
    if key.revoked_at.is_some() {
        return Ok((account, key));
    }
    let now = clock::now();
    if !txn.revoke::<service_account_key::Entity>(key_id, now).await? {
        // Another request revoked it first: answer the key as it is now.
        drop(txn);
        let key = keys_of(scope, account_id)
            .filter(service_account_key::Column::Id.eq(key_id))
            .one(scope.conn())
            .await?
            .ok_or(ServiceAccountError::KeyNotFound(key_id))?;
        return Ok((account, key));
    }
    txn.audit(
        EventType::ApiKeyRevoked,
        Some(key_id),
        json!({"kind": "service_account", "service_account_id": account_id, "name": key.name, "prefix": key.prefix}),
    )
    .await?;
    txn.commit().await?;
    key.revoked_at = Some(now);
    Ok((account, key))
}

/// A service-account key that verifies: the key and its (enabled) account.
pub struct Verified {
    pub key: service_account_key::Model,
    pub account: service_account::Model,
}

/// Why a presented service-account key was refused (with the key's id when
/// the secret named one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefusal {
    Unknown,
    Revoked(Uuid),
    Expired(Uuid),
    AccountDisabled(Uuid),
}

impl KeyRefusal {
    /// The refused key and the reason its audit row gives.
    pub fn known_key(self) -> Option<(Uuid, &'static str)> {
        match self {
            KeyRefusal::Unknown => None,
            KeyRefusal::Revoked(id) => Some((id, "revoked")),
            KeyRefusal::Expired(id) => Some((id, "expired")),
            KeyRefusal::AccountDisabled(id) => Some((id, "service_account_disabled")),
        }
    }
}

/// The usable key a secret names in this application: unrevoked,
/// unexpired, and of an enabled account (a deleted account's keys are gone
/// with it). Read from the database each time, so a revocation or a
/// disabled account refuses the key at once, on every node.
pub async fn authenticate(
    db: &impl TenantConn,
    live: bool,
    secret: &str,
) -> Result<Result<Verified, KeyRefusal>, DbErr> {
    if key_format::parse(key_format::KeyKind::ServiceAccount, secret) != Some(live) {
        return Ok(Err(KeyRefusal::Unknown));
    }
    // The key and its account in one query (the account within the
    // application too, though a key's account is always its application's).
    let Some((key, account)) = db
        .find::<service_account_key::Entity>()
        .filter(service_account_key::Column::SecretHash.eq(sha256(secret).to_vec()))
        .find_also_related(service_account::Entity)
        .one(db.conn())
        .await?
    else {
        return Ok(Err(KeyRefusal::Unknown));
    };
    let now = clock::now();
    if key.revoked_at.is_some() {
        return Ok(Err(KeyRefusal::Revoked(key.id)));
    }
    if !is_usable(key.revoked_at, key.expires_at, now) {
        return Ok(Err(KeyRefusal::Expired(key.id)));
    }
    match account {
        Some(account) if account.enabled && account.application_id == db.application_id() => {
            Ok(Ok(Verified { key, account }))
        }
        _ => Ok(Err(KeyRefusal::AccountDisabled(key.id))),
    }
}

/// [`authenticate`], without the reason.
pub async fn verify(db: &impl TenantConn, live: bool, secret: &str) -> Result<Option<Verified>, DbErr> {
    Ok(authenticate(db, live, secret).await?.ok())
}

/// Whether a presented key's `last_used_at` is due: unset, or a minute old.
pub fn touch_is_due(key: &service_account_key::Model) -> bool {
    key.last_used_at.is_none_or(|at: DateTime<Utc>| clock::now() - at >= chrono::Duration::seconds(60))
}

/// Records that a key was presented, at most once a minute per key (judged
/// from the stored value, so across nodes too).
pub async fn touch_if_due(scope: &TenantScope, key: &service_account_key::Model) -> Result<(), DbErr> {
    if !touch_is_due(key) {
        return Ok(());
    }
    let now = clock::now();
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::KeyLastUsed);
    txn.update_many(|q: UpdateMany<service_account_key::Entity>| {
        q.col_expr(service_account_key::Column::LastUsedAt, Expr::value(now))
            .filter(service_account_key::Column::Id.eq(key.id))
    })
    .await?;
    txn.commit().await
}
