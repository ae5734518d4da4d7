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

pub use self::{
    bus::{Bus, Invalidation},
    layer::{pair_key, ReadThrough},
    redis::SharedRedis,
};
