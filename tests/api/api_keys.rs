//! Operation 3 and its companions: application secret keys.
use entity::api_key;
use gatehouse::crypto::key_format::{self, KeyKind};
use reqwest::Method;
use sea_orm::{sea_query::Expr, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::helpers::{first_shard, spawn_app, Caller};

#[actix_web::test]
async fn a_created_key_is_shown_once_stored_hashed_and_works() {
    let app = spawn_app().await;
    let created =
        app.post("/v1/api-keys", &json!({"name": "ci", "scopes": ["audit:read"], "expires_in_days": 30})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let secret = created.data()["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("sk_test_"));
    assert_eq!(key_format::parse(KeyKind::Secret, &secret), Some(false));
    assert_eq!(created.data()["prefix"], secret[..12]);
    assert_eq!(created.data()["active"], true);
    assert!(created.data()["expires_at"].is_string());
    let id = created.data()["id"].as_str().unwrap();

    let fetched = app.get(&format!("/v1/api-keys/{id}")).await;
    assert_eq!(fetched.status, 200);
    assert!(fetched.data().get("secret").is_none());
    let listed = app.get("/v1/api-keys").await;
    assert!(!listed.body.to_string().contains(&secret));

    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let row = api_key::Entity::find_by_id(id.parse::<uuid::Uuid>().unwrap()).one(&shard.conn).await.unwrap().unwrap();
    assert_eq!(row.secret_hash, gatehouse::crypto::sha256(&secret));
    assert!(!format!("{row:?}").contains(&secret[12..]));

    let caller = Caller { application_id: app.caller.application_id.clone(), key: secret };
    let used = app.send(&caller, Method::GET, "/v1/audit-logs", None).await;
    assert_eq!(used.status, 200);
}

#[actix_web::test]
async fn a_key_without_admin_may_read_but_not_create_keys() {
    let app = spawn_app().await;
    let reader = app.key_with_scopes(json!(["api_keys:read"])).await;
    assert_eq!(app.send(&reader, Method::GET, "/v1/api-keys", None).await.status, 200);
    let refused = app.send(&reader, Method::POST, "/v1/api-keys", Some(&json!({"name": "x"}))).await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_scope"));
    let audit = app.send(&reader, Method::GET, "/v1/audit-logs/export", None).await;
    assert_eq!((audit.status, audit.error_code()), (403, "insufficient_scope"));
    assert_eq!(refusals(&app, "insufficient_scope").await, 1);
}

#[actix_web::test]
async fn a_revoked_key_stops_working_at_once() {
    let app = spawn_app().await;
    let victim = app.key_with_scopes(json!(["admin"])).await;
    assert_eq!(app.send(&victim, Method::GET, "/v1/api-keys", None).await.status, 200);
    let listed = app.get("/v1/api-keys").await;
    let id = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|k| victim.key.starts_with(k["prefix"].as_str().unwrap()))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let revoked = app.post(&format!("/v1/api-keys/{id}/revoke"), &json!({})).await;
    assert_eq!(revoked.status, 200);
    assert!(revoked.data()["revoked_at"].is_string());
    assert_eq!(revoked.data()["active"], false);
    let after = app.send(&victim, Method::GET, "/v1/api-keys", None).await;
    assert_eq!((after.status, after.error_code()), (401, "unauthenticated"));
    app.send(&victim, Method::GET, "/v1/api-keys", None).await;
    app.send(&victim, Method::GET, "/v1/api-keys", None).await;
    assert_eq!(refusals(&app, "revoked").await, 1, "three refused uses, one audit row a minute");
    let again = app.post(&format!("/v1/api-keys/{id}/revoke"), &json!({})).await;
    assert_eq!(again.status, 200, "revoking twice answers the key");
    assert_eq!(app.audit_types().await.iter().filter(|t| *t == "api_key.revoked").count(), 1);
}

#[actix_web::test]
async fn an_expired_key_is_refused() {
    let app = spawn_app().await;
    let created = app.post("/v1/api-keys", &json!({"name": "short", "expires_in_days": 1})).await;
    let id: uuid::Uuid = created.data()["id"].as_str().unwrap().parse().unwrap();
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    api_key::Entity::update_many()
        .col_expr(api_key::Column::ExpiresAt, Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)))
        .filter(api_key::Column::Id.eq(id))
        .exec(&shard.conn)
        .await
        .unwrap();
    let caller = Caller {
        application_id: app.caller.application_id.clone(),
        key: created.data()["secret"].as_str().unwrap().into(),
    };
    assert_eq!(app.send(&caller, Method::GET, "/v1/api-keys", None).await.status, 401);
    assert_eq!(app.get(&format!("/v1/api-keys/{id}")).await.data()["active"], false);
}

#[actix_web::test]
async fn another_tenants_key_is_404_and_a_key_for_another_application_is_401() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    let mine = app.get("/v1/api-keys").await.data()[0]["id"].as_str().unwrap().to_string();
    let theirs = app.send(&other, Method::GET, &format!("/v1/api-keys/{mine}"), None).await;
    assert_eq!((theirs.status, theirs.error_code()), (404, "not_found"));
    let unknown = app.send(&other, Method::GET, &format!("/v1/api-keys/{}", uuid::Uuid::now_v7()), None).await;
    assert_eq!(
        theirs.body["error"]["message"].as_str().unwrap().len(),
        unknown.body["error"]["message"].as_str().unwrap().len()
    );
    let revoke = app.send(&other, Method::POST, &format!("/v1/api-keys/{mine}/revoke"), None).await;
    assert_eq!(revoke.status, 404);
    let crossed = Caller { application_id: other.application_id.clone(), key: app.caller.key.clone() };
    assert_eq!(app.send(&crossed, Method::GET, "/v1/api-keys", None).await.status, 401);
}

