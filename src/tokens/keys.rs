//! Per-application signing keys: Ed25519 for every token, and RSA for the
//! ID tokens of clients that ask for RS256 (made when the first such client
//! is registered). Each algorithm has its own current key, and a rotation
//! rotates each. The current key signs; keys retired by a rotation stay
//! published (and accepted) until every token they signed has expired. A
//! scheduled rotation publishes the next key first and lets it sign only
//! once every verifier's cached JWKS holds it (one JWKS max-age, plus twice
//! this service's own cache time); an immediate one (a key compromise)
//! deletes the old keys, so their tokens fail at once. Private
//! halves are sealed with the master key and opened only when a key set is
//! loaded. The loaded [`KeySet`] is part of the tenant's state
//! (`tenancy::TenantState`), which its tenant actor owns and changes: this
//! module loads a set and makes the changes (the first key, a rotation),
//! each with its audit row.
use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use ed25519_compact::{KeyPair, PublicKey, SecretKey, Seed};
use entity::signing_key;
use ring::signature::RsaKeyPair;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::algorithms::{Algorithm, PrivateKey, VerifyingKey};
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
    pub public: VerifyingKey,
}

/// A key that signs now or will: its private half and when it signs.
struct SigningKey {
    kid: Uuid,
    secret: PrivateKey,
    signs_from: Option<DateTime<Utc>>,
    retired_at: Option<DateTime<Utc>>,
}

impl SigningKey {
    fn signs_at(&self, now: DateTime<Utc>) -> bool {
        self.signs_from.is_none_or(|from| from <= now) && self.retired_at.is_none_or(|at| at > now)
    }

    fn algorithm(&self) -> Algorithm {
        match self.secret {
            PrivateKey::Ed25519(_) => Algorithm::EdDSA,
            PrivateKey::Rsa(_) => Algorithm::RS256,
        }
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
    /// The Ed25519 key that signs now; the same set hands over to a
    /// scheduled key at its time, with no reload.
    pub fn current(&self) -> Option<(Uuid, SecretKey)> {
        match self.current_of(Algorithm::EdDSA)? {
            (kid, PrivateKey::Ed25519(secret)) => Some((kid, secret)),
            (_, PrivateKey::Rsa(_)) => None,
        }
    }

    /// The key of `algorithm` that signs now.
    pub fn current_of(&self, algorithm: Algorithm) -> Option<(Uuid, PrivateKey)> {
        let now = crate::clock::now();
        self.signing.iter().find(|k| k.signs_at(now) && k.algorithm() == algorithm).map(|k| (k.kid, k.secret.clone()))
    }

    /// The Ed25519 public key of `kid`: the only kind an access token may name.
    pub fn public(&self, kid: Uuid) -> Option<&PublicKey> {
        match self.published(kid)? {
            VerifyingKey::Ed25519(key) => Some(key),
            VerifyingKey::Rsa { .. } => None,
        }
    }

    /// The published key of `kid`, of either algorithm.
    pub fn published(&self, kid: Uuid) -> Option<&VerifyingKey> {
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
    let keys: Vec<serde_json::Value> = published.iter().map(|k| k.public.jwk(k.kid)).collect();
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

    /// Creates the application's first key of `algorithm` (with its
    /// `signing_key.created` row) unless it has one; answers whether it did.
    pub async fn create_first(&self, scope: &TenantScope, algorithm: Algorithm) -> Result<bool, DbErr> {
        let key = NewKey::generate(algorithm).await?;
        let mut txn = scope.begin().await?;
        // Creations take turns on the chain head; the second finds the first's key.
        txn.lock_tenant().await?;
        let exists = txn
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null())
            .filter(signing_key::Column::Algorithm.eq(algorithm.as_str()))
            .one(txn.conn())
            .await?
            .is_some();
        if exists {
            return Ok(false);
        }
        let kid = self.insert(&mut txn, key, None).await?;
        txn.audit(EventType::SigningKeyCreated, Some(kid), json!({"kid": kid, "alg": algorithm.as_str()})).await?;
        txn.commit().await?;
        Ok(true)
    }

    /// Schedules the next key of each algorithm the application signs
    /// with: published now, signing once every verifier holds it, when the
    /// current key retires (it stays published until its last token has
    /// expired). A rotation already scheduled is answered as it is.
    /// Rotations of one application take turns: the transaction first
    /// locks the application's audit-chain head (which its audit row would
    /// lock anyway), so a second one sees the key the first made. The
    /// answer names the Ed25519 key.
    pub async fn rotate(&self, scope: &TenantScope) -> Result<Rotation, DbErr> {
        let mut fresh = self.generate_for(scope).await?;
        let mut txn = scope.begin().await?;
        txn.lock_tenant().await?;
        let now = crate::clock::now();
        let scheduled = txn
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::SignsFrom.gt(now))
            .filter(signing_key::Column::Algorithm.eq(Algorithm::EdDSA.as_str()))
            .one(txn.conn())
            .await?;
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
        let mut rotated = None;
        // RS256 first, so that the newest row names the Ed25519 key.
        for algorithm in algorithms_of(&retiring).into_iter().rev() {
            let key = NewKey::take_or_generate(&mut fresh, algorithm).await?;
            let kid = self.insert(&mut txn, key, (!retiring.is_empty()).then_some(signs_from)).await?;
            let retired: Vec<String> =
                retiring.iter().filter(|k| k.algorithm == algorithm.as_str()).map(|k| k.id.to_string()).collect();
            let data = json!({"kid": kid, "alg": algorithm.as_str(), "signs_from": crate::clock::format(signs_from),
                "retiring": retired});
            txn.audit(EventType::SigningKeyRotated, Some(kid), data).await?;
            rotated = Some(kid);
        }
        txn.commit().await?;
        Ok(Rotation { kid: rotated.expect("every rotation makes an Ed25519 key"), signs_from })
    }

