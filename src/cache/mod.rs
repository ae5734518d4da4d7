//! The cache layer the nodes share: this node's memory (moka), Redis behind when
//! `cache.redis_url` is set, the database last. It owns one
//! read-through path (`ReadThrough`) and one invalidation path (`Bus`): the
//! service that writes invalidates, after its commit, never a handler. Redis
//! is an accelerator, never a dependency: every call has 100 ms and a breaker
//! (`SharedRedis`), and a failure is a miss. Nothing that identifies an end
//! user (emails, profiles, the contents of sessions) is written to Redis: only
//! ids in invalidation messages, and public or tenant-level documents such as
//! JWKS and directory entries.
pub mod bus;
pub mod layer;
pub mod redis;
#[cfg(test)]
pub(crate) mod testing;

use std::{future::Future, hash::Hash, sync::Arc, time::Duration};

pub use self::{
    bus::{Bus, Invalidation},
    layer::{pair_key, ReadThrough},
    redis::SharedRedis,
};

/// A cache of values this node loads itself (never shared through Redis),
/// for records read on every request. Concurrent misses of a key share one
/// load.
pub struct LoadedCache<K, V> {
    shared: moka::future::Cache<K, V>,
}

impl<K, V> LoadedCache<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    pub fn new(capacity: u64, ttl: Duration) -> Self {
        Self { shared: moka::future::Cache::builder().max_capacity(capacity).time_to_live(ttl).build() }
    }

    /// The value of `key`: the node's, else the one the future `load` makes.
    pub async fn get_or_try_load<E, F, L>(&self, key: K, load: L) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnOnce() -> F,
        F: Future<Output = Result<V, E>>,
    {
        self.shared.try_get_with(key, async move { load().await }).await
    }

    pub async fn invalidate(&self, key: &K) {
        self.shared.invalidate(key).await;
    }

    pub fn invalidate_all(&self) {
        self.shared.invalidate_all();
    }
}

impl<K, V> Clone for LoadedCache<K, V> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}
