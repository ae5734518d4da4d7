//! The cache layer the nodes share: this node's memory (moka) in front,
//! Redis behind when `cache.redis_url` is set, the database last. It owns one
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
mod testing;

use std::{future::Future, hash::Hash, sync::Arc};

pub use self::{
    bus::{Bus, Invalidation},
    layer::{pair_key, ReadThrough},
    redis::SharedRedis,
};

/// A hit in this node's `cache`, else the value of the future `load` makes
/// (concurrent misses of a key share one load). The miss is boxed and
/// `load` is a closure, so a hit's future does not carry the load's state:
/// request-path futures are boxed, and a load inline made every hit copy
/// kilobytes.
pub async fn get_or_try_load<K, V, E, F, L>(cache: &moka::future::Cache<K, V>, key: K, load: L) -> Result<V, Arc<E>>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    E: Send + Sync + 'static,
    L: FnOnce() -> F,
    F: Future<Output = Result<V, E>>,
{
    if let Some(value) = cache.get(&key).await {
        return Ok(value);
    }
    Box::pin(cache.try_get_with(key, load())).await
}
