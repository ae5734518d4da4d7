//! The key records secret-key authentication reads, cached for one second
//! (the bound on how long a key revoked on another node keeps working); on
//! the node that revokes a key it stops at once ([`KeyCache::forget`]).
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use chrono::{DateTime, Utc};
use entity::api_key;
use uuid::Uuid;

use crate::{
    audit::Actor,
    cache::{
        bus::{Bus, Invalidation},
        LoadedCache,
    },
    crypto::constant_time_eq,
    error::{ApiError, ApiResult},
    events::catalog::EventType,
    storage::TenantScope,
};

#[derive(Clone)]
struct CachedKey {
    id: Uuid,
    last_used_at: Option<DateTime<Utc>>,
    /// Set by the first request that finds `last_used_at` due for a write,
    /// so one write is made per cached record, not one per request.
    touch_claimed: Arc<AtomicBool>,
    hash: [u8; 32],
    scopes: Arc<[String]>,
    expires_at: Option<DateTime<Utc>>,
    revoked: bool,
}

impl CachedKey {
    fn from_model(row: api_key::Model) -> Self {
        CachedKey {
            id: row.id,
            last_used_at: row.last_used_at,
            touch_claimed: Arc::default(),
            scopes: super::scope_list(&row.scopes).collect(),
            expires_at: row.expires_at,
            revoked: row.revoked_at.is_some(),
            hash: row.secret_hash.as_slice().try_into().unwrap_or([0; 32]),
        }
    }

    fn usable(&self, now: DateTime<Utc>) -> bool {
        !self.revoked && self.expires_at.is_none_or(|at| at > now)
    }

    /// Whether this request should write `last_used_at`: at most once a
    /// minute per key, judged from the stored value (so across nodes too).
    fn claim_touch(&self, now: DateTime<Utc>) -> bool {
        self.last_used_at.is_none_or(|at| now - at >= chrono::Duration::seconds(60))
            && !self.touch_claimed.swap(true, Ordering::Relaxed)
    }
}

/// Key records by (application, secret hash) for authentication and by
/// (application, id) for reads. Concurrent misses of one entry share a
/// single database read. A handle: every authenticated request holds one,
/// so cloning it is one reference count, not one per cache inside.
#[derive(Clone)]
pub struct KeyCache(Arc<KeyCaches>);

struct KeyCaches {
    bus: Bus,
    records: Records,
    /// Refusals recorded in the last minute, so a flood of a revoked key
    /// cannot turn into a flood of writes.
    refusals: moka::sync::Cache<(Uuid, &'static str), ()>,
}

/// What a key change drops. A revocation names a key by id, and the record
/// authentication reads is found by secret hash, so `hash_of` indexes the
/// one by the other: a key is dropped with two look-ups. (Not with moka's
/// `invalidate_entries_if`: every read tests every pending predicate until
/// a background scan retires it, so each revocation made every
/// authenticated request a little dearer for a while.)
#[derive(Clone)]
struct Records {
    by_secret: LoadedCache<(Uuid, [u8; 32]), Option<CachedKey>>,
    by_id: LoadedCache<(Uuid, Uuid), Arc<api_key::Model>>,
    /// (application, key id) → secret hash of the records in `by_secret`;
    /// outlives them (2 s against 1 s), so no record is left unindexed.
    hash_of: moka::sync::Cache<(Uuid, Uuid), [u8; 32]>,
}

impl Records {
    async fn forget(&self, application_id: Uuid, key_id: Uuid) {
        if let Some(hash) = self.hash_of.remove(&(application_id, key_id)) {
            self.by_secret.invalidate(&(application_id, hash)).await;
        }
        self.by_id.invalidate(&(application_id, key_id)).await;
    }

    fn forget_all(&self) {
        self.by_secret.invalidate_all();
        self.by_id.invalidate_all();
        self.hash_of.invalidate_all();
    }
}

impl KeyCache {
    /// Key records, dropped on this node at once and on the others when the
    /// bus says a key changed (the 1 s TTL is the fallback without Redis).
    pub fn new(bus: Bus) -> Self {
        let records = Records {
            by_secret: LoadedCache::new(100_000, Duration::from_secs(1)),
            by_id: LoadedCache::new(100_000, Duration::from_secs(1)),
            hash_of: moka::sync::Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(2)).build(),
        };
        // The listener holds the records, not the cache (which holds the bus).
        let heard = records.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::ApiKey { application_id, key_id } => {
                // Listeners are synchronous; the records are gone within the task's first poll.
                let records = heard.clone();
                tokio::spawn(async move { records.forget(application_id, key_id).await });
            }
            Invalidation::All => heard.forget_all(),
            _ => {}
        });
        Self(Arc::new(KeyCaches {
            bus,
            records,
            refusals: moka::sync::Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(60)).build(),
        }))
    }
}

