//! Operations routes: health, readiness, metrics, the OpenAPI document.
use serde_json::Value;

use crate::helpers::{spawn_app, spawn_with};

#[actix_web::test]
async fn health_and_readiness_answer_without_credentials_or_envelope() {
    let app = spawn_app().await;
    let health = app.raw(app.client.get(app.url("/healthz"))).await;
    assert_eq!((health.status, health.body["status"].as_str()), (200, Some("ok")));
    let ready = app.raw(app.client.get(app.url("/readyz"))).await;
    assert_eq!(ready.status, 200, "{:?}", ready.body);
    assert_eq!(ready.body["checks"]["database:catalog"], "ok");
    assert_eq!(ready.body["checks"]["database:eu"], "ok");
    assert!(ready.body.get("success").is_none());
}

#[actix_web::test]
async fn an_unreachable_redis_leaves_the_node_ready_but_degraded() {
    let app = spawn_with(|s| s.cache.redis_url = Some("redis://127.0.0.1:1".into())).await;
    let ready = app.raw(app.client.get(app.url("/readyz"))).await;
    assert_eq!((ready.status, ready.body["status"].as_str()), (200, Some("degraded")), "{:?}", ready.body);
    assert_eq!(ready.body["degraded"], serde_json::json!(["redis"]));
    assert_eq!(ready.body["failing"], serde_json::json!([]));
    assert_eq!(app.get("/v1/api-keys").await.status, 200, "answers stay correct without Redis");
}

#[actix_web::test]
async fn a_lost_database_gives_503_with_retry_after_and_readiness_names_it() {
    let app = spawn_app().await;
    app.state.storage.catalog.conn.clone().close().await.unwrap();
    let reply = app
        .raw(
            app.client
                .get(app.url("/v1/api-keys"))
                .header("x-application-id", uuid::Uuid::now_v7().to_string())
                .bearer_auth(&app.caller.key),
        )
        .await;
    assert_eq!((reply.status, reply.error_code()), (503, "unavailable"), "{:?}", reply.body);
    assert!(reply.header("retry-after").is_some());
    let ready = app.raw(app.client.get(app.url("/readyz"))).await;
    assert_eq!(ready.status, 503);
    assert_eq!(ready.body["failing"], serde_json::json!(["database:catalog"]));
}

#[actix_web::test]
async fn metrics_count_requests_by_route_and_status() {
    let app = spawn_app().await;
    app.get("/v1/api-keys").await;
    // The JWKS is answered before routing, and counted under its route all the same.
    let jwks = format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id);
    assert_eq!(app.raw(app.client.get(app.url(&jwks))).await.status, 200);
    let text = app.raw(app.client.get(app.url("/metrics"))).await.body;
    let text = text.as_str().unwrap();
    assert!(
        text.contains("gatehouse_http_requests_total{method=\"GET\",route=\"/v1/api-keys\",status=\"200\"}"),
        "{text}"
    );
    let jwks_series = "route=\"/v1/applications/{application_id}/.well-known/jwks.json\",status=\"200\"}";
    assert!(text.contains(&format!("gatehouse_http_requests_total{{method=\"GET\",{jwks_series}")), "{text}");
    assert!(text.contains("gatehouse_http_request_duration_seconds_bucket"));
}

#[actix_web::test]
async fn the_openapi_document_describes_every_route() {
    let app = spawn_app().await;
    let doc: Value = app.raw(app.client.get(app.url("/v1/openapi.json"))).await.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/v1/applications", "post"),
        ("/v1/applications", "get"),
        ("/v1/applications/{application_id}", "get"),
        ("/v1/applications/{application_id}", "patch"),
        ("/v1/api-keys", "post"),
        ("/v1/api-keys", "get"),
        ("/v1/api-keys/{key_id}", "get"),
        ("/v1/api-keys/{key_id}/revoke", "post"),
        ("/v1/audit-logs", "get"),
        ("/v1/audit-logs/export", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
        ("/v1/openapi.json", "get"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} is missing");
    }
    assert!(doc["components"]["schemas"]["CreateApiKeyRequest"].is_object());
}
