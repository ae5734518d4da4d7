//! Routing by region: a node answers for the regions it holds and forwards
//! the others to their peer.
use entity::api_key;
use gatehouse::{bootstrap::bootstrap, config::RegionSettings, tenancy::Environment};
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;

use crate::helpers::{first_shard, region, request, spawn_node, us_node_with_eu_peer, Caller, TestStorage, TwoRegions};

#[actix_web::test]
async fn a_request_for_another_regions_application_is_answered_by_that_regions_node() {
    // Arrange: node B holds eu; node A holds us and knows B as its eu peer.
    let TwoRegions { us: node_a, eu_state: b_state, eu_application, eu_caller, .. } = us_node_with_eu_peer().await;

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
        .count(&b_state.storage.shard(first_shard("eu")).unwrap().conn)
        .await
        .unwrap();
    assert_eq!(in_eu, 2);
    let in_us = api_key::Entity::find()
        .filter(api_key::Column::ApplicationId.eq(eu_application))
        .count(&node_a.state.storage.shard(first_shard("us")).unwrap().conn)
        .await
        .unwrap();
    assert_eq!(in_us, 0, "no eu row in the us database");
    assert!(node_a.state.storage.shard(first_shard("eu")).is_none());
    // The us application is still served by A itself.
    let own = node_a.get("/v1/api-keys").await;
    assert_eq!((own.status, own.header("x-gatehouse-region")), (200, None));
}

#[actix_web::test]
async fn a_region_without_a_reachable_peer_is_503_with_retry_after() {
    let shared = TestStorage::new().await;
    let mut us_only = shared;
    us_only.settings.node.regions = vec![region("us")];
    let node = spawn_node(us_only, region("us")).await;
    // An ap application written straight into the shared catalog and ap database.
    let mut ap_settings = node.storage.settings.clone();
    ap_settings.node.regions = vec![region("ap")];
    let ap_storage = gatehouse::startup::open_storage(&ap_settings).await.unwrap();
    let ap = bootstrap(&ap_storage, request("AP", Environment::Development, region("ap"))).await.unwrap();
    let caller = Caller { application_id: ap.application_id.to_string(), key: ap.secret_key };
    let reply = node.send(&caller, Method::GET, "/v1/api-keys", None).await;
    assert_eq!((reply.status, reply.error_code()), (503, "unavailable"));
    assert!(reply.header("retry-after").is_some());
}

#[actix_web::test]
async fn a_node_moves_its_application_to_a_region_another_node_serves_and_then_forwards_to_it() {
    // Arrange: node B serves eu; node A serves us, forwards eu to B, and can
    // reach eu's database (a move writes there). One deployment: one issuer.
    let mut shared = TestStorage::new().await;
    shared.settings.server.public_url = Some("https://auth.example.test".into());
    let eu_url = shared.settings.region_url(region("eu"));
    let mut eu_settings = shared.settings.clone();
    eu_settings.node.regions = vec![region("eu")];
    let eu_node = gatehouse::startup::Application::build(eu_settings).await.unwrap();
    let eu_address = format!("http://127.0.0.1:{}", eu_node.port());
    let b_state = eu_node.state.clone();
    actix_web::rt::spawn(eu_node.run_until_stopped());
    let mut us_storage = shared;
    us_storage.settings.node.regions = vec![region("us")];
    us_storage.settings.node.peers.insert(region("eu"), eu_address.clone());
    us_storage.settings.regions.insert(region("eu"), RegionSettings { database_url: Some(eu_url) });
    let node_a = spawn_node(us_storage, region("us")).await;
    let id: uuid::Uuid = node_a.caller.application_id.parse().unwrap();
    let user = crate::end_users::sign_up(&node_a, &node_a.caller, "ada@example.com").await;

    // Act
    let moved = node_a.send(&node_a.caller, Method::POST, "/v1/security/region", Some(&json!({"region": "eu"}))).await;

    // Assert: A forwards the application to B now, and B serves it from eu.
    assert_eq!((moved.status, moved.data()["region"].clone()), (200, json!("eu")), "{:?}", moved.body);
    let via_a = node_a.get("/v1/api-keys").await;
    assert_eq!((via_a.status, via_a.header("x-gatehouse-region")), (200, Some("eu")), "{:?}", via_a.body);
    let me = crate::end_users::as_user(&node_a.caller, user["access_token"].as_str().unwrap());
    assert_eq!(node_a.send(&me, Method::GET, "/v1/auth/me", None).await.status, 200, "a token from before the move");
    let direct = node_a.client.get(format!("{eu_address}/v1/security/region")).bearer_auth(&node_a.caller.key);
    let direct = node_a.raw(direct.header("x-application-id", &node_a.caller.application_id)).await;
    assert_eq!((direct.status, direct.data()["region"].clone()), (200, json!("eu")));
    let us = node_a.state.storage.shard(first_shard("us")).unwrap();
    assert_eq!(gatehouse::storage::tenant_tables::count_all(&us.conn, id).await.unwrap(), vec![]);
    let eu = b_state.storage.shard(first_shard("eu")).unwrap();
    assert!(gatehouse::storage::tenant_tables::count_all(&eu.conn, id)
        .await
        .unwrap()
        .iter()
        .any(|(table, rows)| *table == "users" && *rows == 1));
}

