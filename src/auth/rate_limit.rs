//! Token buckets per key (an application, an address, an email). Local to
//! the node; bounded in how many buckets it keeps.
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use moka::sync::Cache;

use crate::error::{ApiError, Code};

struct Bucket {
    tokens: f64,
    updated: Instant,
}

#[derive(Clone)]
pub struct RateLimiter {
    buckets: Cache<String, Arc<Mutex<Bucket>>>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self {
            buckets: Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(300))
                .build(),
        }
    }
}

impl RateLimiter {
    /// Takes one token from `key`'s bucket, refilled at `per_second` up to
    /// `burst`. A rate of 0 means no limit.
    pub fn take(&self, key: &str, per_second: f64, burst: f64) -> Result<(), ApiError> {
        if per_second <= 0.0 {
            return Ok(());
        }
        let bucket = self.buckets.get_with_by_ref(key, || {
            Arc::new(Mutex::new(Bucket {
                tokens: burst,
                updated: Instant::now(),
            }))
        });
        let mut bucket = bucket.lock().expect("bucket lock");
        let now = Instant::now();
        bucket.tokens = (bucket.tokens
            + now.duration_since(bucket.updated).as_secs_f64() * per_second)
            .min(burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - bucket.tokens) / per_second).ceil().max(1.0) as u64;
        Err(
            ApiError::new(Code::RateLimited, "Too many requests; slow down.")
                .with_retry_after(wait),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_with_a_wait() {
        let limiter = RateLimiter::default();
        assert!(limiter.take("a", 1.0, 2.0).is_ok());
        assert!(limiter.take("a", 1.0, 2.0).is_ok());
        let refused = limiter.take("a", 1.0, 2.0).unwrap_err();
        assert_eq!(refused.retry_after, Some(1));
        assert!(limiter.take("b", 1.0, 2.0).is_ok(), "buckets are per key");
        assert!(limiter.take("a", 0.0, 0.0).is_ok(), "0 turns the limit off");
    }
}
