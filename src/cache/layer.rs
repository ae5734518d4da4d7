//! The read-through path: this node's memory, then Redis (shared by the
//! nodes), then the loader (the database). Redis failing only makes reads
//! slower: an error, a timeout or a value that no longer deserialises is a
//! miss.
use std::{
    future::Future,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use moka::sync::Cache;
use redis::AsyncCommands;
use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::{hot::HotCopies, redis::SharedRedis};

const LOCAL_CAPACITY: u64 = 100_000;

/// One key for an entry that belongs to two ids (an application's
/// organization): the first 128 bits of SHA-256 over both. A caller who
/// chooses the second id cannot make it name another application's entry.
pub fn pair_key(first: Uuid, second: Uuid) -> Uuid {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new().chain_update(first.as_bytes()).chain_update(second.as_bytes()).finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Uuid::from_bytes(bytes)
}

/// Concurrent misses of one key wait on one cell, so they share one Redis
/// read and one load. Dropping an entry drops its cell: a load still in
/// flight then completes for its waiters only and cannot put a value read
/// before the invalidation back in the cache. A plain `moka::future::Cache`
/// could not do that, and its `invalidate` is async where the bus's listeners
/// are not.
struct Slot<V> {
    cell: OnceCell<V>,
    /// When moka drops the entry (its time to live from now): the bound on
    /// a per-thread copy of the value.
    expires: Instant,
}

#[derive(Clone)]
pub struct ReadThrough<V: Send> {
    name: &'static str,
    /// The counter of the hot path, looked up once (a labelled look-up per
    /// read was a measurable part of a JWKS request).
    local_hits: Arc<OnceLock<metrics::Counter>>,
    /// Each worker's copies of `local`'s values, read first.
    hot: Arc<HotCopies<Uuid, V>>,
    local: Cache<Uuid, Arc<Slot<V>>>,
    local_ttl: Duration,
    redis: Option<SharedRedis>,
    shared_ttl: Duration,
}

impl<V: Serialize + DeserializeOwned + Clone + Send + Sync + 'static> ReadThrough<V> {
    /// `name` names the cache in metrics and in Redis keys
    /// (`gatehouse:{deployment}:cache:{name}:{key}`).
    pub fn new(name: &'static str, redis: Option<SharedRedis>, local_ttl: Duration, shared_ttl: Duration) -> Self {
        Self {
            name,
            local_hits: Arc::default(),
            hot: Arc::default(),
            local: Cache::builder().name(name).max_capacity(LOCAL_CAPACITY).time_to_live(local_ttl).build(),
            local_ttl,
            redis,
            shared_ttl,
        }
    }

    /// This node's copy first (this thread's, then the node's); on a miss
    /// Redis, then the future `load` makes, whose value is written to Redis.
    /// Either is kept locally.
    ///
    /// The miss path lives in its own allocation and `load` is a closure, not
    /// a future: a hit's future stays a few words instead of carrying the
    /// Redis read and the database query inline (kilobytes that every
    /// request copied when its handler's future was boxed).
    pub async fn get_with<E, F, L>(&self, key: Uuid, load: L) -> Result<V, Arc<E>>
    where
        L: FnOnce() -> F,
        F: Future<Output = Result<V, E>>,
        E: Send + Sync + 'static,
    {
        let generation = match self.hot.get(&key) {
            Ok(value) => {
                self.count_local_hit();
                return Ok(value);
            }
            Err(generation) => generation,
        };
        let slot = self.local.get_with(key, || Arc::new(Slot { cell: OnceCell::new(), expires: self.expiry() }));
        if let Some(value) = slot.cell.get() {
            self.count_local_hit();
            self.hot.keep(key, value.clone(), generation, slot.expires);
            return Ok(value.clone());
        }
        self.count("local", "miss");
        Box::pin(async move {
            let value = slot.cell.get_or_try_init(|| self.fill(key, load())).await.cloned().map_err(Arc::new)?;
            self.hot.keep(key, value.clone(), generation, slot.expires);
            Ok(value)
        })
        .await
    }

    /// The writer's path, after its commit: Redis first, so that this node
    /// cannot refill its copy from the old shared one in between.
    pub async fn invalidate(&self, key: Uuid) {
        if let Some(redis) = &self.redis {
            let shared_key = self.shared_key(redis, key);
            redis.run(self.name, |mut c| async move { c.del::<_, ()>(shared_key).await }).await;
        }
        self.invalidate_local(key);
    }

    /// The writer's path when it has the new value: Redis and this node
    /// hold it at once (other nodes drop theirs on the bus message that
    /// follows, and read this one).
    pub async fn put(&self, key: Uuid, value: V) {
        if let Some(redis) = &self.redis {
            self.write_shared(redis, self.shared_key(redis, key), &value).await;
        }
        self.local.insert(key, Arc::new(Slot { cell: OnceCell::new_with(Some(value)), expires: self.expiry() }));
        self.hot.retire_all();
    }

    /// On a bus message: another node already dropped the shared copy.
    pub fn invalidate_local(&self, key: Uuid) {
        self.local.invalidate(&key);
        self.hot.retire_all();
    }

    pub fn invalidate_all_local(&self) {
        self.local.invalidate_all();
        self.hot.retire_all();
    }

    fn expiry(&self) -> Instant {
        Instant::now() + self.local_ttl
    }

    async fn fill<E, F>(&self, key: Uuid, load: F) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
    {
        // Only a read that reached Redis is worth a write back; after an
        // error the breaker is open anyway.
        let mut write_back = false;
        if let Some(redis) = &self.redis {
            let shared_key = self.shared_key(redis, key);
            let read = redis
                .run(self.name, |mut c| {
                    let shared_key = shared_key.clone();
                    async move { c.get::<_, Option<Vec<u8>>>(shared_key).await }
                })
                .await;
            match read {
                Some(Some(bytes)) => match serde_json::from_slice(&bytes) {
                    Ok(value) => {
                        self.count("redis", "hit");
                        return Ok(value);
                    }
                    Err(err) => {
                        // An older shape of the value: load and overwrite it.
                        tracing::warn!(cache = self.name, error = %err, "shared cache entry does not deserialise");
                        self.count("redis", "error");
                        write_back = true;
                    }
                },
                Some(None) => {
                    self.count("redis", "miss");
                    write_back = true;
                }
                None => self.count("redis", "error"),
            }
        }
        let value = match load.await {
            Ok(value) => value,
            Err(err) => {
                self.count("database", "error");
                return Err(err);
            }
        };
        self.count("database", "hit");
        if let (true, Some(redis)) = (write_back, &self.redis) {
            self.write_shared(redis, self.shared_key(redis, key), &value).await;
        }
        Ok(value)
    }

    /// A writer that commits while this load is between its database read
    /// and this SET leaves the older value in Redis; `shared_ttl` bounds that.
    async fn write_shared(&self, redis: &SharedRedis, shared_key: String, value: &V) {
        let bytes = match serde_json::to_vec(value) {
            Ok(bytes) => bytes,
            Err(err) => {
                tracing::warn!(cache = self.name, error = %err, "value not written to the shared cache");
                return;
            }
        };
        let seconds = self.shared_ttl.as_secs().max(1);
        redis.run(self.name, |mut c| async move { c.set_ex::<_, _, ()>(shared_key, bytes, seconds).await }).await;
    }

    /// `gatehouse:{deployment}:cache:{name}:{key}`.
    fn shared_key(&self, redis: &SharedRedis, key: Uuid) -> String {
        redis.key(format_args!("cache:{}:{key}", self.name))
    }

    fn count_local_hit(&self) {
        self.local_hits.get_or_init(|| self.counter("local", "hit")).increment(1);
    }

    fn count(&self, layer: &'static str, outcome: &'static str) {
        self.counter(layer, outcome).increment(1);
    }

    fn counter(&self, layer: &'static str, outcome: &'static str) -> metrics::Counter {
        metrics::counter!("gatehouse_cache_requests_total", "cache" => self.name, "layer" => layer, "outcome" => outcome)
    }
}

