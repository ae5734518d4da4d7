//! Identity (OAuth) provider settings (operation 1): upsert, list, the
//! production rule, the sealed client secret kept when omitted.
use entity::oauth_provider;
use reqwest::Method;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{first_shard, spawn_app, Caller, Reply, TestApp};

fn base(caller: &Caller) -> String {
    format!("/v1/applications/{}/providers/oauth", caller.application_id)
}

async fn put(app: &TestApp, caller: &Caller, body: Value) -> Reply {
    app.send(caller, Method::PUT, &base(caller), Some(&body)).await
}

async fn providers(app: &TestApp, caller: &Caller) -> Vec<Value> {
    let reply = app.send(caller, Method::GET, &base(caller), None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().as_array().unwrap().clone()
}

async fn row(app: &TestApp, caller: &Caller, provider: &str) -> oauth_provider::Model {
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let id: Uuid = caller.application_id.parse().unwrap();
    oauth_provider::Entity::find()
        .filter(oauth_provider::Column::ApplicationId.eq(id))
        .filter(oauth_provider::Column::Provider.eq(provider))
        .one(shard)
        .await
        .unwrap()
        .unwrap()
}

fn opened(app: &TestApp, row: &oauth_provider::Model) -> Option<String> {
    gatehouse::areas::oauth_providers::open_client_secret(&app.state.master_key, row).unwrap()
}

#[actix_web::test]
async fn providers_are_upserted_and_listed_without_their_secrets() {
    let app = spawn_app().await;
    let caller = app.caller.clone();
    assert!(providers(&app, &caller).await.is_empty());
    let google = put(
        &app,
        &caller,
        json!({"provider": "google", "enabled": true, "client_id": "google-client", "client_secret": "google-secret-1",
            "scopes": ["openid", "email", "https://www.googleapis.com/auth/userinfo.profile", "email"]}),
    )
    .await;
    assert_eq!(google.status, 200, "{:?}", google.body);
    let data = google.data();
    assert_eq!(data["provider"], "google");
    assert_eq!(data["enabled"], true);
    assert_eq!(data["client_id"], "google-client");
    assert_eq!(data["has_secret"], true);
    assert_eq!(data["scopes"], json!(["openid", "email", "https://www.googleapis.com/auth/userinfo.profile"]));
    assert_eq!(data["use_shared_dev_credentials"], false);
    assert!(data["updated_at"].is_string());
    assert!(data.get("client_secret").is_none());
    let github =
        put(&app, &caller, json!({"provider": "github", "enabled": false, "use_shared_dev_credentials": true})).await;
    assert_eq!(github.status, 200, "{:?}", github.body);
    assert_eq!(github.data()["has_secret"], false);
    assert!(github.data()["client_id"].is_null());
    assert_eq!(github.data()["scopes"], json!([]));
    let listed = providers(&app, &caller).await;
    let names: Vec<&str> = listed.iter().map(|p| p["provider"].as_str().unwrap()).collect();
    assert_eq!(names, ["github", "google"]);
    assert_eq!(listed[1], *google.data());
    // The row is sealed; the tenant's published state holds the settings.
    let stored = row(&app, &caller, "google").await;
    assert_eq!(opened(&app, &stored).as_deref(), Some("google-secret-1"));
    let id: Uuid = caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let scope = gatehouse::auth::public_scope(&app.state, tenant).unwrap();
    let state = app.state.tenants.state(&scope).await.unwrap();
    assert_eq!(
        state
            .part::<gatehouse::areas::oauth_providers::Providers>()
            .iter()
            .map(|p| p.provider.as_str())
            .collect::<Vec<_>>(),
        ["github", "google"]
    );
    let audited = app.get("/v1/audit-logs/export?limit=1000").await;
    let rows: Vec<&Value> =
        audited.data().as_array().unwrap().iter().filter(|r| r["type"] == "provider.updated").collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["data"]["provider"], "oauth");
    assert_eq!(rows[0]["data"]["name"], "google");
    assert_eq!(rows[0]["data"]["enabled"], true);
}

