//! Service accounts (operation 14) and their keys: CRUD, validation,
//! isolation, verification in every state, and `sak_` keys refused on the
//! management routes.
use entity::{service_account, service_account_key};
use reqwest::Method;
use sea_orm::{sea_query::Expr, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{json, Value};

use crate::helpers::{first_shard, spawn_app, spawn_with, Caller, TestApp};

async fn create_account(app: &TestApp, body: Value) -> Value {
    let created = app.post("/v1/service-accounts", &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data().clone()
}

async fn create_key(app: &TestApp, account_id: &str, body: Value) -> Value {
    let created = app.post(&format!("/v1/service-accounts/{account_id}/keys"), &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data().clone()
}

async fn verify(app: &TestApp, caller: &Caller, secret: &str) -> Value {
    let reply = app.send(caller, Method::POST, "/v1/api-keys/verify", Some(&json!({"secret": secret}))).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().clone()
}

async fn counts(app: &TestApp) -> (u64, u64) {
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    (
        service_account::Entity::find().count(shard).await.unwrap(),
        service_account_key::Entity::find().count(shard).await.unwrap(),
    )
}

#[actix_web::test]
async fn a_service_account_is_created_listed_read_changed_and_deleted() {
    let app = spawn_app().await;
    let created = app
        .post(
            "/v1/service-accounts",
            &json!({"name": "billing-worker", "description": "nightly", "scopes": ["write", "read", "read"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let account = created.data().clone();
    let id = account["id"].as_str().unwrap().to_string();
    let mut fields: Vec<&str> = account.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(fields, ["created_at", "description", "enabled", "id", "name", "scopes"]);
    assert_eq!(account["enabled"], true, "enabled by default");
    assert_eq!(account["scopes"], json!(["read", "write"]));
    let bare = create_account(&app, json!({"name": "bare", "enabled": false})).await;
    assert_eq!(
        (bare["description"].clone(), bare["enabled"].clone(), bare["scopes"].clone()),
        (Value::Null, json!(false), json!([]))
    );

    let listed = app.get("/v1/service-accounts").await;
    assert_eq!(listed.status, 200);
    let ids: Vec<&str> = listed.data().as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [bare["id"].as_str().unwrap(), id.as_str()], "newest first");
    let paged = app.get("/v1/service-accounts?limit=1").await;
    assert_eq!(paged.data().as_array().unwrap().len(), 1);
    assert_eq!(paged.body["meta"]["has_more"], true, "{:?}", paged.body);

    let found = app.get(&format!("/v1/service-accounts/{id}")).await;
    assert_eq!((found.status, found.data().clone()), (200, account.clone()));
    let patched = app
        .patch(
            &format!("/v1/service-accounts/{id}"),
            &json!({"name": "renamed", "description": null, "scopes": ["admin"]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["name"], "renamed");
    assert_eq!(patched.data()["description"], Value::Null);
    assert_eq!(patched.data()["scopes"], json!(["admin"]));
    assert_eq!(patched.data()["enabled"], true, "untouched");

    let deleted = app.send(&app.caller, Method::DELETE, &format!("/v1/service-accounts/{id}"), None).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(app.get(&format!("/v1/service-accounts/{id}")).await.status, 404);
    let again = app.send(&app.caller, Method::DELETE, &format!("/v1/service-accounts/{id}"), None).await;
    assert_eq!(again.status, 404);

    let types = app.audit_types().await;
    for expected in ["service_account.created", "service_account.updated", "service_account.deleted"] {
        assert!(types.iter().any(|t| t == expected), "{expected} in {types:?}");
    }
}

#[actix_web::test]
async fn bad_input_is_422_and_stores_nothing() {
    let app = spawn_app().await;
    let too_many: Vec<String> = (0..51).map(|i| format!("s{i}")).collect();
    for body in [
        json!({}),
        json!({"name": ""}),
        json!({"name": "   "}),
        json!({"name": "x".repeat(256)}),
        json!({"name": "ok", "scopes": ["Not A Scope"]}),
        json!({"name": "ok", "scopes": too_many}),
        json!({"name": "ok", "enabled": "yes"}),
        json!({"name": "ok", "description": ""}),
        json!({"name": "ok", "unknown": 1}),
    ] {
        let reply = app.post("/v1/service-accounts", &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    assert_eq!(counts(&app).await, (0, 0));
    let account = create_account(&app, json!({"name": "svc"})).await;
    let id = account["id"].as_str().unwrap();
    for body in [json!({"name": ""}), json!({"scopes": ["BAD"]}), json!({"enabled": null, "x": 1})] {
        let reply = app.patch(&format!("/v1/service-accounts/{id}"), &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    assert_eq!(app.get(&format!("/v1/service-accounts/{id}")).await.data(), &account, "unchanged");
    for body in [
        json!({}),
        json!({"name": ""}),
        json!({"name": "k", "expires_in_days": 0}),
        json!({"name": "k", "expires_in_days": 3651}),
        json!({"name": "k", "scopes": ["read"]}),
    ] {
        let reply = app.post(&format!("/v1/service-accounts/{id}/keys"), &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    assert_eq!(counts(&app).await, (1, 0));
    assert_eq!(app.get("/v1/service-accounts/not-a-uuid").await.status, 404);
}

#[actix_web::test]
async fn the_limits_of_accounts_and_of_keys_per_account_hold() {
    let app = spawn_with(|s| {
        s.limits.service_accounts_per_application = 2;
        s.limits.keys_per_service_account = 2;
    })
    .await;
    let account = create_account(&app, json!({"name": "a"})).await;
    create_account(&app, json!({"name": "b"})).await;
    let third = app.post("/v1/service-accounts", &json!({"name": "c"})).await;
    assert_eq!(third.status, 422, "{:?}", third.body);
    let id = account["id"].as_str().unwrap();
    let first = create_key(&app, id, json!({"name": "k1"})).await;
    create_key(&app, id, json!({"name": "k2"})).await;
    let over = app.post(&format!("/v1/service-accounts/{id}/keys"), &json!({"name": "k3"})).await;
    assert_eq!(over.status, 422, "{:?}", over.body);
    let key_id = first["id"].as_str().unwrap();
    assert_eq!(app.post(&format!("/v1/service-accounts/{id}/keys/{key_id}/revoke"), &json!({})).await.status, 200);
    create_key(&app, id, json!({"name": "k3"})).await;
}

#[actix_web::test]
async fn keys_are_issued_once_listed_without_secrets_and_verified_with_the_accounts_scopes() {
    let app = spawn_app().await;
    let account = create_account(&app, json!({"name": "svc", "scopes": ["orders:read", "orders:write"]})).await;
    let id = account["id"].as_str().unwrap();
    let key = create_key(&app, id, json!({"name": "ci", "expires_in_days": 30})).await;
    let secret = key["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("sak_test_") && secret.len() == "sak_test_".len() + 38, "{secret}");
    assert_eq!(key["prefix"], &secret[..12]);
    assert_eq!(key["scopes"], json!(["orders:read", "orders:write"]));
    assert_eq!(key["active"], true);
    assert!(key["expires_at"].is_string());
    let key_id = key["id"].as_str().unwrap();

    let listed = app.get(&format!("/v1/service-accounts/{id}/keys")).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert!(listed.data()[0].get("secret").is_none());

    let verified = verify(&app, &app.caller, &secret).await;
    assert_eq!(
        verified,
        json!({"valid": true, "kind": "service_account", "subject_id": id, "scopes": ["orders:read", "orders:write"], "key_id": key_id})
    );
    // The account's scopes, as they are now.
    app.patch(&format!("/v1/service-accounts/{id}"), &json!({"scopes": ["orders:read"]})).await;
    assert_eq!(verify(&app, &app.caller, &secret).await["scopes"], json!(["orders:read"]));
    crate::wait::until("a verified key to record its use", || async {
        app.get(&format!("/v1/service-accounts/{id}/keys")).await.data()[0]["last_used_at"].is_string()
    })
    .await;

    // Look-alikes and other kinds are not service-account keys.
    let mut broken = secret.clone().into_bytes();
    broken[12] = if broken[12] == b'a' { b'b' } else { b'a' };
    for wrong in [
        String::from_utf8(broken).unwrap(),
        secret.replacen("sak_test_", "sak_live_", 1),
        "sak_".into(),
        app.caller.key.clone(),
    ] {
        assert_eq!(verify(&app, &app.caller, &wrong).await, json!({"valid": false}), "{wrong}");
    }

    // Audit rows: `api_key.created`/`api_key.revoked` with kind service_account; no secret anywhere.
    let revoked = app.post(&format!("/v1/service-accounts/{id}/keys/{key_id}/revoke"), &json!({})).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    assert!(revoked.data()["revoked_at"].is_string());
    assert_eq!(revoked.data()["active"], false);
    let twice = app.post(&format!("/v1/service-accounts/{id}/keys/{key_id}/revoke"), &json!({})).await;
    assert_eq!((twice.status, &twice.data()["revoked_at"]), (200, &revoked.data()["revoked_at"]));
    assert_eq!(verify(&app, &app.caller, &secret).await, json!({"valid": false}), "revoked");
    let export = app.get("/v1/audit-logs/export?limit=1000").await;
    let rows = export.data().as_array().unwrap();
    let of_key: Vec<&Value> = rows.iter().filter(|r| r["aggregate_id"] == key_id).collect();
    let types: Vec<&str> = of_key.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"api_key.created") && types.contains(&"api_key.revoked"), "{types:?}");
    assert!(of_key.iter().all(|r| r["data"]["kind"] == "service_account"), "{of_key:?}");
    let hash = gatehouse::crypto::sha256_hex(secret.as_bytes());
    for text in
        [export.body.to_string(), listed.body.to_string(), app.get("/v1/service-accounts").await.body.to_string()]
    {
        assert!(!text.contains(&secret) && !text.contains(&secret[12..]) && !text.contains(&hash));
    }
}

#[actix_web::test]
async fn verification_refuses_disabled_deleted_expired_and_other_applications_keys() {
    let app = spawn_app().await;
    let account = create_account(&app, json!({"name": "svc", "scopes": ["read"]})).await;
    let id = account["id"].as_str().unwrap().to_string();
    let secret = create_key(&app, &id, json!({"name": "k"})).await["secret"].as_str().unwrap().to_string();
    assert_eq!(verify(&app, &app.caller, &secret).await["valid"], true);

    // Another application (same account, and another account) never resolves it.
    let sibling = app.create_application(json!({"name": "Sibling"})).await;
    assert_eq!(verify(&app, &sibling, &secret).await, json!({"valid": false}));
    let other = app.other_account().await;
    assert_eq!(verify(&app, &other, &secret).await, json!({"valid": false}));

    // Disabled: refused at once; enabled again: works again.
    assert_eq!(app.patch(&format!("/v1/service-accounts/{id}"), &json!({"enabled": false})).await.status, 200);
    assert_eq!(verify(&app, &app.caller, &secret).await, json!({"valid": false}), "disabled");
    assert_eq!(app.patch(&format!("/v1/service-accounts/{id}"), &json!({"enabled": true})).await.status, 200);
    assert_eq!(verify(&app, &app.caller, &secret).await["valid"], true, "enabled again");

    // Expired.
    let expiring = create_key(&app, &id, json!({"name": "short", "expires_in_days": 1})).await;
    let expiring_secret = expiring["secret"].as_str().unwrap().to_string();
    assert_eq!(verify(&app, &app.caller, &expiring_secret).await["valid"], true);
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let expiring_id: uuid::Uuid = expiring["id"].as_str().unwrap().parse().unwrap();
    service_account_key::Entity::update_many()
        .col_expr(
            service_account_key::Column::ExpiresAt,
            Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(service_account_key::Column::Id.eq(expiring_id))
        .exec(shard)
        .await
        .unwrap();
    assert_eq!(verify(&app, &app.caller, &expiring_secret).await, json!({"valid": false}), "expired");
    let listed = app.get(&format!("/v1/service-accounts/{id}/keys")).await;
    assert_eq!(listed.data()[0]["active"], false);

    // Deleted: the account and its keys go in one transaction.
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/service-accounts/{id}"), None).await.status, 200);
    assert_eq!(verify(&app, &app.caller, &secret).await, json!({"valid": false}), "deleted");
    assert_eq!(counts(&app).await, (0, 0), "keys deleted with their account");
}

#[actix_web::test]
async fn another_applications_account_and_keys_are_404() {
    let app = spawn_app().await;
    let account = create_account(&app, json!({"name": "svc"})).await;
    let id = account["id"].as_str().unwrap();
    let key_id = create_key(&app, id, json!({"name": "k"})).await["id"].as_str().unwrap().to_string();
    let other = app.other_account().await;
    let requests = [
        (Method::GET, format!("/v1/service-accounts/{id}"), None),
        (Method::PATCH, format!("/v1/service-accounts/{id}"), Some(json!({"enabled": false}))),
        (Method::DELETE, format!("/v1/service-accounts/{id}"), None),
        (Method::GET, format!("/v1/service-accounts/{id}/keys"), None),
        (Method::POST, format!("/v1/service-accounts/{id}/keys"), Some(json!({"name": "mine"}))),
        (Method::POST, format!("/v1/service-accounts/{id}/keys/{key_id}/revoke"), Some(json!({}))),
    ];
    for (method, path, body) in requests {
        let reply = app.send(&other, method.clone(), &path, body.as_ref()).await;
        assert_eq!(reply.status, 404, "{method} {path}: {:?}", reply.body);
    }
    assert_eq!(app.send(&other, Method::GET, "/v1/service-accounts", None).await.data(), &json!([]));
    // Another account's key under this account's path is 404 too.
    let second = create_account(&app, json!({"name": "second"})).await;
    let second_id = second["id"].as_str().unwrap();
    let wrong = app.post(&format!("/v1/service-accounts/{second_id}/keys/{key_id}/revoke"), &json!({})).await;
    assert_eq!(wrong.status, 404);
    let found = app.get(&format!("/v1/service-accounts/{id}")).await;
    assert_eq!((found.status, found.data().clone()), (200, account.clone()), "untouched");
    assert_eq!(app.get(&format!("/v1/service-accounts/{id}/keys")).await.data()[0]["active"], true);
}

#[actix_web::test]
async fn a_service_account_key_is_not_a_secret_key_on_any_management_route() {
    let app = spawn_app().await;
    let account = create_account(&app, json!({"name": "svc", "scopes": ["admin"]})).await;
    let id = account["id"].as_str().unwrap();
    let secret = create_key(&app, id, json!({"name": "k"})).await["secret"].as_str().unwrap().to_string();
    let machine = Caller { application_id: app.caller.application_id.clone(), key: secret };
    for (method, path) in [
        (Method::GET, "/v1/api-keys".to_string()),
        (Method::POST, "/v1/api-keys/verify".to_string()),
        (Method::GET, "/v1/service-accounts".to_string()),
        (Method::GET, format!("/v1/service-accounts/{id}")),
        (Method::GET, "/v1/users".to_string()),
        (Method::GET, "/v1/audit-logs".to_string()),
    ] {
        let reply = app.send(&machine, method.clone(), &path, Some(&json!({"secret": "x"}))).await;
        assert_eq!(reply.status, 401, "{method} {path}: {:?}", reply.body);
    }
}
