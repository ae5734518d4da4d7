//! Token buckets per key (an application, an address, an email). With
//! `cache.redis_url` the buckets live in Redis and are shared by every node;
//! when Redis cannot answer within a few milliseconds the node falls back to
//! its own buckets (documented degradation: limits become per node), and
//! retries Redis a few seconds later. Without Redis, buckets are per node.
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderName, HeaderValue},
    middleware::Next,
    Error, HttpMessage, HttpRequest,
};
use moka::sync::Cache;

use crate::{
    cache::SharedRedis,
    error::{ApiError, Code},
};

/// Refill, take one token, remember; all in one step on Redis's clock.
const SCRIPT: &str = r#"
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
"#;

/// The state of a bucket after one take: what the `RateLimit-*` headers say.
#[derive(Clone, Copy, Debug)]
pub struct Quota {
    pub limit: u64,
    pub remaining: u64,
    /// Seconds until the bucket is full again.
    pub reset: u64,
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

#[derive(Clone)]
pub struct RateLimiter {
    local: Cache<String, Arc<Mutex<Bucket>>>,
    redis: Option<SharedBuckets>,
}

#[derive(Clone)]
struct SharedBuckets {
    redis: SharedRedis,
    script: Arc<redis::Script>,
}

impl RateLimiter {
    /// Buckets in the node's Redis (sharing its breaker), or on this node only.
    pub fn with_shared(redis: Option<SharedRedis>) -> Self {
        Self {
            local: Cache::builder().max_capacity(100_000).time_to_idle(Duration::from_secs(300)).build(),
            redis: redis.map(|redis| SharedBuckets { redis, script: Arc::new(redis::Script::new(SCRIPT)) }),
        }
    }

    /// Takes one token from `key`'s bucket, refilled at `per_second` up to
    /// `burst`. A rate of 0 means no limit (and no quota to report).
    pub async fn take(&self, key: &str, per_second: f64, burst: f64) -> Result<Option<Quota>, (ApiError, Quota)> {
        if per_second <= 0.0 {
            return Ok(None);
        }
        let tokens_left = match &self.redis {
            Some(shared) => match shared.take(key, per_second, burst).await {
                Some(result) => result,
                None => self.take_local(key, per_second, burst),
            },
            None => self.take_local(key, per_second, burst),
        };
        let (allowed, tokens) = tokens_left;
        let quota = Quota {
            limit: burst as u64,
            remaining: tokens.max(0.0).floor() as u64,
            reset: ((burst - tokens) / per_second).ceil().max(0.0) as u64,
        };
        if allowed {
            return Ok(Some(quota));
        }
        let wait = ((1.0 - tokens) / per_second).ceil().max(1.0) as u64;
        Err((ApiError::new(Code::RateLimited, "Too many requests; slow down.").with_retry_after(wait), quota))
    }

    /// Takes one token for a request; the bucket's state goes on the
    /// request for the `RateLimit-*` headers, refused or not.
    pub async fn take_for(&self, req: &HttpRequest, key: &str, per_second: f64, burst: f64) -> Result<(), ApiError> {
        match self.take(key, per_second, burst).await {
            Ok(quota) => {
                if let Some(quota) = quota {
                    req.extensions_mut().insert(quota);
                }
                Ok(())
            }
            Err((refused, quota)) => {
                req.extensions_mut().insert(quota);
                Err(refused)
            }
        }
    }

    fn take_local(&self, key: &str, per_second: f64, burst: f64) -> (bool, f64) {
        let bucket =
            self.local.get_with_by_ref(key, || Arc::new(Mutex::new(Bucket { tokens: burst, updated: Instant::now() })));
        let mut bucket = bucket.lock().expect("bucket lock");
        let now = Instant::now();
        bucket.tokens = (bucket.tokens + now.duration_since(bucket.updated).as_secs_f64() * per_second).min(burst);
        bucket.updated = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        (allowed, bucket.tokens)
    }
}

impl SharedBuckets {
    /// `None` when Redis did not answer: the caller falls back to local buckets.
    async fn take(&self, key: &str, per_second: f64, burst: f64) -> Option<(bool, f64)> {
        let script = self.script.clone();
        let key = self.redis.key(format_args!("rate:{key}"));
        let taken = self.redis.run("rate limits", |mut connection| async move {
            script.key(key).arg(per_second).arg(burst).invoke_async::<(i64, String)>(&mut connection).await
        });
        let (allowed, tokens) = taken.await?;
        Some((allowed == 1, tokens.parse().unwrap_or(0.0)))
    }
}

/// Writes the `RateLimit-*` headers of the quota a request consumed.
pub async fn headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let mut response = next.call(req).await?;
    let quota = response.request().extensions().get::<Quota>().copied();
    if let Some(quota) = quota {
        for (name, value) in [
            ("ratelimit-limit", quota.limit),
            ("ratelimit-remaining", quota.remaining),
            ("ratelimit-reset", quota.reset),
        ] {
            response.headers_mut().insert(HeaderName::from_static(name), HeaderValue::from(value));
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn a_bucket_allows_its_burst_then_refuses_with_a_wait() {
        let limiter = RateLimiter::with_shared(None);
        assert_eq!(limiter.take("a", 1.0, 2.0).await.unwrap().unwrap().remaining, 1);
        assert_eq!(limiter.take("a", 1.0, 2.0).await.unwrap().unwrap().remaining, 0);
        let (refused, quota) = limiter.take("a", 1.0, 2.0).await.unwrap_err();
        assert_eq!((refused.retry_after, quota.remaining), (Some(1), 0));
        assert!(limiter.take("b", 1.0, 2.0).await.is_ok(), "buckets are per key");
        assert!(limiter.take("a", 0.0, 0.0).await.unwrap().is_none(), "0 turns the limit off");
    }

    #[actix_web::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn nodes_that_share_redis_share_a_bucket() {
        let Ok(url) = std::env::var("GATEHOUSE_TEST_REDIS_URL") else {
            eprintln!("skipped: GATEHOUSE_TEST_REDIS_URL is not set");
            return;
        };
        let node = || RateLimiter::with_shared(Some(crate::cache::testing::shared(&url)));
        let (a, b) = (node(), node());
        let key = format!("test:{}", uuid::Uuid::now_v7());
        assert_eq!(a.take(&key, 1.0, 2.0).await.unwrap().unwrap().remaining, 1);
        assert_eq!(b.take(&key, 1.0, 2.0).await.unwrap().unwrap().remaining, 0);
        assert!(a.take(&key, 1.0, 2.0).await.is_err(), "B's take counted on A");
    }
}