impl KeyCache {
    /// A key record of the application; a miss costs one indexed read.
    pub async fn find(&self, scope: &TenantScope, id: Uuid) -> ApiResult<Arc<api_key::Model>> {
        // A missing key is not cached: it may be created a moment later.
        let load = || async { super::find_optional(scope, id).await?.map(Arc::new).ok_or(LoadError::Missing) };
        match self.0.records.by_id.get_or_try_load((scope.tenant().id, id), load).await {
            Ok(key) => Ok(key),
            Err(err) => match &*err {
                LoadError::Missing => Err(ApiError::not_found("API key", id)),
                LoadError::Db(err) => Err(err.into()),
            },
        }
    }

    /// Writes `api_key.use_refused` for a known key before the refusal is
    /// answered, at most once a minute per key and reason on this node.
    pub async fn record_refusal(&self, scope: &TenantScope, key_id: Uuid, reason: &'static str) {
        if self.0.refusals.contains_key(&(key_id, reason)) {
            return;
        }
        self.0.refusals.insert((key_id, reason), ());
        let mut txn = match scope.acting_as(Actor::api_key(key_id)).begin().await {
            Ok(txn) => txn,
            Err(err) => return tracing::warn!(error = %err, "could not record a refused key use"),
        };
        let written = async {
            txn.audit(EventType::ApiKeyUseRefused, Some(key_id), serde_json::json!({ "reason": reason })).await?;
            txn.commit().await
        };
        if let Err(err) = written.await {
            tracing::warn!(error = %err, "could not record a refused key use");
        }
    }

    /// Forgets a changed key (a revocation) at once on this node, and on
    /// the others through the bus.
    pub async fn forget(&self, key: &api_key::Model) {
        self.0.records.forget(key.application_id, key.id).await;
        self.0.bus.publish(Invalidation::ApiKey { application_id: key.application_id, key_id: key.id }).await;
    }
}

/// A key proven by its secret: its id and scopes, and its application's
/// scope acting as the key.
pub struct Authenticated {
    pub id: Uuid,
    pub scopes: Arc<[String]>,
    pub scope: TenantScope,
}

impl KeyCache {
    /// The usable key of the scope's application whose secret hashes to
    /// `hash`; `None` for an unknown, revoked or expired one (a known key's
    /// refusal is recorded).
    pub async fn authenticate(&self, scope: TenantScope, hash: [u8; 32]) -> ApiResult<Option<Authenticated>> {
        let application_id = scope.tenant().id;
        let records = &self.0.records;
        let load = || load_by_secret(records, &scope, hash);
        let found = records
            .by_secret
            .get_or_try_load((application_id, hash), load)
            .await
            .map_err(|err| ApiError::from(&*err))?;
        let now = crate::clock::now();
        let key = match found {
            Some(key) if constant_time_eq(&key.hash, &hash) && key.usable(now) => key,
            Some(key) if constant_time_eq(&key.hash, &hash) => {
                metrics::counter!("gatehouse_auth_rejected_total", "reason" => "inactive").increment(1);
                let reason = if key.revoked { "revoked" } else { "expired" };
                self.record_refusal(&scope, key.id, reason).await;
                return Ok(None);
            }
            _ => {
                metrics::counter!("gatehouse_auth_rejected_total", "reason" => "unknown").increment(1);
                return Ok(None);
            }
        };
        let scope = scope.acting_as(Actor::api_key(key.id));
        if key.claim_touch(now) {
            let (scope, keys, key_id) = (scope.clone(), self.clone(), key.id);
            actix::spawn(async move {
                match super::touch(&scope, key_id, now).await {
                    Ok(()) => keys.0.records.by_id.invalidate(&(application_id, key_id)).await,
                    Err(err) => tracing::warn!(error = %err, "could not record last_used_at"),
                }
            });
        }
        Ok(Some(Authenticated { id: key.id, scopes: key.scopes, scope }))
    }
}

/// Why a key record could not be loaded.
#[derive(Debug)]
enum LoadError {
    Missing,
    Db(sea_orm::DbErr),
}

impl From<sea_orm::DbErr> for LoadError {
    fn from(err: sea_orm::DbErr) -> Self {
        LoadError::Db(err)
    }
}

/// The key whose secret hashes to `hash`, read on a cache miss; indexed by
/// id in `hash_of` so a revocation can find its record.
async fn load_by_secret(
    records: &Records,
    scope: &TenantScope,
    hash: [u8; 32],
) -> Result<Option<CachedKey>, sea_orm::DbErr> {
    let found = super::find_by_hash(scope, &hash).await?.map(CachedKey::from_model);
    if let Some(key) = &found {
        records.hash_of.insert((scope.tenant().id, key.id), key.hash);
    }
    Ok(found)
}
