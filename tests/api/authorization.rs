//! Authorization as the document declares it (contract §4), walked over
//! every operation of `/v1/openapi.json`: a secret key lacking the declared
//! scope is 403, one holding exactly that scope passes, every other kind of
//! credential is 401; and no answer may be stored by a cache unless its
//! operation says so.
use std::collections::HashMap;

use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    end_users::{as_user, sign_up},
    helpers::{spawn_app, Caller, Reply, TestApp},
};

/// One operation of the document.
struct Operation {
    method: Method,
    path: String,
    /// `Some(scope)` for a secret-key operation.
    secret_key_scope: Option<String>,
    access_token: bool,
    /// Answers in its standard's format (`x-gatehouse-caller: oauth_client`),
    /// not the envelope: a refused token is RFC 6750's `invalid_token`.
    standard: bool,
    has_body: bool,
}

fn operations(document: &Value) -> Vec<Operation> {
    let mut all = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else { continue };
            let security = operation["security"].as_array().cloned().unwrap_or_default();
            let scheme = |name: &str| security.iter().find_map(|r| r.get(name)).cloned();
            all.push(Operation {
                method,
                path: path.clone(),
                secret_key_scope: scheme("secret_key").map(|scopes| {
                    assert_eq!(scopes.as_array().map(Vec::len), Some(1), "{path}: one scope");
                    scopes[0].as_str().unwrap().to_string()
                }),
                access_token: scheme("access_token").is_some(),
                standard: operation["x-gatehouse-caller"] == "oauth_client",
                has_body: operation.get("requestBody").is_some(),
            });
        }
    }
    all
}

/// The operation's path with its own application's id and unknown ids elsewhere.
fn concrete(path: &str, caller: &Caller) -> String {
    let segment = |s: &str| match s {
        "{application_id}" => caller.application_id.clone(),
        s if s.starts_with('{') => Uuid::new_v4().to_string(),
        s => s.to_string(),
    };
    path.split('/').map(segment).collect::<Vec<_>>().join("/")
}

async fn call(app: &TestApp, operation: &Operation, caller: &Caller) -> Reply {
    let path = concrete(&operation.path, caller);
    let body = operation.has_body.then(|| json!({}));
    app.send(caller, operation.method.clone(), &path, body.as_ref()).await
}

#[actix_web::test]
async fn every_operation_takes_only_its_declared_credential_and_scope() {
    let app = spawn_app().await;
    let document = app.get("/v1/openapi.json").await.body;
    let mut operations = operations(&document);
    // Signing out ends the session the other end-user operations use.
    operations.sort_by_key(|o| o.path.ends_with("/sign-out"));
    let user = sign_up(&app, &app.caller, "walker@example.com").await;
    let end_user = as_user(&app.caller, user["access_token"].as_str().unwrap());
    // Well-formed scopes that no operation declares: they grant nothing.
    let unrelated = app.key_with_scopes(json!(["orders:read", "users:reader"])).await;
    let no_scopes = app.key_with_scopes(json!([])).await;
    let mut exact: HashMap<String, Caller> = HashMap::new();
    let (mut secret_key_operations, mut end_user_operations) = (0, 0);

    for operation in &operations {
        let name = format!("{} {}", operation.method, operation.path);
        if let Some(scope) = &operation.secret_key_scope {
            secret_key_operations += 1;
            for lacking in [&unrelated, &no_scopes] {
                let refused = call(&app, operation, lacking).await;
                assert_eq!((refused.status, refused.error_code()), (403, "insufficient_scope"), "{name}");
            }
            if scope != "admin" {
                // A key with every other area's scopes still lacks this one.
                let (area, access) = scope.split_once(':').unwrap();
                let other = if access == "read" { format!("{area}:write") } else { format!("{area}:read") };
                let neighbour = key_for(&app, &mut exact, &other).await;
                let refused = call(&app, operation, &neighbour).await;
                assert_eq!(refused.status, 403, "{name} with `{other}`: {:?}", refused.body);
            }
            let holder = key_for(&app, &mut exact, scope).await;
            let passed = call(&app, operation, &holder).await;
            assert!(![401, 403].contains(&passed.status), "{name} with exactly `{scope}`: {:?}", passed.body);
            assert_eq!(call(&app, operation, &end_user).await.status, 401, "{name} with an access token");
        }
        if operation.access_token {
            end_user_operations += 1;
            let refused = call(&app, operation, &app.caller).await;
            let code = if operation.standard {
                refused.body["error"].as_str().unwrap_or_default()
            } else {
                refused.error_code()
            };
            let expected = if operation.standard { "invalid_token" } else { "unauthenticated" };
            assert_eq!((refused.status, code), (401, expected), "{name} with a secret key");
            let passed = call(&app, operation, &end_user).await;
            assert_ne!(passed.status, 401, "{name} with an access token: {:?}", passed.body);
        }
    }
    assert!(secret_key_operations > 90 && end_user_operations > 20, "{secret_key_operations}, {end_user_operations}");
}