#[cfg(test)]
mod tests {
    use std::{
        future::Ready,
        sync::{
            atomic::{AtomicUsize, Ordering},
            Mutex,
        },
        time::Instant,
    };

    use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

    use super::*;
    use crate::cache::testing::{closed_port, redis_url, shared, shared_in, silent_listener};

    const TTL: Duration = Duration::from_secs(60);

    /// A loader that counts the loads it makes.
    fn counting<'a>(calls: &'a AtomicUsize, value: &'a str) -> impl FnOnce() -> Ready<Result<String, String>> + 'a {
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(value.to_string()))
        }
    }

    fn must_not_load() -> impl FnOnce() -> Ready<Result<String, String>> {
        || std::future::ready(Err("the loader was called".to_string()))
    }

    #[tokio::test]
    async fn without_redis_the_second_read_is_local_until_invalidated() {
        // Arrange
        let cache = ReadThrough::<String>::new("test_local", None, TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        // Act
        let first = cache.get_with(key, counting(&calls, "a")).await.unwrap();
        let second = cache.get_with(key, must_not_load()).await.unwrap();
        cache.invalidate_local(key);
        let third = cache.get_with(key, counting(&calls, "b")).await.unwrap();
        // Assert
        assert_eq!((first.as_str(), second.as_str(), third.as_str()), ("a", "a", "b"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_change_made_on_another_thread_replaces_this_threads_copy() {
        // Arrange: this thread has read the value (and keeps a copy of it).
        let cache = ReadThrough::<String>::new("test_threads", None, TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        assert_eq!(cache.get_with(key, counting(&calls, "a")).await.unwrap(), "a");
        // Act: a writer on another thread puts a new value, then another drops it.
        let writer = cache.clone();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        std::thread::spawn(move || runtime.block_on(writer.put(key, "b".into()))).join().unwrap();
        let put = cache.get_with(key, must_not_load()).await.unwrap();
        let dropper = cache.clone();
        std::thread::spawn(move || dropper.invalidate_local(key)).join().unwrap();
        let reloaded = cache.get_with(key, counting(&calls, "c")).await.unwrap();
        // Assert
        assert_eq!((put.as_str(), reloaded.as_str()), ("b", "c"));
    }

    #[tokio::test]
    async fn a_failed_load_is_returned_and_not_kept() {
        let cache = ReadThrough::<String>::new("test_failure", None, TTL, TTL);
        let key = Uuid::now_v7();
        let failed = cache.get_with(key, || std::future::ready(Err::<String, _>("database down"))).await;
        assert_eq!(*failed.unwrap_err(), "database down");
        let calls = AtomicUsize::new(0);
        assert_eq!(cache.get_with(key, counting(&calls, "a")).await.unwrap(), "a");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_misses_of_one_key_share_one_load() {
        let cache = ReadThrough::<String>::new("test_coalesce", None, TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), Arc::new(AtomicUsize::new(0)));
        let readers = (0..8).map(|_| {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move {
                let load = move || async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<_, String>("a".to_string())
                };
                cache.get_with(key, load).await.unwrap()
            })
        });
        for reader in readers.collect::<Vec<_>>() {
            assert_eq!(reader.await.unwrap(), "a");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_invalidation_during_a_load_is_not_undone_by_it() {
        // Arrange: a load that waits until told, as a slow database read would.
        let cache = ReadThrough::<String>::new("test_race", None, TTL, TTL);
        let key = Uuid::now_v7();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let slow = {
            let cache = cache.clone();
            tokio::spawn(async move {
                let load = move || async move {
                    released.await.unwrap();
                    Ok::<_, String>("old".to_string())
                };
                cache.get_with(key, load).await.unwrap()
            })
        };
        tokio::task::yield_now().await;
        // Act
        cache.invalidate_local(key);
        release.send(()).unwrap();
        let old = slow.await.unwrap();
        let calls = AtomicUsize::new(0);
        let next = cache.get_with(key, counting(&calls, "new")).await.unwrap();
        // Assert
        assert_eq!((old.as_str(), next.as_str()), ("old", "new"));
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn a_value_in_redis_is_read_by_another_node_until_invalidated() {
        let Some(url) = redis_url() else { return };
        // Arrange: two nodes, one name; a key of this run only.
        let a = ReadThrough::<String>::new("test_shared", Some(shared(&url)), TTL, TTL);
        let b = ReadThrough::<String>::new("test_shared", Some(shared(&url)), TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        // Act
        let loaded = a.get_with(key, counting(&calls, "v1")).await.unwrap();
        let from_redis = b.get_with(key, must_not_load()).await.unwrap();
        a.invalidate(key).await;
        b.invalidate_local(key);
        let reloaded = b.get_with(key, counting(&calls, "v2")).await.unwrap();
        let now_shared = a.get_with(key, must_not_load()).await.unwrap();
        // Assert
        assert_eq!((loaded.as_str(), from_redis.as_str()), ("v1", "v1"));
        assert_eq!((reloaded.as_str(), now_shared.as_str()), ("v2", "v2"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        a.invalidate(key).await;
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn two_deployments_on_one_redis_do_not_read_each_others_entries() {
        let Some(url) = redis_url() else { return };
        // Arrange: one cache name and one key, in two deployments.
        let staging = ReadThrough::<String>::new("test_deployments", Some(shared_in(&url, "staging")), TTL, TTL);
        let production = ReadThrough::<String>::new("test_deployments", Some(shared_in(&url, "production")), TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        // Act
        let in_staging = staging.get_with(key, counting(&calls, "staging")).await.unwrap();
        let in_production = production.get_with(key, counting(&calls, "production")).await.unwrap();
        // Assert: production loaded its own instead of reading staging's.
        assert_eq!((in_staging.as_str(), in_production.as_str()), ("staging", "production"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        staging.invalidate(key).await;
        production.invalidate(key).await;
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn a_value_that_no_longer_deserialises_is_a_miss() {
        let Some(url) = redis_url() else { return };
        let redis = shared(&url);
        let key = Uuid::now_v7();
        let shared_key = redis.key(format_args!("cache:test_shape:{key}"));
        let stored = redis.run("test", |mut c| async move { c.set_ex::<_, _, ()>(shared_key, "{not json", 60).await });
        assert!(stored.await.is_some());
        let cache = ReadThrough::<String>::new("test_shape", Some(redis), TTL, TTL);
        let calls = AtomicUsize::new(0);
        assert_eq!(cache.get_with(key, counting(&calls, "a")).await.unwrap(), "a");
        cache.invalidate(key).await;
    }

    #[tokio::test]
    async fn a_redis_that_refuses_connections_does_not_fail_or_slow_the_read() {
        let redis = shared(&format!("redis://127.0.0.1:{}", closed_port()));
        let cache = ReadThrough::<String>::new("test_refused", Some(redis), TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        let started = Instant::now();
        assert_eq!(cache.get_with(key, counting(&calls, "a")).await.unwrap(), "a");
        assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_redis_that_never_answers_does_not_fail_or_slow_the_read() {
        let listener = silent_listener();
        let redis = shared(&format!("redis://{}", listener.local_addr().unwrap()));
        let cache = ReadThrough::<String>::new("test_silent", Some(redis), TTL, TTL);
        let (key, calls) = (Uuid::now_v7(), AtomicUsize::new(0));
        let started = Instant::now();
        assert_eq!(cache.get_with(key, counting(&calls, "a")).await.unwrap(), "a");
        cache.invalidate(key).await;
        assert_eq!(cache.get_with(key, counting(&calls, "b")).await.unwrap(), "b");
        assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    /// Records `layer/outcome` of every `gatehouse_cache_requests_total` increment.
    #[derive(Default)]
    struct Outcomes(Arc<Mutex<Vec<String>>>);

    struct Increment(Arc<Mutex<Vec<String>>>, String);

    impl CounterFn for Increment {
        fn increment(&self, _: u64) {
            self.0.lock().unwrap().push(self.1.clone());
        }
        fn absolute(&self, _: u64) {}
    }

    impl Recorder for Outcomes {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            let label = |name: &str| key.labels().find(|l| l.key() == name).map(|l| l.value().to_string());
            let seen = format!("{}/{}", label("layer").unwrap_or_default(), label("outcome").unwrap_or_default());
            Counter::from_arc(Arc::new(Increment(self.0.clone(), seen)))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    #[test]
    fn each_layer_counts_its_outcome() {
        // Arrange: the recorder is per thread, so the reads run on this one.
        let recorder = Outcomes::default();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let refused = shared(&format!("redis://127.0.0.1:{}", closed_port()));
        let local = ReadThrough::<String>::new("test_metrics", None, TTL, TTL);
        let behind_redis = ReadThrough::<String>::new("test_metrics", Some(refused), TTL, TTL);
        let key = Uuid::now_v7();
        // Act
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                local.get_with(key, || std::future::ready(Ok::<_, String>("a".into()))).await.unwrap();
                local.get_with(key, must_not_load()).await.unwrap();
                let _ = behind_redis.get_with(key, || std::future::ready(Err::<String, _>("down"))).await;
            })
        });
        // Assert
        let seen = recorder.0.lock().unwrap().clone();
        let expected = ["local/miss", "database/hit", "local/hit", "local/miss", "redis/error", "database/error"];
        assert_eq!(seen, expected);
    }
}