#[actix_web::test]
async fn a_node_whose_entry_is_older_than_a_move_sends_the_request_where_the_catalog_says() {
    // Arrange: A serves us and B serves eu, each naming the other as its
    // peer; they share no bus, so B hears of no move but from a peer.
    let mut shared = TestStorage::new().await;
    shared.settings.server.public_url = Some("https://auth.example.test".into());
    let a_listen = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let eu_url = shared.settings.region_url(region("eu"));
    let mut eu_settings = shared.settings.clone();
    eu_settings.node.regions = vec![region("eu")];
    eu_settings.node.peers.insert(region("us"), format!("http://{a_listen}"));
    let eu_node = gatehouse::startup::Application::build(eu_settings).await.unwrap();
    let b_address = format!("http://127.0.0.1:{}", eu_node.port());
    actix_web::rt::spawn(eu_node.run_until_stopped());
    let mut us_storage = shared;
    us_storage.settings.server.listen = a_listen;
    us_storage.settings.node.regions = vec![region("us")];
    us_storage.settings.node.peers.insert(region("eu"), b_address.clone());
    us_storage.settings.regions.insert(region("eu"), RegionSettings { database_url: Some(eu_url) });
    let node_a = spawn_node(us_storage, region("us")).await;
    let via_b = |method: Method, path: &str| {
        let request = node_a.client.request(method, format!("{b_address}{path}")).bearer_auth(&node_a.caller.key);
        request.header("x-application-id", &node_a.caller.application_id)
    };
    let before = node_a.raw(via_b(Method::GET, "/v1/security/region")).await;
    assert_eq!((before.status, before.header("x-gatehouse-region")), (200, Some("us")), "B forwards to A");
    let moved = node_a.send(&node_a.caller, Method::POST, "/v1/security/region", Some(&json!({"region": "eu"}))).await;
    assert_eq!(moved.status, 200, "{:?}", moved.body);

    // Act: B's entry still says us; A, asked, finds the application in eu.
    let read = node_a.raw(via_b(Method::GET, "/v1/security/region")).await;
    let written = node_a.raw(via_b(Method::POST, "/v1/api-keys").json(&json!({"name": "after-the-move"}))).await;

    // Assert: B read its entry afresh and answered itself, body and all.
    assert_eq!((read.status, read.data()["region"].clone()), (200, json!("eu")), "{:?}", read.body);
    assert_eq!(read.header("x-gatehouse-region"), None, "served by B itself");
    assert_eq!((written.status, written.data()["name"].clone()), (201, json!("after-the-move")), "{:?}", written.body);
    assert!(written.header("x-gatehouse-held-elsewhere").is_none());
}

#[actix_web::test]
async fn a_node_that_cannot_reach_the_new_regions_database_refuses_the_move_and_changes_nothing() {
    let mut shared = TestStorage::new().await;
    shared.settings.node.regions = vec![region("us")];
    shared.settings.regions.remove(&region("eu"));
    let node = spawn_node(shared, region("us")).await;

    let refused = node.send(&node.caller, Method::POST, "/v1/security/region", Some(&json!({"region": "eu"}))).await;

    assert_eq!((refused.status, refused.error_code()), (503, "unavailable"), "{:?}", refused.body);
    assert_eq!(node.get("/v1/security/region").await.data()["region"], "us");
    assert_eq!(node.get("/v1/api-keys").await.status, 200);
}

#[actix_web::test]
async fn a_move_between_two_regions_configured_with_one_database_is_refused() {
    let mut shared = TestStorage::new().await;
    let us_url = shared.settings.region_url(region("us"));
    shared.settings.regions.insert(region("eu"), RegionSettings { database_url: Some(us_url) });
    let node = spawn_node(shared, region("us")).await;
    let id: uuid::Uuid = node.caller.application_id.parse().unwrap();

    let refused = node.send(&node.caller, Method::POST, "/v1/security/region", Some(&json!({"region": "eu"}))).await;

    assert_eq!((refused.status, refused.error_code()), (503, "unavailable"), "{:?}", refused.body);
    assert_eq!(node.get("/v1/security/region").await.data()["region"], "us");
    let us = node.state.storage.shard(first_shard("us")).unwrap();
    let rows = gatehouse::storage::tenant_tables::count_all(&us.conn, id);
    assert!(!rows.await.unwrap().is_empty(), "the application's rows are where they were");
}