#[actix_web::test]
async fn invalid_key_requests_are_422_and_store_nothing() {
    let app = spawn_app().await;
    for body in [
        json!({"name": ""}),
        json!({"name": "a", "scopes": ["Admin"]}),
        json!({"name": "a", "scopes": ["x y"]}),
        json!({"name": "a", "scopes": (0..51).map(|i| format!("s{i}")).collect::<Vec<_>>()}),
        json!({"name": "a", "expires_in_days": 0}),
        json!({"name": "a", "expires_in_days": 3651}),
    ] {
        let reply = app.post("/v1/api-keys", &body).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{body}");
    }
    assert_eq!(app.get("/v1/api-keys").await.data().as_array().unwrap().len(), 1);
    assert_eq!(app.audit_types().await.iter().filter(|t| *t == "api_key.created").count(), 1);
}

#[actix_web::test]
async fn twenty_concurrent_creators_of_one_name_get_one_success_and_nineteen_409s() {
    let app = spawn_app().await;
    let body = json!({"name": "deploy"});
    let attempts = (0..20).map(|_| app.post("/v1/api-keys", &body));
    let replies = futures_util::future::join_all(attempts).await;
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        19,
        "{statuses:?} {:?}",
        replies.iter().filter(|r| r.status == 503).map(|r| &r.body).next()
    );
    assert!(replies.iter().filter(|r| r.status == 409).all(|r| r.error_code() == "conflict"));
    let verified = gatehouse::audit::query::verify(
        &app.state.storage.shard(first_shard("us")).unwrap().conn,
        app.caller.application_id.parse().unwrap(),
    )
    .await
    .unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

#[actix_web::test]
async fn last_used_at_is_recorded_after_use() {
    let app = spawn_app().await;
    app.get("/v1/api-keys").await;
    crate::wait::until("the key's use to be recorded", || async {
        app.get("/v1/api-keys").await.data()[0]["last_used_at"].is_string()
    })
    .await;
}

#[actix_web::test]
async fn a_production_application_gets_live_keys_and_refuses_test_ones() {
    let app = spawn_app().await;
    let live = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    assert!(live.key.starts_with("sk_live_"));
    let created = app.send(&live, Method::POST, "/v1/api-keys", Some(&json!({"name": "x"}))).await;
    assert!(created.data()["secret"].as_str().unwrap().starts_with("sk_live_"));
    let test_key_at_live = Caller { application_id: live.application_id.clone(), key: app.caller.key.clone() };
    assert_eq!(app.send(&test_key_at_live, Method::GET, "/v1/api-keys", None).await.status, 401);
}

/// `api_key.use_refused` rows with this reason, once there is one (they
/// are written off the request path), watched a moment longer: a second
/// row for the same minute would arrive unannounced.
async fn refusals(app: &crate::helpers::TestApp, reason: &str) -> usize {
    let count = || async {
        let rows = app.get("/v1/audit-logs/export?type=api_key.use_refused").await;
        rows.data().as_array().unwrap().iter().filter(|r| r["data"]["reason"] == reason).count()
    };
    crate::wait::until(&format!("a `{reason}` refusal row"), || async { count().await > 0 }).await;
    let one = || async { count().await == 1 };
    crate::wait::stays(&format!("one `{reason}` refusal row a minute"), std::time::Duration::from_millis(100), one)
        .await;
    count().await
}

#[actix_web::test]
async fn a_key_revoked_on_one_node_is_refused_by_another_within_a_second() {
    let a = spawn_app().await;
    let b_node = gatehouse::startup::Application::build(a.storage.settings.clone()).await.expect("second node");
    let b = format!("http://127.0.0.1:{}", b_node.port());
    actix_web::rt::spawn(b_node.run_until_stopped());
    let victim = a.key_with_scopes(json!(["api_keys:read"])).await;
    // Node B has looked the key up and holds it in its cache.
    assert_eq!(a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status, 200);
    let id = a.get("/v1/api-keys").await.data()[0]["id"].as_str().unwrap().to_string();
    // B records the key's first use in the background; on SQLite (one file,
    // two nodes in one process) that write must be done before A writes.
    crate::wait::until("B's record of the key's first use", || async {
        a.get(&format!("/v1/api-keys/{id}")).await.data()["last_used_at"].is_string()
    })
    .await;
    assert_eq!(a.post(&format!("/v1/api-keys/{id}/revoke"), &json!({})).await.status, 200);
    assert_eq!(a.send(&victim, Method::GET, "/v1/api-keys", None).await.status, 401, "at once on the revoking node");
    // B's cached copy of a key lives 1 s: the revocation is a guarantee
    // within that bound (with Redis, the bus carries it in milliseconds).
    let bound = std::time::Duration::from_millis(1100);
    crate::wait::within("node B to refuse the revoked key", bound, || async {
        a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status == 401
    })
    .await;
}
