//! What a tenant actor owns: the application's state, published as an
//! immutable snapshot that handlers read without a mailbox hop.
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use super::parts::{LoadedParts, TenantPart};
use crate::{application::Tenant, tokens::keys::KeySet};

/// One application's state, as loaded by its actor after its last change.
pub struct TenantState {
    /// When this node loaded it (microseconds since the epoch): an
    /// invalidation with a newer version makes it stale.
    pub version: u64,
    /// Settings and CORS origins (the directory entry).
    pub settings: Tenant,
    /// The signing keys: the current one and those still published.
    pub keys: Arc<KeySet>,
    /// The areas' tenant-wide settings.
    parts: LoadedParts,
    loaded_at: Instant,
}

impl TenantState {
    pub(super) fn new(version: u64, settings: Tenant, keys: KeySet, parts: LoadedParts) -> Self {
        TenantState { version, settings, keys: Arc::new(keys), parts, loaded_at: Instant::now() }
    }

    /// An area's tenant-wide setting ([`TenantPart`]).
    pub fn part<P: TenantPart>(&self) -> Arc<P> {
        self.parts.get()
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