#[actix_web::test]
async fn an_omitted_secret_is_kept_and_a_supplied_one_replaces_it() {
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let first = json!({"provider": "gitlab", "enabled": true, "client_id": "gl", "client_secret": "first-secret"});
    assert_eq!(put(&app, &caller, first).await.status, 200);
    let kept = put(&app, &caller, json!({"provider": "gitlab", "enabled": false, "client_id": "gl-2"})).await;
    assert_eq!(kept.status, 200, "{:?}", kept.body);
    assert_eq!(kept.data()["has_secret"], true);
    assert_eq!(kept.data()["enabled"], false);
    assert_eq!(kept.data()["client_id"], "gl-2");
    assert_eq!(opened(&app, &row(&app, &caller, "gitlab").await).as_deref(), Some("first-secret"));
    let replaced = put(
        &app,
        &caller,
        json!({"provider": "gitlab", "enabled": true, "client_id": "gl-2", "client_secret": "second"}),
    )
    .await;
    assert_eq!(replaced.status, 200, "{:?}", replaced.body);
    assert_eq!(opened(&app, &row(&app, &caller, "gitlab").await).as_deref(), Some("second"));
    assert_eq!(providers(&app, &caller).await.len(), 1);
}

#[actix_web::test]
async fn production_requires_its_own_credentials() {
    let app = spawn_app().await;
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    for body in [
        json!({"provider": "google", "enabled": true, "use_shared_dev_credentials": true}),
        json!({"provider": "google", "enabled": false, "use_shared_dev_credentials": true}),
        json!({"provider": "google", "enabled": true, "client_id": "c", "client_secret": "s", "use_shared_dev_credentials": true}),
        json!({"provider": "google", "enabled": true}),
        json!({"provider": "google", "enabled": true, "client_id": "c"}),
        json!({"provider": "google", "enabled": true, "client_secret": "s"}),
    ] {
        let reply = put(&app, &production, body.clone()).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
        assert_eq!(reply.error_code(), "production_requires_own_credentials", "{body}");
    }
    assert!(providers(&app, &production).await.is_empty(), "nothing stored");
    // Disabled, it may be saved incomplete; enabled, with its own credentials.
    let draft = put(&app, &production, json!({"provider": "google", "enabled": false, "client_id": "c"})).await;
    assert_eq!(draft.status, 200, "{:?}", draft.body);
    let own =
        put(&app, &production, json!({"provider": "google", "enabled": true, "client_id": "c", "client_secret": "s"}))
            .await;
    assert_eq!(own.status, 200, "{:?}", own.body);
    // The stored secret counts: it may be omitted once stored.
    let again = put(&app, &production, json!({"provider": "google", "enabled": true, "client_id": "c2"})).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.data()["has_secret"], true);
    // Without a client id it may not stay enabled.
    let dropped = put(&app, &production, json!({"provider": "google", "enabled": true})).await;
    assert_eq!(dropped.error_code(), "production_requires_own_credentials");
    // Development may use the shared credentials, configured or not.
    let dev =
        put(&app, &app.caller, json!({"provider": "google", "enabled": true, "use_shared_dev_credentials": true}))
            .await;
    assert_eq!(dev.status, 200, "{:?}", dev.body);
    assert_eq!(dev.data()["use_shared_dev_credentials"], true);
}

#[actix_web::test]
async fn bad_input_is_refused_with_nothing_stored() {
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let long = "x".repeat(256);
    let long_secret = "s".repeat(1025);
    let many: Vec<String> = (0..51).map(|i| format!("s{i}")).collect();
    for body in [
        json!({"provider": "myspace", "enabled": true}),
        json!({"provider": "google"}),
        json!({"enabled": true}),
        json!({"provider": "google", "enabled": "yes"}),
        json!({"provider": "google", "enabled": true, "client_id": ""}),
        json!({"provider": "google", "enabled": true, "client_id": long}),
        json!({"provider": "google", "enabled": true, "client_id": "a\u{0007}b"}),
        json!({"provider": "google", "enabled": true, "client_secret": " "}),
        json!({"provider": "google", "enabled": true, "client_secret": long_secret}),
        json!({"provider": "google", "enabled": true, "scopes": ["open id"]}),
        json!({"provider": "google", "enabled": true, "scopes": [""]}),
        json!({"provider": "google", "enabled": true, "scopes": many}),
        json!({"provider": "google", "enabled": true, "scopes": "openid"}),
        json!({"provider": "google", "enabled": true, "id": "x"}),
    ] {
        let reply = put(&app, &caller, body.clone()).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
        assert_eq!(reply.error_code(), "validation_failed", "{body}");
    }
    assert!(providers(&app, &caller).await.is_empty());
    assert!(!app.audit_types().await.contains(&"provider.updated".to_string()));
}

