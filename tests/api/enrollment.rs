//! Operation 6: host groups, enrollment tokens, enrolling hosts.
use entity::enrollment_token;
use gatehouse::crypto::key_format::{self, KeyKind};
use reqwest::Method;
use sea_orm::{sea_query::Expr, ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{json, Value};

use crate::helpers::{first_shard, spawn_app, Caller, Reply, TestApp};

/// The application's own id with `token` as the bearer.
fn host(app: &TestApp, token: &str) -> Caller {
    Caller { application_id: app.caller.application_id.clone(), key: token.to_string() }
}

async fn enroll(app: &TestApp, caller: &Caller, body: Value) -> Reply {
    app.send(caller, Method::POST, "/v1/os/enroll", Some(&body)).await
}

async fn token(app: &TestApp, body: Value) -> Value {
    let created = app.post("/v1/os/enrollment-tokens", &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data().clone()
}

async fn tokens(app: &TestApp) -> Vec<Value> {
    app.get("/v1/os/enrollment-tokens").await.data().as_array().unwrap().clone()
}

async fn uses(app: &TestApp, id: &str) -> i64 {
    let all = tokens(app).await;
    all.iter().find(|t| t["id"] == id).unwrap()["uses"].as_i64().unwrap()
}

async fn hosts(app: &TestApp) -> Vec<Value> {
    app.get("/v1/os/hosts").await.data().as_array().unwrap().clone()
}

#[actix_web::test]
async fn host_groups_are_created_listed_unique_by_name_and_audited() {
    let app = spawn_app().await;
    let created = app.post("/v1/os/host-groups", &json!({"name": "web servers"})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.data()["name"], "web servers");
    assert!(created.data()["id"].is_string() && created.data()["created_at"].is_string());
    let again = app.post("/v1/os/host-groups", &json!({"name": "web servers"})).await;
    assert_eq!((again.status, again.error_code()), (409, "conflict"));
    let listed = app.get("/v1/os/host-groups").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert_eq!(listed.data()[0]["id"], created.data()["id"]);
    assert!(app.audit_types().await.contains(&"host_group.created".to_string()));
}

#[actix_web::test]
async fn bad_host_groups_are_refused_and_nothing_is_stored() {
    let app = spawn_app().await;
    for body in [json!({"name": ""}), json!({"name": "x".repeat(256)}), json!({}), json!({"name": "a", "id": "x"})] {
        let refused = app.post("/v1/os/host-groups", &body).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{body}");
    }
    assert!(app.get("/v1/os/host-groups").await.data().as_array().unwrap().is_empty());
}

#[actix_web::test]
async fn a_token_is_created_with_its_secret_once_and_listed_without_it() {
    let app = spawn_app().await;
    let group = app.post("/v1/os/host-groups", &json!({"name": "db"})).await.data()["id"].clone();
    let created = token(
        &app,
        json!({"label": "rack 4", "host_group_id": group, "platform": "linux", "expires_in_days": 30, "max_uses": 5}),
    )
    .await;
    let secret = created["token_secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("het_test_") && secret.len() == "het_test_".len() + 38, "{secret}");
    assert_eq!(created["prefix"], secret[..12]);
    assert_eq!(created["label"], "rack 4");
    assert_eq!(created["host_group_id"], group);
    assert_eq!(created["platform"], "linux");
    assert_eq!(created["max_uses"], 5);
    assert_eq!(created["uses"], 0);
    assert_eq!(created["active"], true);
    assert!(created["expires_at"].is_string() && created["revoked_at"].is_null());

    let listed = tokens(&app).await;
    assert_eq!(listed.len(), 1);
    assert!(listed[0].get("token_secret").is_none());
    assert!(!app.get("/v1/os/enrollment-tokens").await.body.to_string().contains(&secret));
    let export = app.get("/v1/audit-logs/export?limit=1000").await.body.to_string();
    assert!(export.contains("enrollment_token.created"));
    assert!(!export.contains(&secret), "the audit export holds the token secret");
}

#[actix_web::test]
async fn a_token_without_options_takes_either_platform_and_never_expires() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "any"})).await;
    assert!(created["platform"].is_null() && created["expires_at"].is_null() && created["max_uses"].is_null());
    assert!(created["host_group_id"].is_null());
    let caller = host(&app, created["token_secret"].as_str().unwrap());
    for platform in ["linux", "windows"] {
        let enrolled = enroll(&app, &caller, json!({"hostname": format!("h-{platform}"), "platform": platform})).await;
        assert_eq!(enrolled.status, 201, "{:?}", enrolled.body);
    }
    assert_eq!(uses(&app, created["id"].as_str().unwrap()).await, 2);
}

