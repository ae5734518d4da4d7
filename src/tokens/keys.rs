//! Per-application Ed25519 signing keys. The current key signs; keys retired
//! by a rotation stay published (and accepted) until every token they signed
//! has expired. Private halves are sealed with the master key and opened
//! only when a key set is loaded. The loaded [`KeySet`] is part of the
//! tenant's state (`tenancy::TenantState`), which its tenant actor owns and
//! changes: this module loads a set and makes the two changes (the first key,
//! a rotation), each with its audit row.
use std::time::Duration;

use chrono::{DateTime, Utc};
use ed25519_compact::{KeyPair, PublicKey, SecretKey, Seed};
use entity::signing_key;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use crate::{
    crypto::{master_key::MasterKey, seal},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

/// How long a node trusts a loaded key set when no invalidation can reach
/// it (without Redis): the part of a retired key's grace that covers it.
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
    pub fn may_reload_for(&self, kid: Uuid) -> bool {
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

/// A rendered JWKS document: cloned by reference count, kept in Redis as its text.
#[derive(Clone, Debug)]
pub struct JwksDocument(pub actix_web::web::Bytes);

impl serde::Serialize for JwksDocument {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(std::str::from_utf8(&self.0).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> serde::Deserialize<'de> for JwksDocument {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| JwksDocument(text.into()))
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

/// Loads key sets and changes them; sealing under the master key.
#[derive(Clone)]
pub struct SigningKeys {
    master_key: MasterKey,
    /// How long a retired key stays published.
    grace: chrono::Duration,
}

impl SigningKeys {
    pub fn new(master_key: MasterKey, access_ttl_seconds: u64) -> Self {
        let grace = access_ttl_seconds as i64 + CACHE_SECONDS as i64 + super::jwt::LEEWAY_SECONDS;
        Self { master_key, grace: chrono::Duration::seconds(grace) }
    }

    /// Creates the application's first key (with its `signing_key.created`
    /// row) unless it has one; answers whether it did.
    pub async fn create_first(&self, scope: &TenantScope) -> Result<bool, DbErr> {
        let mut txn = scope.begin().await?;
        // Creations take turns on the chain head; the second finds the first's key.
        txn.lock_tenant().await?;
        let exists = txn
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null())
            .one(txn.conn())
            .await?
            .is_some();
        if exists {
            return Ok(false);
        }
        let kid = self.insert(&mut txn).await?;
        txn.audit(EventType::SigningKeyCreated, Some(kid), json!({"kid": kid})).await?;
        txn.commit().await?;
        Ok(true)
    }

    /// Retires the current key and makes a new one current. Rotations of
    /// one application take turns: the transaction first locks the
    /// application's audit-chain head (which its audit row would lock
    /// anyway), so a second rotation sees the key the first made and
    /// retires it, instead of colliding with it.
    pub async fn rotate(&self, scope: &TenantScope) -> Result<Uuid, DbErr> {
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
        txn.audit(EventType::SigningKeyRotated, Some(kid), json!({"kid": kid, "retired": previous})).await?;
        txn.commit().await?;
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

    /// The current key and the retired keys still within their grace.
    pub async fn load(&self, db: &impl TenantConn) -> Result<KeySet, DbErr> {
        let application_id = db.application_id();
        let cutoff: DateTime<Utc> = crate::clock::now() - self.grace;
        let rows = db
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null().or(signing_key::Column::RetiredAt.gt(cutoff)))
            .order_by_desc(signing_key::Column::CreatedAt)
            .all(db.conn())
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
        Ok(KeySet { current, published, jwks, loaded_at: std::time::Instant::now(), loaded_at_wall })
    }
}

fn seal_context(application_id: Uuid, kid: Uuid) -> String {
    format!("{application_id}/signing_key/{kid}")
}