#[actix_web::test]
async fn another_applications_providers_are_not_found() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    let body = json!({"provider": "github", "enabled": true, "client_id": "x", "client_secret": "y"});
    assert_eq!(put(&app, &other, body.clone()).await.status, 200);
    let path = base(&other);
    let listed = app.send(&app.caller, Method::GET, &path, None).await;
    assert_eq!(listed.status, 404, "{:?}", listed.body);
    let changed = app.send(&app.caller, Method::PUT, &path, Some(&body)).await;
    assert_eq!(changed.status, 404, "{:?}", changed.body);
    assert!(providers(&app, &app.caller).await.is_empty());
    assert_eq!(providers(&app, &other).await.len(), 1);
    // A key with `providers:read` may list but not change.
    let reader = app.key_with_scopes(json!(["providers:read"])).await;
    let refused = put(&app, &reader, json!({"provider": "github", "enabled": false})).await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "insufficient_scope");
    assert!(providers(&app, &reader).await.is_empty());
}

#[actix_web::test]
async fn a_sealed_client_secret_copied_to_another_application_does_not_open() {
    let app = spawn_app().await;
    let second = app.create_application(json!({"name": "Second"})).await;
    let body = |secret: &str| json!({"provider": "slack", "enabled": true, "client_id": "c", "client_secret": secret});
    assert_eq!(put(&app, &app.caller, body("copied-client-secret")).await.status, 200);
    assert_eq!(put(&app, &second, body("other-client-secret")).await.status, 200);
    // An attacker with database access copies the first row's ciphertext.
    let first = row(&app, &app.caller, "slack").await;
    let sealed = first.client_secret_sealed.clone().unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("copied-client-secret"));
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let mut target = row(&app, &second, "slack").await.into_active_model();
    target.client_secret_sealed = Set(Some(sealed.clone()));
    target.update(shard).await.unwrap();
    let tampered = row(&app, &second, "slack").await;
    assert!(gatehouse::areas::oauth_providers::open_client_secret(&app.state.master_key, &tampered).is_err());
    // Another provider's row of the same application does not open it either.
    put(&app, &app.caller, json!({"provider": "discord", "enabled": false, "client_id": "d", "client_secret": "d"}))
        .await;
    let mut discord = row(&app, &app.caller, "discord").await.into_active_model();
    discord.client_secret_sealed = Set(Some(sealed));
    discord.update(shard).await.unwrap();
    let tampered = row(&app, &app.caller, "discord").await;
    assert!(gatehouse::areas::oauth_providers::open_client_secret(&app.state.master_key, &tampered).is_err());
    assert_eq!(opened(&app, &first).as_deref(), Some("copied-client-secret"));
}

#[actix_web::test]
async fn a_canary_secret_never_appears_in_answers_or_the_audit_export() {
    const CANARY: &str = "canary-4b1d8e2f-oauth-client-secret";
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    let mut answers = vec![
        put(&app, &caller, json!({"provider": "google", "enabled": true, "client_id": "c", "client_secret": CANARY}))
            .await,
        put(&app, &caller, json!({"provider": "google", "enabled": true, "client_id": "c"})).await,
        put(
            &app,
            &caller,
            json!({"provider": "apple", "enabled": true, "client_secret": CANARY, "scopes": ["bad scope"]}),
        )
        .await,
        put(&app, &production, json!({"provider": "microsoft", "enabled": true, "client_secret": CANARY})).await,
        put(
            &app,
            &production,
            json!({"provider": "linkedin", "enabled": true, "client_id": "l", "client_secret": CANARY}),
        )
        .await,
    ];
    answers.push(app.send(&caller, Method::GET, &base(&caller), None).await);
    answers.push(app.send(&production, Method::GET, &base(&production), None).await);
    answers.push(app.get("/v1/audit-logs/export?limit=1000").await);
    answers.push(app.get("/v1/audit-logs?limit=100").await);
    answers.push(app.send(&production, Method::GET, "/v1/audit-logs/export?limit=1000", None).await);
    for answer in &answers {
        assert!(answer.status < 500, "{:?}", answer.body);
        let text = answer.body.to_string();
        assert!(!text.contains(CANARY), "the canary leaked: {text}");
        assert!(!text.contains("client_secret_sealed"), "{text}");
    }
    assert_eq!(answers[0].data()["has_secret"], true);
    assert_eq!(answers[3].error_code(), "production_requires_own_credentials");
    assert_eq!(answers[4].status, 200);
}
