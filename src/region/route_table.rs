//! The route table: which nodes serve each region, as the router actor last
//! published it ([`super::membership`]), and which of them this node found
//! unreachable. The forwarding path reads it without a mailbox hop.
use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, Instant},
};

use super::{membership::Announcement, Region};

/// How long a node that refused a connection is tried only after the others.
pub const UNREACHABLE_FOR: Duration = Duration::from_secs(5);

/// A node's base URL, as requests are forwarded to it.
pub type NodeUrl = Arc<str>;

/// Region → the nodes that announced it, in a stable order.
type Announced = BTreeMap<Region, Vec<NodeUrl>>;

#[derive(Clone)]
pub struct RouteTable {
    announced: Arc<RwLock<Arc<Announced>>>,
    /// `node.peers`: one address per region (often a load balancer), tried
    /// after every announced node of the region.
    configured: Arc<BTreeMap<Region, NodeUrl>>,
    unreachable: Arc<Mutex<HashMap<NodeUrl, Instant>>>,
    /// Advances once per forwarded request, spreading requests over a
    /// region's nodes in turn.
    turn: Arc<AtomicUsize>,
}

impl RouteTable {
    pub fn new(peers: &BTreeMap<Region, String>) -> RouteTable {
        let configured = peers.iter().map(|(region, url)| (*region, NodeUrl::from(url.trim_end_matches('/'))));
        RouteTable {
            announced: Arc::default(),
            configured: Arc::new(configured.collect()),
            unreachable: Arc::default(),
            turn: Arc::default(),
        }
    }

    /// Replaces the announced nodes with `nodes` (every live announcement,
    /// this node's own among them).
    pub fn publish(&self, nodes: &[Announcement]) {
        let mut table = Announced::new();
        for node in nodes {
            let url = NodeUrl::from(node.url.trim_end_matches('/'));
            for region in &node.regions {
                table.entry(*region).or_default().push(url.clone());
            }
        }
        for urls in table.values_mut() {
            urls.sort();
            urls.dedup();
        }
        *self.announced.write().expect("route table lock") = Arc::new(table);
    }

    /// The nodes of `region` in the order to try them: the reachable
    /// announced ones starting from the next turn, then the configured peer,
    /// then (a last resort) those that refused a connection in the last
    /// [`UNREACHABLE_FOR`].
    pub fn targets(&self, region: Region) -> Vec<NodeUrl> {
        let announced = self.announced.read().expect("route table lock").clone();
        let mut targets: Vec<NodeUrl> = announced.get(&region).cloned().unwrap_or_default();
        if !targets.is_empty() {
            let turn = self.turn.fetch_add(1, Ordering::Relaxed) % targets.len();
            targets.rotate_left(turn);
        }
        if let Some(peer) = self.configured.get(&region) {
            if !targets.contains(peer) {
                targets.push(peer.clone());
            }
        }
        let now = Instant::now();
        let mut unreachable = self.unreachable.lock().expect("unreachable lock");
        unreachable.retain(|_, until| *until > now);
        // Stable: the reachable keep their turn order, the unreachable follow.
        targets.sort_by_key(|url| unreachable.contains_key(url));
        targets
    }

    /// `url` refused a connection: try it after the others for a while.
    pub fn unreachable(&self, url: &NodeUrl) {
        self.unreachable.lock().expect("unreachable lock").insert(url.clone(), Instant::now() + UNREACHABLE_FOR);
    }

    /// The announced nodes of `region` (the route table as published).
    pub fn announced(&self, region: Region) -> Vec<NodeUrl> {
        self.announced.read().expect("route table lock").get(&region).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn region(name: &str) -> Region {
        Region::new(name).unwrap()
    }

    fn node(url: &str, regions: &[&str]) -> Announcement {
        Announcement { node: Uuid::new_v4(), url: url.into(), regions: regions.iter().map(|r| region(r)).collect() }
    }

    fn urls(targets: Vec<NodeUrl>) -> Vec<String> {
        targets.iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn requests_take_the_regions_nodes_in_turn_and_the_configured_peer_last() {
        let peers = BTreeMap::from([(region("us"), "http://us.lb/".to_string())]);
        let table = RouteTable::new(&peers);
        table.publish(&[node("http://b", &["us"]), node("http://a", &["us", "eu"]), node("http://c", &["ap"])]);

        let first = urls(table.targets(region("us")));
        let second = urls(table.targets(region("us")));

        assert_eq!(first.last().map(String::as_str), Some("http://us.lb"));
        assert_eq!(second.last().map(String::as_str), Some("http://us.lb"));
        assert_ne!(first[0], second[0], "each request starts at the next node");
        let mut both = vec![first[0].clone(), second[0].clone()];
        both.sort();
        assert_eq!(both, ["http://a", "http://b"]);
        assert_eq!(urls(table.targets(region("eu"))), ["http://a"]);
        assert!(table.targets(region("ca")).is_empty());
    }

    #[test]
    fn a_node_that_refused_a_connection_is_tried_last_until_its_mark_lapses() {
        let table = RouteTable::new(&BTreeMap::new());
        table.publish(&[node("http://a", &["us"]), node("http://b", &["us"])]);

        table.unreachable(&NodeUrl::from("http://a"));

        for _ in 0..4 {
            assert_eq!(urls(table.targets(region("us"))), ["http://b", "http://a"]);
        }
        table.unreachable.lock().unwrap().insert(NodeUrl::from("http://a"), Instant::now());
        let turns: Vec<String> = (0..4).map(|_| urls(table.targets(region("us")))[0].clone()).collect();
        assert!(turns.contains(&"http://a".to_string()), "back in turn: {turns:?}");
    }

    #[test]
    fn a_node_that_stops_announcing_leaves_the_table() {
        let table = RouteTable::new(&BTreeMap::new());
        table.publish(&[node("http://a", &["us"]), node("http://b", &["us"])]);

        table.publish(&[node("http://b", &["us"])]);

        assert_eq!(urls(table.targets(region("us"))), ["http://b"]);
    }
}
