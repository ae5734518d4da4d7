//! The route table from heartbeats: with Redis, nodes find each other
//! without `node.peers`, a node that refuses connections is passed over for
//! every method, and a node that leaves is out of the others' tables before
//! it stops answering. Skipped without `GATEHOUSE_TEST_REDIS_URL`.
use actix_web::web;
use gatehouse::{
    cache::redis::SharedRedis,
    region::membership::{Announcement, Membership, ANNOUNCEMENT_TTL},
    state::AppState,
};
use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{region, us_and_eu_nodes, Caller, TestApp, TwoRegions};

fn with_redis() -> bool {
    let set = std::env::var("GATEHOUSE_TEST_REDIS_URL").is_ok();
    if !set {
        eprintln!("skipped: GATEHOUSE_TEST_REDIS_URL is not set");
    }
    set
}

/// An eu node and a us node of one deployment, neither naming the other;
/// an eu application to call through the us node.
async fn two_nodes_without_peers() -> (TestApp, String, web::Data<AppState>, Caller) {
    let TwoRegions { us, eu_address, eu_state, eu_caller, .. } = us_and_eu_nodes(false).await;
    assert!(us.storage.settings.node.peers.is_empty());
    (us, eu_address, eu_state, eu_caller)
}

fn announced(node: &TestApp, name: &str) -> Vec<String> {
    node.state.directory.routes().announced(region(name)).iter().map(|url| url.to_string()).collect()
}

#[actix_web::test]
async fn a_node_that_refuses_connections_is_passed_over_for_every_method() {
    if !with_redis() {
        return;
    }
    // Arrange: besides the live eu node, a dead one keeps "announcing" eu.
    let (us, eu_address, _eu_state, eu_caller) = two_nodes_without_peers().await;
    let dead = format!(
        "http://127.0.0.1:{}",
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    );
    let redis = redis::Client::open(us.storage.settings.cache.redis_url.clone().unwrap()).unwrap();
    let ghost = Announcement { node: Uuid::new_v4(), url: dead.clone(), regions: vec![region("eu")] };
    let ghost = Membership::new(SharedRedis::new(redis, &us.storage.settings.deployment.name), Some(ghost));
    let beating = actix_web::rt::spawn(async move {
        loop {
            ghost.beat().await;
            tokio::time::sleep(ANNOUNCEMENT_TTL / 3).await;
        }
    });
    crate::wait::until("the us node to list both eu nodes", || async {
        let mut nodes = announced(&us, "eu");
        nodes.sort();
        let mut expected = vec![eu_address.clone(), dead.clone()];
        expected.sort();
        nodes == expected
    })
    .await;

    // Act: writes and reads, each starting at the next node in turn.
    let mut answers = Vec::new();
    for n in 0..6 {
        let created = json!({"name": format!("via-us-{n}")});
        answers.push(us.send(&eu_caller, Method::POST, "/v1/api-keys", Some(&created)).await);
        answers.push(us.send(&eu_caller, Method::GET, "/v1/api-keys", None).await);
    }
    beating.abort();

    // Assert
    for answer in &answers {
        assert!(matches!(answer.status, 200 | 201), "{:?}", answer.body);
        assert_eq!(answer.header("x-gatehouse-region"), Some("eu"));
    }
    let listed = us.send(&eu_caller, Method::GET, "/v1/api-keys?limit=100", None).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 7, "the bootstrap key and six written once each");
    let order: Vec<String> = us.state.directory.routes().targets(region("eu")).iter().map(|u| u.to_string()).collect();
    assert_eq!(order.last(), Some(&dead), "the refusing node is tried last");
}

#[actix_web::test]
async fn a_node_that_leaves_is_dropped_by_the_others_before_it_stops_answering() {
    if !with_redis() {
        return;
    }
    let (us, eu_address, eu_state, eu_caller) = two_nodes_without_peers().await;
    crate::wait::until("the us node to find the eu node", || async { announced(&us, "eu") == [eu_address.clone()] })
        .await;
    assert_eq!(us.send(&eu_caller, Method::GET, "/v1/api-keys", None).await.status, 200);

    // Act: what SIGTERM does first.
    assert!(eu_state.directory.leave().await, "the eu node had announced itself");

    // Assert: gone from the us node's table sooner than its entry would have
    // expired (the bus said so), while the eu node still answers.
    crate::wait::within("the us node to drop the eu node", ANNOUNCEMENT_TTL / 2, || async {
        announced(&us, "eu").is_empty()
    })
    .await;
    let ready = reqwest::get(format!("{eu_address}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 503, "a load balancer drops it too");
    assert_eq!(ready.json::<serde_json::Value>().await.unwrap()["status"], "leaving");
    let direct = us.client.get(format!("{eu_address}/v1/api-keys")).bearer_auth(&eu_caller.key);
    let direct = us.raw(direct.header("x-application-id", &eu_caller.application_id)).await;
    assert_eq!(direct.status, 200, "it still answers what reaches it");
    let through_us = us.send(&eu_caller, Method::GET, "/v1/api-keys", None).await;
    assert_eq!((through_us.status, through_us.error_code()), (503, "unavailable"), "no eu node is left");
}
