//! What a tenant actor owns: the application's state, published as an
//! immutable snapshot that handlers read without a mailbox hop.
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use entity::{hook, messaging_provider, oauth_provider, sod_policy};

use super::Tenant;
use crate::{service::entitlements::Catalog, tokens::keys::KeySet};

/// One application's state, as loaded by its actor after its last change.
pub struct TenantState {
    /// When this node loaded it (microseconds since the epoch): an
    /// invalidation with a newer version makes it stale.
    pub version: u64,
    /// Settings and CORS origins (the directory entry).
    pub settings: Tenant,
    /// The signing keys: the current one and those still published.
    pub keys: Arc<KeySet>,
    /// Every hook, in the order they run.
    pub hooks: Arc<[hook::Model]>,
    /// The messaging providers, one per channel at most.
    pub messaging: Arc<[messaging_provider::Model]>,
    /// The identity providers' settings, one per provider at most; client
    /// secrets stay sealed (opened only at a sign-in's code exchange).
    pub oauth: Arc<[oauth_provider::Model]>,
    /// The separation-of-duties policies every grant of a role passes.
    pub sod_policies: Arc<[sod_policy::Model]>,
    /// The features and plans entitlements resolve against.
    pub entitlements: Arc<Catalog>,
    loaded_at: Instant,
}

/// The tenant-wide configuration a load reads from the shard, beside the
/// settings (from the catalog) and the signing keys.
pub struct Configuration {
    pub hooks: Vec<hook::Model>,
    pub messaging: Vec<messaging_provider::Model>,
    pub oauth: Vec<oauth_provider::Model>,
    pub sod_policies: Vec<sod_policy::Model>,
    pub entitlements: Catalog,
}

impl TenantState {
    pub fn new(version: u64, settings: Tenant, keys: KeySet, configuration: Configuration) -> Self {
        let Configuration { hooks, messaging, oauth, sod_policies, entitlements } = configuration;
        TenantState {
            version,
            settings,
            keys: Arc::new(keys),
            hooks: hooks.into(),
            messaging: messaging.into(),
            oauth: oauth.into(),
            sod_policies: sod_policies.into(),
            entitlements: Arc::new(entitlements),
            loaded_at: Instant::now(),
        }
    }

    /// Trusted for `ttl` after loading (long while invalidations arrive on
    /// the bus, short without them).
    pub fn is_fresh(&self, ttl: Duration) -> bool {
        self.loaded_at.elapsed() < ttl
    }
}

/// A version for a state loaded or changed now.
pub fn version_now() -> u64 {
    crate::clock::now().timestamp_micros() as u64
}