/// A key holding exactly `scope`, made once.
async fn key_for(app: &TestApp, made: &mut HashMap<String, Caller>, scope: &str) -> Caller {
    if let Some(key) = made.get(scope) {
        return key.clone();
    }
    let key = app.key_with_scopes(json!([scope])).await;
    made.insert(scope.to_string(), key.clone());
    key
}

#[actix_web::test]
async fn a_key_made_for_audit_export_cannot_rewrite_the_application_or_reach_its_secrets() {
    let app = spawn_app().await;
    let auditor = app.key_with_scopes(json!(["audit:read"])).await;
    let id = &app.caller.application_id;
    let attacks: [(Method, String, Value); 4] = [
        (
            Method::PATCH,
            format!("/v1/applications/{id}"),
            json!({"allowed_origins": ["https://attacker.example"], "require_aal2_for": [], "require_verified_email": false}),
        ),
        (Method::POST, "/v1/webhooks".into(), json!({"url": "https://attacker.example/hook"})),
        (
            Method::POST,
            "/v1/hooks".into(),
            json!({"point": "pre_sign_up", "url": "https://attacker.example/hook", "timeout_ms": 1000}),
        ),
        (
            Method::PUT,
            format!("/v1/applications/{id}/providers/messaging"),
            json!({"channel": "email", "kind": "smtp", "config": {"host": "attacker.example", "port": 25, "from": "a@attacker.example", "starttls": true}}),
        ),
    ];
    for (method, path, body) in attacks {
        let refused = app.send(&auditor, method.clone(), &path, Some(&body)).await;
        assert_eq!((refused.status, refused.error_code()), (403, "insufficient_scope"), "{method} {path}");
    }
    let application = app.get(&format!("/v1/applications/{id}")).await;
    assert_eq!(application.data()["allowed_origins"], json!([]));
    assert_eq!(app.get("/v1/webhooks").await.data(), &json!([]));
    assert_eq!(app.get("/v1/hooks").await.data(), &json!([]));
    // What the key was made for still works.
    assert_eq!(app.send(&auditor, Method::GET, "/v1/audit-logs/export", None).await.status, 200);
}

#[actix_web::test]
async fn no_answer_is_stored_by_a_cache_unless_its_operation_says_so() {
    let app = spawn_app().await;
    let document = app.get("/v1/openapi.json").await.body;
    let user = sign_up(&app, &app.caller, "cache@example.com").await;
    let end_user = as_user(&app.caller, user["access_token"].as_str().unwrap());
    for operation in operations(&document) {
        let caller = if operation.access_token { &end_user } else { &app.caller };
        let reply = call(&app, &operation, caller).await;
        let cache_control = reply.header("cache-control");
        if operation.path.contains("/.well-known/") {
            assert!(cache_control.is_some_and(|c| c.starts_with("public")), "{} {}", operation.method, operation.path);
        } else {
            assert_eq!(cache_control, Some("no-store"), "{} {}: {}", operation.method, operation.path, reply.status);
        }
    }
    // The answers that carry tokens and secrets, as they are used.
    let signed_in = crate::end_users::public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "cache@example.com", "password": crate::end_users::PASSWORD}),
    )
    .await;
    assert_eq!((signed_in.status, signed_in.header("cache-control")), (200, Some("no-store")));
    let key = app.post("/v1/api-keys", &json!({"name": "cached?"})).await;
    assert_eq!((key.status, key.header("cache-control")), (201, Some("no-store")));
}
