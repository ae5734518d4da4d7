//! Per-application Ed25519 signing keys. The current key signs; keys retired
//! by a rotation stay published (and accepted) until every token they signed
//! has expired. Private halves are sealed with the master key and opened
//! only when a key set is loaded. Key sets are cached per node for a short
//! while; an unknown `kid` reloads the set, at most once a second per
//! application, so a flood of made-up `kid`s costs no more than that.
use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use ed25519_compact::{KeyPair, PublicKey, SecretKey, Seed};
use entity::signing_key;
use moka::future::Cache;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use crate::{
    audit::Actor,
    cache::{
        bus::{Bus, Invalidation},
        layer::ReadThrough,
        redis::SharedRedis,
    },
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, ApiResult},
    storage::{TenantConn, TenantScope, TenantTxn},
};

/// How long a node keeps a key set before reading it again.
pub const CACHE_SECONDS: u64 = 10;
const RELOAD_AT_MOST_EVERY: Duration = Duration::from_secs(1);

pub struct PublishedKey {
    pub kid: Uuid,
    pub public: PublicKey,
}

/// One application's keys as loaded.
pub struct KeySet {
    pub current: Option<(Uuid, SecretKey)>,
    /// The current key and the retired keys still within their grace.
    pub published: Vec<PublishedKey>,
    /// The published keys as a JSON Web Key Set document, rendered once.
    pub jwks: actix_web::web::Bytes,
    loaded_at: std::time::Instant,
    loaded_at_wall: DateTime<Utc>,
}

impl KeySet {
    pub fn public(&self, kid: Uuid) -> Option<&PublicKey> {
        self.published.iter().find(|k| k.kid == kid).map(|k| &k.public)
    }

    /// Whether an unknown `kid` is worth a reload: the set is over a second
    /// old, or the `kid` (a UUIDv7) was made after the set was read and not
    /// in the future, as a key another node just created or rotated in.
    fn may_reload_for(&self, kid: Uuid) -> bool {
        if self.loaded_at.elapsed() >= RELOAD_AT_MOST_EVERY {
            return true;
        }
        let Some((seconds, nanos)) = kid.get_timestamp().map(|t| t.to_unix()) else {
            return false;
        };
        let made = DateTime::<Utc>::from_timestamp(seconds as i64, nanos).unwrap_or_default();
        made > self.loaded_at_wall && made <= crate::clock::now()
    }
}

fn render_jwks(published: &[PublishedKey]) -> actix_web::web::Bytes {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    let keys: Vec<serde_json::Value> = published
        .iter()
        .map(|k| {
            json!({"kty": "OKP", "crv": "Ed25519", "x": URL_SAFE_NO_PAD.encode(k.public.as_ref()),
                "kid": k.kid.to_string(), "alg": "EdDSA", "use": "sig"})
        })
        .collect();
    serde_json::to_vec(&json!({ "keys": keys })).expect("a key set serialises").into()
}

#[derive(Clone)]
pub struct SigningKeys {
    sets: Cache<Uuid, Arc<KeySet>>,
    /// The public JWKS documents, shared by nodes through Redis.
    documents: ReadThrough<String>,
    bus: Bus,
    master_key: MasterKey,
    /// How long a retired key stays published.
    grace: chrono::Duration,
}