#[actix_web::test]
async fn bad_token_requests_are_refused_and_nothing_is_stored() {
    let app = spawn_app().await;
    for body in [
        json!({}),
        json!({"label": ""}),
        json!({"label": "x".repeat(256)}),
        json!({"label": "a", "platform": "macos"}),
        json!({"label": "a", "expires_in_days": 0}),
        json!({"label": "a", "expires_in_days": 3651}),
        json!({"label": "a", "max_uses": 0}),
        json!({"label": "a", "max_uses": -1}),
        json!({"label": "a", "host_group_id": "not-a-uuid"}),
        json!({"label": "a", "token_secret": "het_test_x"}),
    ] {
        let refused = app.post("/v1/os/enrollment-tokens", &body).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{body}");
    }
    assert!(tokens(&app).await.is_empty());
}

#[actix_web::test]
async fn an_unknown_or_another_applications_host_group_is_host_group_not_found() {
    let app = spawn_app().await;
    let other = app.create_application(json!({"name": "Other"})).await;
    let theirs = app.send(&other, Method::POST, "/v1/os/host-groups", Some(&json!({"name": "g"}))).await;
    for group in [theirs.data()["id"].clone(), json!(uuid::Uuid::now_v7())] {
        let refused = app.post("/v1/os/enrollment-tokens", &json!({"label": "a", "host_group_id": group})).await;
        assert_eq!((refused.status, refused.error_code()), (404, "host_group_not_found"));
    }
    assert!(tokens(&app).await.is_empty());
}

#[actix_web::test]
async fn another_applications_tokens_hosts_and_groups_are_invisible() {
    let app = spawn_app().await;
    let other = app.create_application(json!({"name": "Other"})).await;
    app.send(&other, Method::POST, "/v1/os/host-groups", Some(&json!({"name": "g"}))).await;
    let theirs = app
        .send(&other, Method::POST, "/v1/os/enrollment-tokens", Some(&json!({"label": "theirs"})))
        .await
        .data()
        .clone();
    let caller =
        Caller { application_id: other.application_id.clone(), key: theirs["token_secret"].as_str().unwrap().into() };
    assert_eq!(enroll(&app, &caller, json!({"hostname": "h", "platform": "linux"})).await.status, 201);

    let revoke =
        app.post(&format!("/v1/os/enrollment-tokens/{}/revoke", theirs["id"].as_str().unwrap()), &json!({})).await;
    assert_eq!((revoke.status, revoke.error_code()), (404, "not_found"));
    assert!(tokens(&app).await.is_empty());
    assert!(hosts(&app).await.is_empty());
    assert!(app.get("/v1/os/host-groups").await.data().as_array().unwrap().is_empty());
    // Their token with our application's id is an unknown token here.
    let misdirected = enroll(
        &app,
        &host(&app, theirs["token_secret"].as_str().unwrap()),
        json!({"hostname": "h", "platform": "linux"}),
    )
    .await;
    assert_eq!((misdirected.status, misdirected.error_code()), (401, "unauthenticated"));
}

