//! Routing by region: a node answers for the regions it holds and forwards
//! the others to their peer.
use entity::api_key;
use gatehouse::{bootstrap::bootstrap, region::Region, tenancy::Environment};
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;

use crate::helpers::{request, spawn_node, us_node_with_eu_peer, Caller, TestStorage, TwoRegions};

#[actix_web::test]
async fn a_request_for_another_regions_application_is_answered_by_that_regions_node() {
    // Arrange: node B holds eu; node A holds us and knows B as its eu peer.
    let TwoRegions { us: node_a, eu_state: b_state, eu_application, eu_caller } = us_node_with_eu_peer().await;

    // Act
    let listed = node_a.send(&eu_caller, Method::GET, "/v1/api-keys", None).await;
    let created = node_a.send(&eu_caller, Method::POST, "/v1/api-keys", Some(&json!({"name": "via-a"}))).await;

    // Assert
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(listed.header("x-gatehouse-region"), Some("eu"));
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.data()["name"], "via-a");
    let in_eu = api_key::Entity::find()
        .filter(api_key::Column::ApplicationId.eq(eu_application))
        .count(&b_state.storage.shard(Region::Eu).unwrap().conn)
        .await
        .unwrap();
    assert_eq!(in_eu, 2);
    let in_us = api_key::Entity::find()
        .filter(api_key::Column::ApplicationId.eq(eu_application))
        .count(&node_a.state.storage.shard(Region::Us).unwrap().conn)
        .await
        .unwrap();
    assert_eq!(in_us, 0, "no eu row in the us database");
    assert!(node_a.state.storage.shard(Region::Eu).is_none());
    // The us application is still served by A itself.
    let own = node_a.get("/v1/api-keys").await;
    assert_eq!((own.status, own.header("x-gatehouse-region")), (200, None));
}

#[actix_web::test]
async fn a_region_without_a_reachable_peer_is_503_with_retry_after() {
    let shared = TestStorage::new().await;
    let mut us_only = shared;
    us_only.settings.node.regions = vec![Region::Us];
    let node = spawn_node(us_only, Region::Us).await;
    // An ap application written straight into the shared catalog and ap database.
    let mut ap_settings = node.storage.settings.clone();
    ap_settings.node.regions = vec![Region::Ap];
    let ap_storage = gatehouse::startup::open_storage(&ap_settings).await.unwrap();
    let ap = bootstrap(&ap_storage, request("AP", Environment::Development, Region::Ap)).await.unwrap();
    let caller = Caller { application_id: ap.application_id.to_string(), key: ap.secret_key };
    let reply = node.send(&caller, Method::GET, "/v1/api-keys", None).await;
    assert_eq!((reply.status, reply.error_code()), (503, "unavailable"));
    assert!(reply.header("retry-after").is_some());
}