impl SigningKeys {
    pub fn new(master_key: MasterKey, access_ttl_seconds: u64, bus: Bus, redis: Option<SharedRedis>) -> Self {
        let grace = access_ttl_seconds as i64 + CACHE_SECONDS as i64 + super::jwt::LEEWAY_SECONDS;
        let ttl = Duration::from_secs(CACHE_SECONDS);
        let keys = Self {
            sets: Cache::builder().max_capacity(100_000).time_to_live(ttl).build(),
            documents: ReadThrough::new("jwks", redis, ttl, ttl),
            bus: bus.clone(),
            master_key,
            grace: chrono::Duration::seconds(grace),
        };
        let listener = keys.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::Tenant { application_id, .. } => {
                listener.documents.invalidate_local(application_id);
                let sets = listener.sets.clone();
                tokio::spawn(async move { sets.invalidate(&application_id).await });
            }
            Invalidation::All => {
                listener.documents.invalidate_all_local();
                listener.sets.invalidate_all();
            }
            _ => {}
        });
        keys
    }

    /// The application's JWKS document: this node's copy, else the one
    /// another node put in Redis, else rendered from the database.
    pub async fn document(&self, scope: &TenantScope) -> ApiResult<String> {
        let load = async {
            let set = self.set(scope).await?;
            Ok::<_, ApiError>(String::from_utf8_lossy(&set.jwks).into_owned())
        };
        self.documents
            .get_with(scope.tenant().id, load)
            .await
            .map_err(|err| ApiError { details: Vec::new(), ..ApiError::new(err.code, err.message.clone()) })
    }

    /// After a committed change of the key set: this node's copies go at
    /// once, the shared one too, and the other nodes hear of it on the bus.
    async fn changed(&self, application_id: Uuid) {
        self.sets.invalidate(&application_id).await;
        self.documents.invalidate(application_id).await;
        let version = crate::clock::now().timestamp_micros() as u64;
        self.bus.publish(Invalidation::Tenant { application_id, version }).await;
    }

    pub async fn set(&self, scope: &TenantScope) -> ApiResult<Arc<KeySet>> {
        self.sets.try_get_with(scope.tenant().id, self.load(scope)).await.map_err(|err| ApiError::from(&*err))
    }

    /// The public key of `kid`, reloading the set once if it is not known.
    pub async fn public(&self, scope: &TenantScope, kid: Uuid) -> ApiResult<Option<PublicKey>> {
        let set = self.set(scope).await?;
        if let Some(key) = set.public(kid) {
            return Ok(Some(*key));
        }
        if !set.may_reload_for(kid) {
            return Ok(None);
        }
        self.sets.invalidate(&scope.tenant().id).await;
        Ok(self.set(scope).await?.public(kid).copied())
    }

    /// The key to sign with, created on first use (with its
    /// `signing_key.created` audit row, by the system).
    pub async fn current(&self, scope: &TenantScope) -> ApiResult<(Uuid, SecretKey)> {
        if let Some(current) = self.set(scope).await?.current.clone() {
            return Ok(current);
        }
        let mut txn = scope.acting_as(Actor::system()).begin().await?;
        // Creations take turns on the chain head; the second finds the first's key.
        txn.lock_tenant().await?;
        let exists = txn
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null())
            .one(txn.conn())
            .await?
            .is_some();
        if !exists {
            let kid = self.insert(&mut txn).await?;
            txn.audit("signing_key.created", Some(kid), json!({"kid": kid})).await?;
            txn.commit().await?;
            self.changed(scope.tenant().id).await;
        }
        self.sets.invalidate(&scope.tenant().id).await;
        self.set(scope)
            .await?
            .current
            .clone()
            .ok_or_else(|| ApiError::internal("a signing key was created but cannot be loaded"))
    }

    /// Retires the current key and makes a new one current. Rotations of
    /// one application take turns: the transaction first locks the
    /// application's audit-chain head (which its audit row would lock
    /// anyway), so a second rotation sees the key the first made and
    /// retires it, instead of colliding with it.
    pub async fn rotate(&self, scope: &TenantScope) -> ApiResult<Uuid> {
        let mut txn = scope.begin().await?;
        txn.lock_tenant().await?;
        let now = crate::clock::now();
        let retired = txn
            .update_many_returning(|q: UpdateMany<signing_key::Entity>| {
                q.col_expr(signing_key::Column::RetiredAt, Expr::value(now))
                    .filter(signing_key::Column::RetiredAt.is_null())
            })
            .await?;
        let kid = self.insert(&mut txn).await?;
        let previous: Vec<String> = retired.iter().map(|k| k.id.to_string()).collect();
        txn.audit("signing_key.rotated", Some(kid), json!({"kid": kid, "retired": previous})).await?;
        txn.commit().await?;
        self.changed(scope.tenant().id).await;
        Ok(kid)
    }

    async fn insert(&self, txn: &mut TenantTxn) -> Result<Uuid, DbErr> {
        let application_id = txn.application_id();
        let pair = KeyPair::from_seed(Seed::generate());
        let id = Uuid::now_v7();
        let sealed = seal::seal(&self.master_key, &seal_context(application_id, id), pair.sk.seed().as_ref());
        txn.insert(signing_key::ActiveModel::from(signing_key::Model {
            id,
            application_id,
            public_key: pair.pk.to_vec(),
            private_key_sealed: sealed,
            created_at: crate::clock::now(),
            retired_at: None,
        }))
        .await?;
        Ok(id)
    }

    async fn load(&self, scope: &TenantScope) -> Result<Arc<KeySet>, DbErr> {
        let application_id = scope.tenant().id;
        let cutoff: DateTime<Utc> = crate::clock::now() - self.grace;
        let rows = scope
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null().or(signing_key::Column::RetiredAt.gt(cutoff)))
            .order_by_desc(signing_key::Column::CreatedAt)
            .all(scope.conn())
            .await?;
        let loaded_at_wall = crate::clock::now();
        let mut current = None;
        let mut published = Vec::new();
        for row in rows {
            let public = PublicKey::from_slice(&row.public_key)
                .map_err(|_| DbErr::Custom(format!("signing key {} has a malformed public key", row.id)))?;
            if row.retired_at.is_none() {
                let seed = seal::open(&self.master_key, &seal_context(application_id, row.id), &row.private_key_sealed)
                    .map_err(|_| DbErr::Custom(format!("signing key {} cannot be opened", row.id)))?;
                let seed = Seed::from_slice(&seed)
                    .map_err(|_| DbErr::Custom(format!("signing key {} has a malformed seed", row.id)))?;
                current = Some((row.id, KeyPair::from_seed(seed).sk));
            }
            published.push(PublishedKey { kid: row.id, public });
        }
        let jwks = render_jwks(&published);
        Ok(Arc::new(KeySet { current, published, jwks, loaded_at: std::time::Instant::now(), loaded_at_wall }))
    }
}

fn seal_context(application_id: Uuid, kid: Uuid) -> String {
    format!("{application_id}/signing_key/{kid}")
}