#[actix_web::test]
async fn a_host_enrolls_and_is_listed_with_the_use_counted_and_audited_as_public() {
    let app = spawn_app().await;
    let group = app.post("/v1/os/host-groups", &json!({"name": "db"})).await.data()["id"].clone();
    let created =
        token(&app, json!({"label": "db hosts", "host_group_id": group, "platform": "windows", "max_uses": 3})).await;
    let id = created["id"].as_str().unwrap();
    let enrolled = enroll(
        &app,
        &host(&app, created["token_secret"].as_str().unwrap()),
        json!({"hostname": "db-01", "platform": "windows"}),
    )
    .await;
    assert_eq!(enrolled.status, 201, "{:?}", enrolled.body);
    assert_eq!(enrolled.data()["host_group_id"], group);
    assert_eq!(enrolled.data()["platform"], "windows");

    let listed = hosts(&app).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], enrolled.data()["host_id"]);
    assert_eq!(listed[0]["hostname"], "db-01");
    assert_eq!(listed[0]["enrollment_token_id"], id);
    assert_eq!(listed[0]["host_group_id"], group);
    assert!(listed[0]["enrolled_at"].is_string());
    assert_eq!(uses(&app, id).await, 1);

    let used = app.get("/v1/audit-logs?type=enrollment_token.used").await;
    let row = &used.data()[0];
    assert_eq!(row["actor_kind"], "public");
    assert_eq!(row["aggregate_id"], id);
    assert_eq!(row["data"]["host_id"], enrolled.data()["host_id"]);
}

#[actix_web::test]
async fn enrollment_without_a_usable_enrollment_token_is_unauthenticated() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "t"})).await;
    let secret = created["token_secret"].as_str().unwrap();
    let body = json!({"hostname": "h", "platform": "linux"});
    let mut changed = secret.to_string().into_bytes();
    let last = changed.len() - 1;
    changed[last] = if changed[last] == b'a' { b'b' } else { b'a' };
    let look_alike = String::from_utf8(changed).unwrap();
    let other_key =
        app.post("/v1/api-keys", &json!({"name": "not a host"})).await.data()["secret"].as_str().unwrap().to_string();
    let user_key = key_format::generate(KeyKind::User, false);
    let live_token = key_format::generate(KeyKind::Enrollment, true);
    let unknown_token = key_format::generate(KeyKind::Enrollment, false);
    let bearers = [&app.caller.key, &other_key, &user_key, &live_token, &unknown_token, &look_alike, "het_test_", ""];
    for bearer in bearers {
        let refused = enroll(&app, &host(&app, bearer), body.clone()).await;
        assert_eq!((refused.status, refused.error_code()), (401, "unauthenticated"), "{bearer}");
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    }
    // Without x-application-id.
    let request = app.client.post(app.url("/v1/os/enroll")).bearer_auth(secret).json(&body);
    assert_eq!(app.raw(request).await.status, 401);
    // A missing or unparsable body does not come before the credential.
    let request = app
        .client
        .post(app.url("/v1/os/enroll"))
        .header("x-application-id", &app.caller.application_id)
        .json(&json!({}));
    assert_eq!(app.raw(request).await.status, 401);
    assert!(hosts(&app).await.is_empty());
    assert_eq!(uses(&app, created["id"].as_str().unwrap()).await, 0);
}

#[actix_web::test]
async fn a_wrong_platform_or_bad_hostname_is_refused_without_burning_a_use() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "once", "platform": "linux", "max_uses": 1})).await;
    let caller = host(&app, created["token_secret"].as_str().unwrap());
    let mismatch = enroll(&app, &caller, json!({"hostname": "h", "platform": "windows"})).await;
    assert_eq!((mismatch.status, mismatch.error_code()), (422, "platform_mismatch"));
    for body in [
        json!({"hostname": "", "platform": "linux"}),
        json!({"hostname": "x".repeat(256), "platform": "linux"}),
        json!({"hostname": "h", "platform": "macos"}),
        json!({"hostname": "h"}),
        json!({"hostname": "h", "platform": "linux", "host_group_id": uuid::Uuid::now_v7()}),
    ] {
        let refused = enroll(&app, &caller, body.clone()).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{body}");
    }
    assert_eq!(uses(&app, created["id"].as_str().unwrap()).await, 0);
    assert!(hosts(&app).await.is_empty());
    // The single use is still there.
    assert_eq!(enroll(&app, &caller, json!({"hostname": "h", "platform": "linux"})).await.status, 201);
    let used_up = enroll(&app, &caller, json!({"hostname": "h2", "platform": "linux"})).await;
    assert_eq!((used_up.status, used_up.error_code()), (401, "unauthenticated"));
    let listed = tokens(&app).await;
    assert_eq!((listed[0]["uses"].clone(), listed[0]["active"].clone()), (json!(1), json!(false)));
}

