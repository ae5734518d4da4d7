//! One Redis handle for the whole node, with a circuit breaker. Redis only
//! ever makes things faster or shared; it is never needed to answer. So every
//! call gets 100 ms, and when Redis misses that (or errors) callers take their
//! fallback and Redis is left alone for 5 s instead of costing every request
//! another 100 ms.
//!
//! Every Redis key and channel is named through [`SharedRedis::key`]:
//! `gatehouse:{deployment}:{rest}`, so two deployments sharing one Redis
//! (`deployment.name`) neither read each other's entries nor hear each
//! other's invalidations.
use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use crate::config::DeploymentName;

const WAIT: Duration = Duration::from_millis(100);
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// The manager reconnects in the background with these; without a bound its
/// backoff grows to seconds and a Redis that came back stays unused.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const MAX_RECONNECT_DELAY_MS: u64 = 1_000;

#[derive(Clone)]
pub struct SharedRedis {
    client: redis::Client,
    /// `gatehouse:{deployment}:`, the start of every key and channel.
    prefix: Arc<str>,
    /// Made on first use: a node starts while Redis is down.
    connection: Arc<OnceCell<ConnectionManager>>,
    down_until: Arc<Mutex<Option<Instant>>>,
}

impl SharedRedis {
    /// Redis as `deployment` uses it.
    pub fn new(client: redis::Client, deployment: &DeploymentName) -> Self {
        let prefix = Arc::from(format!("gatehouse:{deployment}:"));
        Self { client, prefix, connection: Arc::default(), down_until: Arc::default() }
    }

    /// The name of a key or channel in this deployment's namespace:
    /// `gatehouse:{deployment}:{rest}`. Every key and channel the service
    /// uses is made here.
    pub fn key(&self, rest: impl std::fmt::Display) -> String {
        format!("{}{rest}", self.prefix)
    }

    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// Whether the breaker is open: Redis failed less than 5 s ago.
    pub fn is_down(&self) -> bool {
        self.down_until.lock().expect("breaker lock").is_some_and(|until| Instant::now() < until)
    }

    /// Closes the breaker: something else (the bus's subscription) found
    /// Redis answering again.
    pub fn recovered(&self) {
        *self.down_until.lock().expect("breaker lock") = None;
    }

    /// Runs `f` on a multiplexed connection within 100 ms; `None` (and the
    /// breaker opens for 5 s) when Redis does not answer or errors. `what`
    /// names the caller in the log.
    pub async fn run<T, F, Fut>(&self, what: &'static str, f: F) -> Option<T>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        if self.is_down() {
            return None;
        }
        self.run_past_breaker(what, f).await
    }

    /// [`Self::run`] even while the breaker is open (a failure still opens it).
    pub async fn run_past_breaker<T, F, Fut>(&self, what: &'static str, f: F) -> Option<T>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let attempt = async {
            let connection = self.connection.get_or_try_init(|| self.connect()).await?.clone();
            f(connection).await
        };
        match tokio::time::timeout(WAIT, attempt).await {
            Ok(Ok(value)) => Some(value),
            // The manager is already reconnecting: the next call finds out
            // whether Redis is back, instead of every call waiting 5 s after
            // a Redis restart. A Redis that stays down makes that next call
            // wait for the reconnection, which times out and opens the breaker.
            Ok(Err(err)) if err.is_unrecoverable_error() => {
                tracing::warn!(error = %err, what, "Redis connection lost; falling back");
                None
            }
            outcome => {
                match outcome {
                    Ok(Err(err)) => tracing::warn!(error = %err, what, "Redis failed; falling back for 5 s"),
                    _ => tracing::warn!(what, "Redis did not answer within 100 ms; falling back for 5 s"),
                }
                *self.down_until.lock().expect("breaker lock") = Some(Instant::now() + RETRY_AFTER);
                None
            }
        }
    }

    async fn connect(&self) -> redis::RedisResult<ConnectionManager> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(CONNECT_TIMEOUT)
            .set_max_delay(MAX_RECONNECT_DELAY_MS);
        ConnectionManager::new_with_config(self.client.clone(), config).await
    }
}

#[cfg(test)]
mod tests {
    use crate::cache::testing::{closed_port, redis_url, shared, shared_in};

    #[test]
    fn every_key_is_under_the_deployment() {
        let redis = shared_in("redis://127.0.0.1:1", "staging");
        assert_eq!(redis.key("invalidations"), "gatehouse:staging:invalidations");
        assert_eq!(redis.key(format_args!("cache:jwks:{}", 7)), "gatehouse:staging:cache:jwks:7");
        assert_eq!(shared("redis://127.0.0.1:1").key("rate:x"), "gatehouse:default:rate:x");
    }

    #[tokio::test]
    async fn a_redis_that_refuses_opens_the_breaker_and_is_not_tried_again() {
        // Arrange
        let redis = shared(&format!("redis://127.0.0.1:{}", closed_port()));
        // Act
        let first =
            redis.run("test", |mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await }).await;
        let second = redis.run("test", |_| async { Ok::<_, redis::RedisError>(1) }).await;
        // Assert
        assert_eq!(first, None);
        assert!(redis.is_down());
        assert_eq!(second, None, "the breaker is open: `f` is not run");
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn a_redis_that_answers_runs_the_command() {
        let Some(url) = redis_url() else { return };
        let redis = shared(&url);
        let pong =
            redis.run("test", |mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await }).await;
        assert_eq!(pong.as_deref(), Some("PONG"));
        assert!(!redis.is_down());
    }
}