    /// A key compromise: every key the application has is deleted, so no
    /// token they signed verifies any more, and a new key of each algorithm
    /// signs at once. Signed-in users keep their sessions: their next
    /// refresh gets a token of the new key.
    pub async fn rotate_immediately(&self, scope: &TenantScope) -> Result<Rotation, DbErr> {
        let mut fresh = self.generate_for(scope).await?;
        let mut txn = scope.begin().await?;
        txn.lock_tenant().await?;
        let old = txn.find::<signing_key::Entity>().all(txn.conn()).await?;
        let ids: Vec<Uuid> = old.iter().map(|k| k.id).collect();
        txn.delete::<signing_key::Entity>(signing_key::Column::Id.is_in(ids)).await?;
        let mut rotated = None;
        for algorithm in algorithms_of(&old).into_iter().rev() {
            let key = NewKey::take_or_generate(&mut fresh, algorithm).await?;
            let kid = self.insert(&mut txn, key, None).await?;
            let deleted: Vec<String> =
                old.iter().filter(|k| k.algorithm == algorithm.as_str()).map(|k| k.id.to_string()).collect();
            let data = json!({"kid": kid, "alg": algorithm.as_str(), "immediate": true, "deleted": deleted});
            txn.audit(EventType::SigningKeyRotated, Some(kid), data).await?;
            rotated = Some(kid);
        }
        txn.commit().await?;
        Ok(Rotation { kid: rotated.expect("every rotation makes an Ed25519 key"), signs_from: crate::clock::now() })
    }

    /// New keys for the algorithms the application signs with now, made
    /// before the rotation's transaction (an RSA key takes a while).
    async fn generate_for(&self, scope: &TenantScope) -> Result<Vec<NewKey>, DbErr> {
        let current = scope
            .find::<signing_key::Entity>()
            .filter(signing_key::Column::RetiredAt.is_null())
            .all(scope.conn())
            .await?;
        let mut keys = Vec::new();
        for algorithm in algorithms_of(&current) {
            keys.push(NewKey::generate(algorithm).await?);
        }
        Ok(keys)
    }