#[actix_web::test]
async fn a_revoked_token_enrolls_nothing_and_revoking_again_answers_it_unchanged() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "t"})).await;
    let path = format!("/v1/os/enrollment-tokens/{}/revoke", created["id"].as_str().unwrap());
    let revoked = app.send(&app.caller, Method::POST, &path, None).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    assert_eq!(revoked.data()["active"], false);
    assert!(revoked.data()["revoked_at"].is_string());
    assert!(revoked.data().get("token_secret").is_none());
    let again = app.post(&path, &json!({})).await;
    assert_eq!((again.status, again.data()["revoked_at"].clone()), (200, revoked.data()["revoked_at"].clone()));
    let with_fields = app.post(&path, &json!({"reason": "x"})).await;
    assert_eq!(with_fields.status, 422);
    let refused = enroll(
        &app,
        &host(&app, created["token_secret"].as_str().unwrap()),
        json!({"hostname": "h", "platform": "linux"}),
    )
    .await;
    assert_eq!((refused.status, refused.error_code()), (401, "unauthenticated"));
    let types = app.audit_types().await;
    assert_eq!(types.iter().filter(|t| *t == "enrollment_token.revoked").count(), 1);
    let missing = app.post(&format!("/v1/os/enrollment-tokens/{}/revoke", uuid::Uuid::now_v7()), &json!({})).await;
    assert_eq!((missing.status, missing.error_code()), (404, "not_found"));
}

#[actix_web::test]
async fn an_expired_token_enrolls_nothing_and_is_inactive() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "t", "expires_in_days": 1})).await;
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    enrollment_token::Entity::update_many()
        .col_expr(enrollment_token::Column::ExpiresAt, Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)))
        .filter(enrollment_token::Column::Id.eq(id))
        .exec(&shard.conn)
        .await
        .unwrap();
    let refused = enroll(
        &app,
        &host(&app, created["token_secret"].as_str().unwrap()),
        json!({"hostname": "h", "platform": "linux"}),
    )
    .await;
    assert_eq!((refused.status, refused.error_code()), (401, "unauthenticated"));
    let listed = tokens(&app).await;
    assert_eq!((listed[0]["active"].clone(), listed[0]["uses"].clone()), (json!(false), json!(0)));
}

#[actix_web::test]
async fn a_single_use_token_presented_by_fifty_hosts_at_once_enrolls_exactly_one() {
    let app = spawn_app().await;
    let created = token(&app, json!({"label": "once", "max_uses": 1})).await;
    let caller = host(&app, created["token_secret"].as_str().unwrap());
    let attempts = (0..50).map(|i| {
        let (app, caller) = (&app, &caller);
        async move { enroll(app, caller, json!({"hostname": format!("host-{i}"), "platform": "linux"})).await }
    });
    let replies = futures_util::future::join_all(attempts).await;
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 401).count(), 49, "{statuses:?}");
    assert_eq!(uses(&app, created["id"].as_str().unwrap()).await, 1);
    assert_eq!(hosts(&app).await.len(), 1);
    let types = app.audit_types().await;
    assert_eq!(types.iter().filter(|t| *t == "enrollment_token.used").count(), 1);
}
