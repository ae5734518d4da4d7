//! The cache layer the nodes share: this node's memory (moka, with each
//! worker's copies of what it read in front: [`hot`]), Redis behind when
//! `cache.redis_url` is set, the database last. It owns one
//! read-through path (`ReadThrough`) and one invalidation path (`Bus`): the
//! service that writes invalidates, after its commit, never a handler. Redis
//! is an accelerator, never a dependency: every call has 100 ms and a breaker
//! (`SharedRedis`), and a failure is a miss. Nothing that identifies an end
//! user (emails, profiles, the contents of sessions) is written to Redis: only
//! ids in invalidation messages, and public or tenant-level documents such as
//! JWKS and directory entries.
pub mod bus;
pub mod hot;
pub mod layer;
pub mod redis;
#[cfg(test)]
pub(crate) mod testing;

use std::{
    future::Future,
    hash::Hash,
    sync::Arc,
    time::{Duration, Instant},
};

use self::hot::{Generation, HotCopies};
pub use self::{
    bus::{Bus, Invalidation},
    layer::{pair_key, ReadThrough},
    redis::SharedRedis,
};

/// A cache of values this node loads itself (never shared through Redis),
/// with each worker's copies in front ([`hot`]): for records read on every
/// request. Concurrent misses of a key share one load; a miss of this
/// thread's copy is boxed and the load is a closure, so a hit's future does
/// not carry their state (request-path futures are boxed, and a load inline
/// made every hit copy kilobytes).
pub struct LoadedCache<K: Send, V: Send> {
    shared: moka::future::Cache<K, Loaded<V>>,
    hot: Arc<HotCopies<K, V>>,
    ttl: Duration,
}

#[derive(Clone)]
struct Loaded<V> {
    value: V,
    /// moka's expiry of the entry, which a per-thread copy keeps.
    expires: Instant,
}

impl<K, V> LoadedCache<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    pub fn new(capacity: u64, ttl: Duration) -> Self {
        let shared = moka::future::Cache::builder().max_capacity(capacity).time_to_live(ttl).build();
        Self { shared, hot: Arc::default(), ttl }
    }

    /// The value of `key`: this thread's copy, the node's, else the one the
    /// future `load` makes.
    pub async fn get_or_try_load<E, F, L>(&self, key: K, load: L) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnOnce() -> F,
        F: Future<Output = Result<V, E>>,
    {
        match self.hot.get(&key) {
            Ok(value) => Ok(value),
            // Boxed: inline, moka's lookup added about 800 bytes to every
            // hit's future and to each request future holding one (the key
            // extractor's was 1,720 bytes, now 832), past the 1,032 that
            // glibc's per-thread cache serves; a larger block takes malloc's
            // slow path, a few hundred instructions more per allocation.
            Err(generation) => Box::pin(self.get_shared_or_try_load(key, load, generation)).await,
        }
    }

    async fn get_shared_or_try_load<E, F, L>(&self, key: K, load: L, generation: Generation) -> Result<V, Arc<E>>
    where
        E: Send + Sync + 'static,
        L: FnOnce() -> F,
        F: Future<Output = Result<V, E>>,
    {
        let loaded = match self.shared.get(&key).await {
            Some(loaded) => loaded,
            None => {
                let load = async { Ok(Loaded { value: load().await?, expires: Instant::now() + self.ttl }) };
                self.shared.try_get_with(key.clone(), load).await?
            }
        };
        self.hot.keep(key, loaded.value.clone(), generation, loaded.expires);
        Ok(loaded.value)
    }

    pub async fn invalidate(&self, key: &K) {
        self.shared.invalidate(key).await;
        self.hot.retire_all();
    }

    pub fn invalidate_all(&self) {
        self.shared.invalidate_all();
        self.hot.retire_all();
    }
}

impl<K: Send, V: Send> Clone for LoadedCache<K, V> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone(), hot: self.hot.clone(), ttl: self.ttl }
    }
}
