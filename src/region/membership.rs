//! How nodes find each other: heartbeats through Redis. Every
//! [`HEARTBEAT`] each node writes `nodes:{id}` (its URL and the regions it
//! holds) to expire after [`ANNOUNCEMENT_TTL`], adds its id to the set
//! `nodes`, and reads every live announcement; the router actor publishes
//! them as the route table ([`super::route_table`]).
//!
//! Why Redis and not DNS: every multi-node deployment already has it (the
//! invalidation bus, shared caches), it works the same on a laptop, on VMs
//! and in Kubernetes, and Redis expires a silent node by its own clock, so
//! the nodes' clocks need not agree. A leaving node deletes its entry and
//! says so on the bus, so the others drop it in milliseconds. When Redis
//! does not answer, nodes keep the table they last read (and skip nodes that
//! refuse connections); `node.peers` remains a fallback for a node started
//! while Redis is down.
use std::time::Duration;

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Region;
use crate::cache::redis::SharedRedis;

pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Three missed heartbeats and a node is out of every table.
pub const ANNOUNCEMENT_TTL: Duration = Duration::from_secs(3);

/// What a node tells the others about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Announcement {
    pub node: Uuid,
    /// Where the other nodes forward to (`node.advertise_url`).
    pub url: String,
    pub regions: Vec<Region>,
}

pub struct Membership {
    redis: SharedRedis,
    /// `None`: this node forwards to others but takes no forwarded traffic
    /// (it has no address the others can reach).
    me: Option<Announcement>,
}

impl Membership {
    pub fn new(redis: SharedRedis, me: Option<Announcement>) -> Membership {
        Membership { redis, me }
    }

    /// Whether this node announces itself (takes forwarded traffic).
    pub fn announces(&self) -> bool {
        self.me.is_some()
    }

    /// Announces this node, then reads every live announcement; `None` when
    /// Redis did not answer.
    pub async fn beat(&self) -> Option<Vec<Announcement>> {
        if let Some(me) = &self.me {
            let (entry, set) = (self.entry(me.node), self.redis.key("nodes"));
            let text = serde_json::to_string(me).expect("an announcement serialises");
            let ttl = ANNOUNCEMENT_TTL.as_secs();
            let node = me.node.to_string();
            let announce = |mut c: redis::aio::ConnectionManager| async move {
                redis::pipe().set_ex(entry, text, ttl).ignore().sadd(set, node).ignore().query_async::<()>(&mut c).await
            };
            self.redis.run("node heartbeat", announce).await?;
        }
        let set = self.redis.key("nodes");
        let ids: Vec<String> = self.redis.run("node list", |mut c| async move { c.smembers(set).await }).await?;
        if ids.is_empty() {
            return Some(Vec::new());
        }
        let entries: Vec<String> = ids.iter().map(|id| self.redis.key(format_args!("nodes:{id}"))).collect();
        let read = |mut c: redis::aio::ConnectionManager| async move {
            redis::cmd("MGET").arg(&entries).query_async::<Vec<Option<String>>>(&mut c).await
        };
        let texts = self.redis.run("node announcements", read).await?;
        let (mut live, mut expired) = (Vec::new(), Vec::new());
        for (id, text) in ids.into_iter().zip(texts) {
            match text.as_deref().map(serde_json::from_str::<Announcement>) {
                Some(Ok(announcement)) => live.push(announcement),
                Some(Err(err)) => tracing::warn!(node = id, error = %err, "unreadable node announcement ignored"),
                None => expired.push(id),
            }
        }
        if !expired.is_empty() {
            let set = self.redis.key("nodes");
            self.redis.run("node expiry", |mut c| async move { c.srem::<_, _, ()>(set, expired).await }).await;
        }
        Some(live)
    }

    /// Takes this node out of every table: its entry goes now, not when it
    /// expires.
    pub async fn leave(&self) {
        let Some(me) = &self.me else { return };
        let (entry, set, node) = (self.entry(me.node), self.redis.key("nodes"), me.node.to_string());
        let leave = |mut c: redis::aio::ConnectionManager| async move {
            redis::pipe().del(entry).ignore().srem(set, node).ignore().query_async::<()>(&mut c).await
        };
        if self.redis.run_past_breaker("node leave", leave).await.is_none() {
            tracing::warn!("could not leave the route table; the others drop this node when its entry expires");
        }
    }

    fn entry(&self, node: Uuid) -> String {
        self.redis.key(format_args!("nodes:{node}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::testing::{redis_url, shared_in};

    fn announcement(url: &str) -> Announcement {
        Announcement { node: Uuid::new_v4(), url: url.into(), regions: vec![Region::new("us").unwrap()] }
    }

    #[tokio::test]
    async fn nodes_see_each_others_heartbeats_until_one_leaves() {
        let Some(url) = redis_url() else { return };
        let deployment = format!("t-{}", &Uuid::new_v4().simple().to_string()[..12]);
        let (a, b) = (announcement("http://a"), announcement("http://b"));
        let node_a = Membership::new(shared_in(&url, &deployment), Some(a.clone()));
        let node_b = Membership::new(shared_in(&url, &deployment), Some(b.clone()));
        let watcher = Membership::new(shared_in(&url, &deployment), None);

        node_a.beat().await.expect("Redis answers");
        let seen = node_b.beat().await.expect("Redis answers");
        let mut urls: Vec<&str> = seen.iter().map(|n| n.url.as_str()).collect();
        urls.sort();
        assert_eq!(urls, ["http://a", "http://b"]);

        node_a.leave().await;
        assert_eq!(watcher.beat().await.expect("Redis answers"), vec![b]);
        let other = Membership::new(shared_in(&url, "another-deployment"), None);
        assert!(other.beat().await.unwrap().iter().all(|n| n.url != "http://b"), "deployments stay apart");
        node_b.leave().await;
    }
}