    async fn insert(&self, txn: &mut TenantTxn, key: NewKey, signs_from: Option<DateTime<Utc>>) -> Result<Uuid, DbErr> {
        let application_id = txn.application_id();
        let id = Uuid::now_v7();
        let sealed = seal::seal(&self.master_key, &seal_context(application_id, id), &key.private);
        txn.insert(signing_key::ActiveModel::from(signing_key::Model {
            id,
            application_id,
            public_key: key.public,
            private_key_sealed: sealed,
            created_at: crate::clock::now(),
            retired_at: None,
            signs_from,
            algorithm: key.algorithm.as_str().to_string(),
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
            let broken = |what: &str| DbErr::Custom(format!("signing key {} {what}", row.id));
            let algorithm = Algorithm::parse(&row.algorithm).ok_or_else(|| broken("has an unknown algorithm"))?;
            let public =
                verifying_key(algorithm, &row.public_key).ok_or_else(|| broken("has a malformed public key"))?;
            if row.retired_at.is_none_or(|at| at > now) {
                let private =
                    seal::open(&self.master_key, &seal_context(application_id, row.id), &row.private_key_sealed)
                        .map_err(|_| broken("cannot be opened"))?;
                let secret = private_key(algorithm, &private).ok_or_else(|| broken("has a malformed private key"))?;
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

/// The algorithms of `keys`, Ed25519 always among them (every application
/// signs access tokens), in [`Algorithm`]'s order.
fn algorithms_of(keys: &[signing_key::Model]) -> Vec<Algorithm> {
    let mut algorithms: Vec<Algorithm> =
        keys.iter().filter_map(|k| Algorithm::parse(&k.algorithm)).chain([Algorithm::EdDSA]).collect();
    algorithms.sort();
    algorithms.dedup();
    algorithms
}

/// A key made and not yet stored: its public half as stored, its private
/// half to seal (an Ed25519 seed, or an RSA key's PKCS #8 DER).
struct NewKey {
    algorithm: Algorithm,
    public: Vec<u8>,
    private: Vec<u8>,
}

/// RSA keys are 2048 bits, as RFC 7518 asks of RS256 at least.
const RSA_BITS: usize = 2048;

impl NewKey {
    /// The key of `algorithm` made ahead, else one made now (an algorithm
    /// the application gained meanwhile).
    async fn take_or_generate(made: &mut Vec<NewKey>, algorithm: Algorithm) -> Result<NewKey, DbErr> {
        match made.iter().position(|k| k.algorithm == algorithm) {
            Some(at) => Ok(made.swap_remove(at)),
            None => NewKey::generate(algorithm).await,
        }
    }

    async fn generate(algorithm: Algorithm) -> Result<NewKey, DbErr> {
        match algorithm {
            Algorithm::EdDSA => {
                let pair = KeyPair::from_seed(Seed::generate());
                Ok(NewKey { algorithm, public: pair.pk.to_vec(), private: pair.sk.seed().to_vec() })
            }
            // Seconds of work at worst: off the async threads.
            Algorithm::RS256 => tokio::task::spawn_blocking(generate_rsa)
                .await
                .map_err(|err| DbErr::Custom(format!("RSA key generation stopped: {err}")))?,
        }
    }
}

fn generate_rsa() -> Result<NewKey, DbErr> {
    use rsa::{pkcs1::EncodeRsaPublicKey, pkcs8::EncodePrivateKey, RsaPrivateKey, RsaPublicKey};
    let failed = |err: &dyn std::fmt::Display| DbErr::Custom(format!("RSA key generation failed: {err}"));
    let private = RsaPrivateKey::new(&mut rand::rngs::OsRng, RSA_BITS).map_err(|err| failed(&err))?;
    let public = RsaPublicKey::from(&private).to_pkcs1_der().map_err(|err| failed(&err))?;
    let private = private.to_pkcs8_der().map_err(|err| failed(&err))?;
    Ok(NewKey { algorithm: Algorithm::RS256, public: public.into_vec(), private: private.as_bytes().to_vec() })
}

/// A stored public key: Ed25519's 32 bytes, or an RSA key's PKCS #1 DER.
fn verifying_key(algorithm: Algorithm, stored: &[u8]) -> Option<VerifyingKey> {
    match algorithm {
        Algorithm::EdDSA => PublicKey::from_slice(stored).ok().map(VerifyingKey::Ed25519),
        Algorithm::RS256 => {
            use rsa::{pkcs1::DecodeRsaPublicKey, traits::PublicKeyParts, RsaPublicKey};
            let key = RsaPublicKey::from_pkcs1_der(stored).ok()?;
            Some(VerifyingKey::Rsa { n: key.n().to_bytes_be(), e: key.e().to_bytes_be() })
        }
    }
}

/// An opened private key: an Ed25519 seed, or an RSA key's PKCS #8 DER
/// (which ring signs with, in constant time).
fn private_key(algorithm: Algorithm, opened: &[u8]) -> Option<PrivateKey> {
    match algorithm {
        Algorithm::EdDSA => {
            let seed = Seed::from_slice(opened).ok()?;
            Some(PrivateKey::Ed25519(KeyPair::from_seed(seed).sk))
        }
        Algorithm::RS256 => RsaKeyPair::from_pkcs8(opened).ok().map(|pair| PrivateKey::Rsa(Arc::new(pair))),
    }
}

pub fn seal_context(application_id: Uuid, kid: Uuid) -> String {
    format!("{application_id}/signing_key/{kid}")
}
