//! Per-application Ed25519 signing keys. The current key signs; keys retired
//! by a rotation stay published (and accepted) until every token they signed
//! has expired. Private halves are sealed with the master key and opened
//! only when a key set is loaded. Key sets are cached per node for a short
//! while; an unknown `kid` reloads the set, at most once a second per
//! application, so a flood of made-up `kid`s costs no more than that.
use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use ed25519_compact::{KeyPair, PublicKey, SecretKey, Seed};
use entity::{audit_head, signing_key};
use moka::future::Cache;
use sea_orm::{
    sea_query::Expr, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
};
use serde_json::json;
use uuid::Uuid;

use crate::{
    audit::{self, Actor},
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, ApiResult},
    storage::Db,
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
    master_key: MasterKey,
    /// How long a retired key stays published.
    grace: chrono::Duration,
}

impl SigningKeys {
    pub fn new(master_key: MasterKey, access_ttl_seconds: u64) -> Self {
        let grace = access_ttl_seconds as i64 + CACHE_SECONDS as i64 + super::jwt::LEEWAY_SECONDS;
        Self {
            sets: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(CACHE_SECONDS)).build(),
            master_key,
            grace: chrono::Duration::seconds(grace),
        }
    }

    pub async fn set(&self, shard: &Db, application_id: Uuid) -> ApiResult<Arc<KeySet>> {
        self.sets
            .try_get_with(application_id, self.load(shard, application_id))
            .await
            .map_err(|err| ApiError::from(&*err))
    }

    /// The public key of `kid`, reloading the set once if it is not known.
    pub async fn public(&self, shard: &Db, application_id: Uuid, kid: Uuid) -> ApiResult<Option<PublicKey>> {
        let set = self.set(shard, application_id).await?;
        if let Some(key) = set.public(kid) {
            return Ok(Some(*key));
        }
        if !set.may_reload_for(kid) {
            return Ok(None);
        }
        self.sets.invalidate(&application_id).await;
        Ok(self.set(shard, application_id).await?.public(kid).copied())
    }

    /// The key to sign with, created on first use.
    pub async fn current(&self, shard: &Db, application_id: Uuid) -> ApiResult<(Uuid, SecretKey)> {
        if let Some(current) = self.set(shard, application_id).await?.current.clone() {
            return Ok(current);
        }
        let txn = shard.begin_write().await?;
        let created = match self.insert(&*txn, application_id).await {
            Ok(_) => txn.commit().await,
            // Another request or node created it first.
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(()),
            Err(err) => Err(err),
        };
        created?;
        self.sets.invalidate(&application_id).await;
        self.set(shard, application_id)
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
    pub async fn rotate(&self, shard: &Db, application_id: Uuid, actor: &Actor) -> ApiResult<Uuid> {
        let txn = shard.begin_write().await?;
        audit_head::Entity::find()
            .filter(audit_head::Column::ApplicationId.eq(application_id))
            .lock_exclusive()
            .one(&*txn)
            .await?;
        let now = crate::clock::now();
        let retired = signing_key::Entity::update_many()
            .col_expr(signing_key::Column::RetiredAt, Expr::value(now))
            .filter(signing_key::Column::ApplicationId.eq(application_id))
            .filter(signing_key::Column::RetiredAt.is_null())
            .exec_with_returning(&*txn)
            .await?;
        let kid = self.insert(&*txn, application_id).await?;
        let previous: Vec<String> = retired.iter().map(|k| k.id.to_string()).collect();
        audit::record(
            &*txn,
            application_id,
            actor,
            "signing_key.rotated",
            Some(kid),
            json!({"kid": kid, "retired": previous}),
        )
        .await?;
        txn.commit().await?;
        self.sets.invalidate(&application_id).await;
        Ok(kid)
    }

    async fn insert(&self, db: &impl ConnectionTrait, application_id: Uuid) -> Result<Uuid, DbErr> {
        let pair = KeyPair::from_seed(Seed::generate());
        let id = Uuid::now_v7();
        let sealed = seal::seal(&self.master_key, &seal_context(application_id, id), pair.sk.seed().as_ref());
        signing_key::Entity::insert(signing_key::ActiveModel::from(signing_key::Model {
            id,
            application_id,
            public_key: pair.pk.to_vec(),
            private_key_sealed: sealed,
            created_at: crate::clock::now(),
            retired_at: None,
        }))
        .exec_without_returning(db)
        .await?;
        Ok(id)
    }

    async fn load(&self, shard: &Db, application_id: Uuid) -> Result<Arc<KeySet>, DbErr> {
        let cutoff: DateTime<Utc> = crate::clock::now() - self.grace;
        let rows = signing_key::Entity::find()
            .filter(signing_key::Column::ApplicationId.eq(application_id))
            .filter(signing_key::Column::RetiredAt.is_null().or(signing_key::Column::RetiredAt.gt(cutoff)))
            .order_by_desc(signing_key::Column::CreatedAt)
            .all(&shard.conn)
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
