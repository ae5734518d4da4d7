//! Per-application Ed25519 signing keys. The current key signs; keys retired
//! by a rotation stay published (and accepted) until every token they signed
//! has expired. A scheduled rotation publishes the next key first and lets
//! it sign only once every verifier's cached JWKS holds it (one JWKS
//! max-age, plus twice this service's own cache time); an immediate one (a key
//! compromise) deletes the old keys, so their tokens fail at once. Private
//! halves are sealed with the master key and opened only when a key set is
//! loaded. The loaded [`KeySet`] is part of the tenant's state
//! (`tenancy::TenantState`), which its tenant actor owns and changes: this
//! module loads a set and makes the changes (the first key, a rotation),
//! each with its audit row.
use std::time::Duration;

use chrono::{DateTime, Utc};
use ed25519_compact::{KeyPair, PublicKey, SecretKey, Seed};
use entity::signing_key;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use crate::{
    crypto::{master_key::MasterKey, seal, sha256_hex},
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

/// A key that signs now or will: its private half and when it signs.
struct SigningKey {
    kid: Uuid,
    secret: SecretKey,
    signs_from: Option<DateTime<Utc>>,
    retired_at: Option<DateTime<Utc>>,
}

impl SigningKey {
    fn signs_at(&self, now: DateTime<Utc>) -> bool {
        self.signs_from.is_none_or(|from| from <= now) && self.retired_at.is_none_or(|at| at > now)
    }
}

/// One application's keys as loaded.
pub struct KeySet {
    /// Newest first: the current key, and the next one a scheduled rotation
    /// made (which signs from its `signs_from`, when its predecessor retires).
    signing: Vec<SigningKey>,
    /// The signing keys and the retired keys still within their grace.
    pub published: Vec<PublishedKey>,
    /// The published keys as a JSON Web Key Set document, rendered once.
    pub jwks: JwksDocument,
    loaded_at: std::time::Instant,
    loaded_at_wall: DateTime<Utc>,
}

impl KeySet {
    /// The key that signs now; the same set hands over to a scheduled key
    /// at its time, with no reload.
    pub fn current(&self) -> Option<(Uuid, SecretKey)> {
        let now = crate::clock::now();
        self.signing.iter().find(|k| k.signs_at(now)).map(|k| (k.kid, k.secret.clone()))
    }

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

/// A rendered JWKS document and its entity tag (a digest of the text, so
/// every node names the same document alike): cloned by reference count,
/// kept in Redis as its text.
#[derive(Clone, Debug)]
pub struct JwksDocument {
    pub text: bytes::Bytes,
    /// `"…"`: the first 16 bytes of the text's SHA-256, in hex.
    pub etag: String,
}

impl JwksDocument {
    fn new(text: bytes::Bytes) -> Self {
        let digest = sha256_hex(&text);
        JwksDocument { etag: format!("\"{}\"", &digest[..32]), text }
    }
}

impl serde::Serialize for JwksDocument {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(std::str::from_utf8(&self.text).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> serde::Deserialize<'de> for JwksDocument {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| JwksDocument::new(text.into()))
    }
}

fn render_jwks(published: &[PublishedKey]) -> JwksDocument {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    let keys: Vec<serde_json::Value> = published
        .iter()
        .map(|k| {
            json!({"kty": "OKP", "crv": "Ed25519", "x": URL_SAFE_NO_PAD.encode(k.public.as_ref()),
                "kid": k.kid.to_string(), "alg": "EdDSA", "use": "sig"})
        })
        .collect();
    JwksDocument::new(serde_json::to_vec(&json!({ "keys": keys })).expect("a key set serialises").into())
}

/// What a rotation did: the key that signs next, and from when.
pub struct Rotation {
    pub kid: Uuid,
    pub signs_from: DateTime<Utc>,
}

/// Loads key sets and changes them; sealing under the master key.
#[derive(Clone)]
pub struct SigningKeys {
    master_key: MasterKey,
    /// How long a retired key stays published.
    grace: chrono::Duration,
    /// How long ahead of its first token a scheduled rotation publishes a key.
    lead: chrono::Duration,
}

impl SigningKeys {
    pub fn new(master_key: MasterKey, access_ttl_seconds: u64, jwks_max_age_seconds: u64) -> Self {
        let grace = access_ttl_seconds as i64 + CACHE_SECONDS as i64 + super::jwt::LEEWAY_SECONDS;
        // The JWKS can be served stale for two cache times: a copy written
        // back to Redis just before the change, then each node's own copy.
        let lead = jwks_max_age_seconds as i64 + 2 * CACHE_SECONDS as i64;
        Self { master_key, grace: chrono::Duration::seconds(grace), lead: chrono::Duration::seconds(lead) }
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
        let kid = self.insert(&mut txn, None).await?;
        txn.audit(EventType::SigningKeyCreated, Some(kid), json!({"kid": kid})).await?;
        txn.commit().await?;
        Ok(true)
    }

    /// Schedules the next key: published now, signing once every verifier
    /// holds it, when the current key retires (it stays published until its
    /// last token has expired). A rotation already scheduled is answered as
    /// it is. Rotations of one application take turns: the transaction
    /// first locks the application's audit-chain head (which its audit row
    /// would lock anyway), so a second one sees the key the first made.
    pub async fn rotate(&self, scope: &TenantScope) -> Result<Rotation, DbErr> {
        let mut txn = scope.begin().await?;
        txn.lock_tenant().await?;
        let now = crate::clock::now();
        let scheduled =
            txn.find::<signing_key::Entity>().filter(signing_key::Column::SignsFrom.gt(now)).one(txn.conn()).await?;
        if let (Some(next), Some(signs_from)) = (&scheduled, scheduled.as_ref().and_then(|k| k.signs_from)) {
            return Ok(Rotation { kid: next.id, signs_from });
        }
        let signs_from = now + self.lead;
        let retiring = txn
            .update_many_returning(|q: UpdateMany<signing_key::Entity>| {
                q.col_expr(signing_key::Column::RetiredAt, Expr::value(signs_from))
                    .filter(signing_key::Column::RetiredAt.is_null())
            })
            .await?;
        // With no key yet (keys are made on first use), no verifier holds
        // one to be broken: the new key signs at once.
        let signs_from = if retiring.is_empty() { now } else { signs_from };
        let kid = self.insert(&mut txn, (!retiring.is_empty()).then_some(signs_from)).await?;
        let retiring: Vec<String> = retiring.iter().map(|k| k.id.to_string()).collect();
        let data = json!({"kid": kid, "signs_from": crate::clock::format(signs_from), "retiring": retiring});
        txn.audit(EventType::SigningKeyRotated, Some(kid), data).await?;
        txn.commit().await?;
        Ok(Rotation { kid, signs_from })
    }

    /// A key compromise: every key the application has is deleted, so no
    /// token they signed verifies any more, and a new key signs at once.
    /// Signed-in users keep their sessions: their next refresh gets a token
    /// of the new key.
    pub async fn rotate_immediately(&self, scope: &TenantScope) -> Result<Rotation, DbErr> {
        let mut txn = scope.begin().await?;
        txn.lock_tenant().await?;
        let old: Vec<Uuid> =
            txn.find::<signing_key::Entity>().all(txn.conn()).await?.into_iter().map(|k| k.id).collect();
        txn.delete::<signing_key::Entity>(signing_key::Column::Id.is_in(old.clone())).await?;
        let kid = self.insert(&mut txn, None).await?;
        let deleted: Vec<String> = old.iter().map(Uuid::to_string).collect();
        txn.audit(EventType::SigningKeyRotated, Some(kid), json!({"kid": kid, "immediate": true, "deleted": deleted}))
            .await?;
        txn.commit().await?;
        Ok(Rotation { kid, signs_from: crate::clock::now() })
    }

    async fn insert(&self, txn: &mut TenantTxn, signs_from: Option<DateTime<Utc>>) -> Result<Uuid, DbErr> {
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
            signs_from,
        }))
        .await?;
        Ok(id)
    }

    /// The keys that sign now or will, and the retired keys still within their grace.
    pub async fn load(&self, db: &impl TenantConn) -> Result<KeySet, DbErr> {
        let application_id = db.application_id();
        let now = crate::clock::now();
        let cutoff: DateTime<Utc> = now - self.grace;
        let rows = db
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null().or(signing_key::Column::RetiredAt.gt(cutoff)))
            .order_by_desc(signing_key::Column::CreatedAt)
            .all(db.conn())
            .await?;
        let mut signing = Vec::new();
        let mut published = Vec::new();
        for row in rows {
            let public = PublicKey::from_slice(&row.public_key)
                .map_err(|_| DbErr::Custom(format!("signing key {} has a malformed public key", row.id)))?;
            if row.retired_at.is_none_or(|at| at > now) {
                let seed = seal::open(&self.master_key, &seal_context(application_id, row.id), &row.private_key_sealed)
                    .map_err(|_| DbErr::Custom(format!("signing key {} cannot be opened", row.id)))?;
                let seed = Seed::from_slice(&seed)
                    .map_err(|_| DbErr::Custom(format!("signing key {} has a malformed seed", row.id)))?;
                let secret = KeyPair::from_seed(seed).sk;
                signing.push(SigningKey {
                    kid: row.id,
                    secret,
                    signs_from: row.signs_from,
                    retired_at: row.retired_at,
                });
            }
            published.push(PublishedKey { kid: row.id, public });
        }
        let jwks = render_jwks(&published);
        Ok(KeySet { signing, published, jwks, loaded_at: std::time::Instant::now(), loaded_at_wall: now })
    }
}

fn seal_context(application_id: Uuid, kid: Uuid) -> String {
    format!("{application_id}/signing_key/{kid}")
}
