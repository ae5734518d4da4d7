//! Invalidations across nodes over Redis pub/sub. Delivery is best effort:
//! a message published while Redis is away is lost, and the TTLs bound how
//! long the other nodes keep the old copy. A node that lost its subscription
//! may have missed messages, so when it is back it drops every local copy
//! (`Invalidation::All`).
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, RwLock, Weak,
    },
    time::Duration,
};

use futures_util::StreamExt;
use redis::{
    aio::{PubSubSink, PubSubStream},
    AsyncCommands,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::redis::SharedRedis;

/// The channel, under the deployment's namespace ([`SharedRedis::key`]).
const CHANNEL: &str = "invalidations";
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// A subscription only hears messages, so a Redis that stopped answering
/// (rather than closing the connection) would go unnoticed without a PING.
/// Together these notice it within about a second.
const PING_EVERY: Duration = Duration::from_millis(500);
const PING_WAIT: Duration = Duration::from_millis(500);
const CONNECT_WAIT: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Invalidation {
    /// A tenant's snapshot changed (settings, signing keys, hooks…); `version` is the new version.
    Tenant { application_id: Uuid, version: u64 },
    /// A secret API key changed (revoked).
    ApiKey { application_id: Uuid, key_id: Uuid },
    /// The connected account's status changed (a processor event, a new link).
    ConnectStatus { application_id: Uuid },
    /// An organization's entitlement inputs changed (its plan, an override)
    /// or it was deleted.
    Organization { application_id: Uuid, organization_id: Uuid },
    /// A node joined or left the deployment: read the route table now
    /// (`region::membership`).
    Nodes,
    // Personal keys, service accounts with their keys, and sessions are read
    // from the database on every use (nothing caches them), so their
    // revocations (and a service account disabled or deleted) need no message.
    /// Never sent on the wire: raised locally when the subscription
    /// (re)connects after a loss, because messages may have been missed;
    /// every local copy must be dropped.
    All,
}

/// What goes on the channel; `node` lets a node skip its own messages,
/// whose listeners already ran when it published.
#[derive(Serialize, Deserialize)]
struct Envelope {
    node: Uuid,
    invalidation: Invalidation,
}

type Listener = Arc<dyn Fn(&Invalidation) + Send + Sync>;

#[derive(Clone)]
pub struct Bus {
    inner: Arc<Inner>,
}

struct Inner {
    node: Uuid,
    listeners: RwLock<Vec<Listener>>,
    redis: Option<SharedRedis>,
    /// `gatehouse:{deployment}:invalidations`; empty without Redis.
    channel: String,
    /// `None` without Redis.
    connected: Option<AtomicBool>,
}

impl Bus {
    /// No Redis: publish reaches this node's listeners only.
    pub fn local() -> Bus {
        Bus { inner: Arc::new(Inner::new(None)) }
    }

    /// Subscribes in a task that reconnects by itself and ends with the last
    /// clone of the bus. Must be called inside a tokio runtime.
    pub fn start(redis: SharedRedis) -> Bus {
        let client = redis.client().clone();
        let inner = Arc::new(Inner::new(Some(redis)));
        tokio::spawn(subscribe_forever(Arc::downgrade(&inner), client, inner.channel.clone()));
        Bus { inner }
    }

    /// Listeners are cheap, synchronous and must not block (they drop cache
    /// entries); they are called in registration order.
    pub fn listen(&self, f: impl Fn(&Invalidation) + Send + Sync + 'static) {
        self.inner.listeners.write().expect("listeners lock").push(Arc::new(f));
    }

    /// This node's listeners run before this returns; the other nodes hear of
    /// it through Redis, best effort: a failure is logged, not returned.
    /// `All` stays on this node.
    pub async fn publish(&self, invalidation: Invalidation) {
        self.inner.notify(&invalidation);
        let Some(redis) = &self.inner.redis else { return };
        if invalidation == Invalidation::All {
            return;
        }
        let envelope = Envelope { node: self.inner.node, invalidation };
        let payload = serde_json::to_string(&envelope).expect("an invalidation serialises");
        // Not held back by the breaker another use opened: a change's one
        // message is worth its own 100 ms attempt.
        let channel = self.inner.channel.clone();
        let sent = redis.run_past_breaker("invalidation bus", |mut c| async move {
            c.publish::<_, _, i64>(channel, payload).await
        });
        if sent.await.is_none() {
            tracing::warn!(
                invalidation = ?envelope.invalidation,
                "invalidation not sent to the other nodes; their copies expire with the TTLs"
            );
        }
    }

    /// `None` without Redis; `Some(false)` while the subscription is down.
    /// This node's id on the bus (random per process).
    pub fn node(&self) -> Uuid {
        self.inner.node
    }

    pub fn connected(&self) -> Option<bool> {
        self.inner.connected.as_ref().map(|connected| connected.load(Ordering::Acquire))
    }
}

impl Inner {
    fn new(redis: Option<SharedRedis>) -> Self {
        let connected = redis.as_ref().map(|_| AtomicBool::new(false));
        let channel = redis.as_ref().map(|r| r.key(CHANNEL)).unwrap_or_default();
        let node = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
        Self { node, listeners: RwLock::default(), redis, channel, connected }
    }

    fn notify(&self, invalidation: &Invalidation) {
        // A copy, so a listener that registers another cannot deadlock.
        let listeners = self.listeners.read().expect("listeners lock").clone();
        for listener in listeners {
            listener(invalidation);
        }
    }

    fn receive(&self, payload: &[u8]) {
        match serde_json::from_slice::<Envelope>(payload) {
            Ok(envelope) if envelope.node == self.node => {}
            Ok(envelope) => self.notify(&envelope.invalidation),
            Err(err) => tracing::warn!(error = %err, "unreadable invalidation ignored"),
        }
    }

    fn set_connected(&self, connected: bool) {
        if let Some(flag) = &self.connected {
            flag.store(connected, Ordering::Release);
        }
    }
}

/// Why `watch` returned.
enum Ended {
    Lost(&'static str),
    BusDropped,
}

async fn subscribe_forever(inner: Weak<Inner>, client: redis::Client, channel: String) {
    let mut backoff = FIRST_BACKOFF;
    // A first attempt that failed counts as a loss too: reads made
    // meanwhile may have missed messages.
    let mut lost = false;
    let mut failures = 0u32;
    loop {
        match subscribe(&client, &channel).await {
            Ok((sink, stream)) => {
                let Some(bus) = inner.upgrade() else { return };
                bus.set_connected(true);
                // Redis answers again: this node's other uses need not wait
                // out the rest of the breaker's 5 s (publishes among them).
                if let Some(redis) = &bus.redis {
                    redis.recovered();
                }
                if lost {
                    tracing::info!("invalidation bus subscribed again; dropping every local copy");
                    bus.notify(&Invalidation::All);
                }
                drop(bus);
                (backoff, failures) = (FIRST_BACKOFF, 0);
                let reason = match watch(&inner, sink, stream).await {
                    Ended::Lost(reason) => reason,
                    Ended::BusDropped => return,
                };
                let Some(bus) = inner.upgrade() else { return };
                bus.set_connected(false);
                tracing::warn!(reason, "invalidation bus lost its subscription; reconnecting");
            }
            Err(err) => {
                failures += 1;
                // One warning per outage, not one a second.
                if failures == 1 {
                    tracing::warn!(error = %err, "invalidation bus cannot subscribe; retrying");
                } else {
                    tracing::debug!(error = %err, failures, "invalidation bus cannot subscribe; retrying");
                }
            }
        }
        lost = true;
        if inner.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn subscribe(client: &redis::Client, channel: &str) -> redis::RedisResult<(PubSubSink, PubSubStream)> {
    let attempt = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok(pubsub.split())
    };
    tokio::time::timeout(CONNECT_WAIT, attempt)
        .await
        .unwrap_or_else(|_| Err(redis::RedisError::from((redis::ErrorKind::IoError, "subscribing timed out"))))
}

/// Hands messages to the listeners until the subscription is lost (the
/// stream ends, or a PING goes unanswered) or the bus is dropped.
async fn watch(inner: &Weak<Inner>, mut sink: PubSubSink, mut stream: PubSubStream) -> Ended {
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = stream.next() => {
                let Some(message) = message else { return Ended::Lost("the connection closed") };
                let Some(bus) = inner.upgrade() else { return Ended::BusDropped };
                bus.receive(message.get_payload_bytes());
            }
            _ = ping.tick() => {
                if inner.strong_count() == 0 {
                    return Ended::BusDropped;
                }
                // In subscribed mode Redis answers `["pong", ""]`, not a string.
                match tokio::time::timeout(PING_WAIT, sink.ping::<redis::Value>()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(_)) => return Ended::Lost("PING failed"),
                    Err(_) => return Ended::Lost("PING went unanswered"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::cache::testing::{eventually, redis_url, shared, shared_in, PrivateRedis};

    const SOON: Duration = Duration::from_millis(200);
    const RECONNECT: Duration = Duration::from_secs(3);

    /// A listener that keeps what it hears.
    fn recorded(bus: &Bus) -> Arc<Mutex<Vec<Invalidation>>> {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        bus.listen(move |invalidation| sink.lock().unwrap().push(invalidation.clone()));
        heard
    }

    fn tenant() -> Invalidation {
        Invalidation::Tenant { application_id: Uuid::now_v7(), version: 7 }
    }

    async fn subscribed(bus: &Bus) -> bool {
        eventually(RECONNECT, || bus.connected() == Some(true)).await
    }

    #[test]
    fn the_wire_format_names_the_node_and_the_kind() {
        let (node, key_id, application_id) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let envelope = Envelope { node, invalidation: Invalidation::ApiKey { application_id, key_id } };
        let json: serde_json::Value = serde_json::to_value(&envelope).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"node": node, "invalidation": {"kind": "api_key", "application_id": application_id, "key_id": key_id}})
        );
    }

    #[tokio::test]
    async fn a_local_bus_calls_its_listeners_in_order_before_publish_returns() {
        let bus = Bus::local();
        let order = Arc::new(Mutex::new(Vec::new()));
        for n in 1..=2 {
            let order = order.clone();
            bus.listen(move |_| order.lock().unwrap().push(n));
        }
        bus.publish(tenant()).await;
        assert_eq!(*order.lock().unwrap(), [1, 2]);
        assert_eq!(bus.connected(), None);
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn another_node_hears_a_publish_and_the_publisher_hears_it_once() {
        let Some(url) = redis_url() else { return };
        // Arrange
        let (a, b) = (Bus::start(shared(&url)), Bus::start(shared(&url)));
        let (heard_by_a, heard_by_b) = (recorded(&a), recorded(&b));
        assert!(subscribed(&a).await && subscribed(&b).await, "both nodes subscribe");
        let invalidation = tenant();
        // Act
        a.publish(invalidation.clone()).await;
        // Assert
        assert_eq!(*heard_by_a.lock().unwrap(), std::slice::from_ref(&invalidation), "at once, before publish returns");
        let is_heard = || heard_by_b.lock().unwrap().contains(&invalidation);
        assert!(eventually(SOON, is_heard).await, "B hears A within 200 ms");
        tokio::time::sleep(SOON).await;
        assert_eq!(*heard_by_a.lock().unwrap(), [invalidation], "not again from Redis");
    }

    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn two_deployments_on_one_redis_do_not_hear_each_others_invalidations() {
        let Some(url) = redis_url() else { return };
        // Arrange: two nodes of production and one of staging, one Redis.
        let (production_a, production_b) =
            (Bus::start(shared_in(&url, "production")), Bus::start(shared_in(&url, "production")));
        let staging = Bus::start(shared_in(&url, "staging"));
        let (heard_in_production, heard_in_staging) = (recorded(&production_b), recorded(&staging));
        for bus in [&production_a, &production_b, &staging] {
            assert!(subscribed(bus).await, "every node subscribes");
        }
        let (from_staging, from_production) = (tenant(), tenant());
        // Act
        staging.publish(from_staging.clone()).await;
        production_a.publish(from_production.clone()).await;
        // Assert: production's other node hears production, and only it.
        let is_heard = || heard_in_production.lock().unwrap().contains(&from_production);
        assert!(eventually(SOON, is_heard).await, "a node of the same deployment hears it");
        tokio::time::sleep(SOON).await;
        assert_eq!(*heard_in_production.lock().unwrap(), [from_production], "not staging's");
        assert_eq!(*heard_in_staging.lock().unwrap(), [from_staging], "only its own, published locally");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn a_node_that_loses_redis_resubscribes_and_drops_everything() {
        let Some(mut server) = PrivateRedis::start() else { return };
        // Arrange
        let (a, b) = (Bus::start(shared(&server.url())), Bus::start(shared(&server.url())));
        let heard_by_a = recorded(&a);
        assert!(subscribed(&a).await && subscribed(&b).await, "both nodes subscribe");
        // Act: Redis goes away, then comes back on the same port.
        server.kill();
        let noticed = eventually(Duration::from_secs(2), || a.connected() == Some(false)).await;
        server.restart();
        // Assert
        assert!(noticed, "the loss shows in connected() within 2 s");
        assert!(subscribed(&a).await && subscribed(&b).await, "both nodes subscribe again");
        // Once per resubscription: a loaded machine may lose the fresh one
        // to a ping timeout and subscribe a second time (each drops all).
        let heard = heard_by_a.lock().unwrap().clone();
        assert!(
            !heard.is_empty() && heard.iter().all(|i| *i == Invalidation::All),
            "every local copy is dropped: {heard:?}"
        );
        // B's first publish may meet its dead connection (the manager then
        // reconnects), as a write right after a Redis restart would.
        let invalidation = tenant();
        let mut delivered = false;
        for _ in 0..20 {
            b.publish(invalidation.clone()).await;
            if eventually(Duration::from_millis(100), || heard_by_a.lock().unwrap().contains(&invalidation)).await {
                delivered = true;
                break;
            }
        }
        assert!(delivered, "a publish from B reaches A again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[cfg_attr(
        not(gatehouse_test_redis),
        ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
    )]
    async fn a_node_notices_a_redis_that_stops_answering() {
        let Some(server) = PrivateRedis::start() else { return };
        let bus = Bus::start(shared(&server.url()));
        let heard = recorded(&bus);
        assert!(subscribed(&bus).await);
        // The connection stays open; only the PING can tell.
        server.signal(libc::SIGSTOP);
        let noticed = eventually(Duration::from_secs(2), || bus.connected() == Some(false)).await;
        server.signal(libc::SIGCONT);
        assert!(noticed, "the silence shows in connected() within 2 s");
        assert!(subscribed(&bus).await, "subscribed again once Redis answers");
        assert_eq!(*heard.lock().unwrap(), [Invalidation::All]);
    }
}
