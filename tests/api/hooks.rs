//! Operation 8: hooks, and `pre_sign_up` calls to a real receiver on
//! loopback that checks our signature with the hook's secret.
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::{public_post, PASSWORD},
    helpers::{spawn_app, spawn_with, TestApp},
    webhooks::{verifies, Received},
};

#[derive(Clone, Default)]
pub struct HookScript {
    /// allow, deny, slow, error, redirect, garbage
    pub mode: Arc<Mutex<String>>,
    pub secret: Arc<Mutex<String>>,
    calls: Arc<Mutex<Vec<Value>>>,
}

async fn answer(req: HttpRequest, body: web::Bytes, script: web::Data<HookScript>) -> HttpResponse {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let call = Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    };
    if !verifies(&script.secret.lock().unwrap(), &call) {
        return HttpResponse::Unauthorized().finish();
    }
    script.calls.lock().unwrap().push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let mode = script.mode.lock().unwrap().clone();
    match mode.as_str() {
        "allow" => HttpResponse::Ok().json(json!({"decision": "allow"})),
        "deny" => HttpResponse::Ok().json(json!({"decision": "deny", "message": "Only employees may sign up."})),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            HttpResponse::Ok().json(json!({"decision": "allow"}))
        }
        "error" => HttpResponse::InternalServerError().finish(),
        "redirect" => HttpResponse::Found().insert_header(("location", "/allow")).finish(),
        _ => HttpResponse::Ok().body("not json"),
    }
}

impl HookScript {
    /// How many calls have arrived (a slow answer counts from its arrival).
    pub fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

pub async fn start_hook_receiver() -> (String, HookScript) {
    let script = HookScript::default();
    let data = web::Data::new(script.clone());
    let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(answer)))
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
    let port = server.addrs()[0].port();
    actix_web::rt::spawn(server.run());
    (format!("http://127.0.0.1:{port}/pre-sign-up"), script)
}

async fn hook_app(fail_open: bool) -> (TestApp, HookScript, String) {
    let app = spawn_app().await;
    let (url, script) = start_hook_receiver().await;
    let created = app
        .post("/v1/hooks", &json!({"point": "pre_sign_up", "url": url, "fail_open": fail_open, "timeout_ms": 500}))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    *script.secret.lock().unwrap() = created.data()["secret"].as_str().unwrap().to_string();
    let id = created.data()["id"].as_str().unwrap().to_string();
    (app, script, id)
}

async fn try_sign_up(app: &TestApp, script: &HookScript, mode: &str, email: &str) -> crate::helpers::Reply {
    *script.mode.lock().unwrap() = mode.to_string();
    let body = json!({"email": email, "password": PASSWORD, "profile": {}});
    public_post(app, &app.caller, "/v1/auth/sign-up", &body).await
}

fn hook_calls(rows: &Value) -> Vec<Value> {
    rows.as_array().unwrap().iter().filter(|r| r["type"] == "hook.called").map(|r| r["data"].clone()).collect()
}

#[actix_web::test]
async fn a_closed_hook_decides_sign_ups_and_every_call_is_audited() {
    let (app, script, _) = hook_app(false).await;
    let allowed = try_sign_up(&app, &script, "allow", "ada@example.com").await;
    assert_eq!(allowed.status, 201, "{:?}", allowed.body);
    let call = script.calls.lock().unwrap()[0].clone();
    assert_eq!(call["type"], "pre_sign_up");
    assert_eq!(call["application_id"], app.caller.application_id.as_str());
    assert_eq!(call["data"]["email"], "ada@example.com");

    let denied = try_sign_up(&app, &script, "deny", "bob@example.com").await;
    assert_eq!((denied.status, denied.error_code()), (403, "sign_up_denied"));
    assert_eq!(denied.body["error"]["message"], "Only employees may sign up.");
    for mode in ["slow", "error", "redirect", "garbage"] {
        let started = Instant::now();
        let failed = try_sign_up(&app, &script, mode, "carol@example.com").await;
        assert_eq!((failed.status, failed.error_code()), (503, "hook_unavailable"), "{mode}");
        assert!(failed.header("retry-after").is_some());
        assert!(started.elapsed() < Duration::from_millis(2000), "{mode}: the deadline is timeout_ms");
    }
    let users = app.get("/v1/users").await;
    assert_eq!(users.data().as_array().unwrap().len(), 1, "denied and failed sign-ups leave no user");
    let rows = app.get("/v1/audit-logs/export?limit=1000").await;
    let types: Vec<&str> = rows.data().as_array().unwrap().iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(types.iter().filter(|t| **t == "user.created").count(), 1);
    assert_eq!(types.iter().filter(|t| **t == "session.created").count(), 1);
    let calls = hook_calls(rows.data());
    let outcomes: Vec<&str> = calls.iter().map(|c| c["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["allow", "deny", "failed", "failed", "failed", "failed"]);
    let errors: Vec<&str> = calls[2..].iter().map(|c| c["error"].as_str().unwrap()).collect();
    assert_eq!(errors, ["timeout", "status", "status", "unreadable_answer"]);
    assert_eq!(calls[3]["response_status"], 500);
    assert_eq!(calls[4]["response_status"], 302, "redirects are not followed");
    assert!(calls.iter().all(|c| c["duration_ms"].is_u64()));
}

#[actix_web::test]
async fn an_open_hook_lets_sign_ups_through_when_it_fails_but_not_when_it_denies() {
    let (app, script, id) = hook_app(true).await;
    let failed_open = try_sign_up(&app, &script, "error", "ada@example.com").await;
    assert_eq!(failed_open.status, 201, "{:?}", failed_open.body);
    let denied = try_sign_up(&app, &script, "deny", "bob@example.com").await;
    assert_eq!(denied.status, 403);
    let disabled = app.patch(&format!("/v1/hooks/{id}"), &json!({"enabled": false})).await;
    assert_eq!(disabled.status, 200, "{:?}", disabled.body);
    assert_eq!(disabled.data()["enabled"], false);
    assert_eq!(
        try_sign_up(&app, &script, "deny", "bob@example.com").await.status,
        201,
        "a disabled hook is not called"
    );
}

#[actix_web::test]
async fn hooks_are_validated_managed_and_isolated() {
    let app = spawn_app().await;
    for body in [
        json!({"point": "post_sign_up", "url": "https://h.example/x"}),
        json!({"point": "pre_sign_up", "url": "https://h.example/x", "timeout_ms": 99}),
        json!({"point": "pre_sign_up", "url": "https://h.example/x", "timeout_ms": 15001}),
        json!({"point": "pre_sign_up", "url": "ftp://h.example/x"}),
        json!({"point": "pre_sign_up", "url": ""}),
    ] {
        let reply = app.post("/v1/hooks", &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    let created = app.post("/v1/hooks", &json!({"point": "pre_sign_up", "url": "https://h.example/x"})).await;
    assert_eq!(created.status, 201);
    assert!(created.data()["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(created.data()["timeout_ms"], 5000);
    assert_eq!(created.data()["fail_open"], false);
    let id = created.data()["id"].as_str().unwrap();
    let found = app.get(&format!("/v1/hooks/{id}")).await;
    assert!(found.data().get("secret").is_none());
    let point = app.patch(&format!("/v1/hooks/{id}"), &json!({"point": "pre_sign_up"})).await;
    assert!(matches!(point.status, 400 | 422), "point is not part of the update");
    let patched = app.patch(&format!("/v1/hooks/{id}"), &json!({"timeout_ms": 100, "description": "check"})).await;
    assert_eq!(patched.data()["timeout_ms"], 100);
    let other = app.other_account().await;
    assert_eq!(
        app.send(&other, Method::PATCH, &format!("/v1/hooks/{id}"), Some(&json!({"enabled": false}))).await.status,
        404
    );
    assert_eq!(app.get("/v1/hooks").await.data().as_array().unwrap().len(), 1);
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/hooks/{id}"), None).await.status, 200);
    assert_eq!(app.get(&format!("/v1/hooks/{id}")).await.status, 404);
    let types = app.audit_types().await;
    for expected in ["hook.created", "hook.updated", "hook.deleted"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn a_sign_ups_hooks_share_one_overall_deadline() {
    // Arrange: three slow fail-open hooks of 2 s each, 1 s for all of them.
    let app = spawn_with(|s| s.hooks.total_timeout_ms = 1000).await;
    for _ in 0..3 {
        let (url, script) = start_hook_receiver().await;
        let created = app
            .post("/v1/hooks", &json!({"point": "pre_sign_up", "url": url, "fail_open": true, "timeout_ms": 2000}))
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        *script.secret.lock().unwrap() = created.data()["secret"].as_str().unwrap().to_string();
        *script.mode.lock().unwrap() = "slow".to_string();
    }
    // Act
    let started = Instant::now();
    let body = json!({"email": "deadline@example.com", "password": PASSWORD});
    let reply = public_post(&app, &app.caller, "/v1/auth/sign-up", &body).await;
    let took = started.elapsed();
    // Assert: one deadline (1 s), not the sum of the three timeouts (6 s).
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    assert!(took < Duration::from_secs(3), "the sign-up took {took:?}");
    let rows = app.get("/v1/audit-logs/export?limit=1000").await;
    let calls: Vec<&Value> = rows.data().as_array().unwrap().iter().filter(|r| r["type"] == "hook.called").collect();
    assert_eq!(calls.len(), 3, "every hook's call (or the lack of time for it) is recorded");
    assert!(calls.iter().all(|c| c["data"]["error"] == "timeout"), "{calls:?}");
}

/// Sign-up restrictions, a tenant setting of this area: a blocked domain
/// and a domain off the allowed list are refused 403 `sign_up_denied`
/// before any hook is called; a user made with a
/// secret key is the operator's and is not checked; the change is audited.
#[actix_web::test]
async fn sign_up_restrictions_refuse_blocked_and_unlisted_domains_before_any_hook() {
    let (app, script, _) = hook_app(false).await;
    let path = "/v1/sign-up-restrictions";
    let empty = json!({"allowed_email_domains": [], "blocked_email_domains": []});
    assert_eq!(app.get(path).await.data(), &empty, "none until set");
    let wanted = json!({"allowed_email_domains": ["Acme.test.", "acme.test"], "blocked_email_domains": ["contractors.acme.test"]});
    let put = app.send(&app.caller, Method::PUT, path, Some(&wanted)).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    let stored = json!({"allowed_email_domains": ["acme.test"], "blocked_email_domains": ["contractors.acme.test"]});
    assert_eq!(put.data(), &stored, "normal form, each once");
    assert_eq!(app.get(path).await.data(), &stored);

    for email in ["eve@gmail.com", "bob@contractors.acme.test", "mal@acme.test.evil.example"] {
        let refused = try_sign_up(&app, &script, "allow", email).await;
        assert_eq!((refused.status, refused.error_code()), (403, "sign_up_denied"), "{email}");
    }
    assert_eq!(script.calls(), 0, "refused before any hook is called");
    let admitted = try_sign_up(&app, &script, "allow", "amy@eu.acme.test").await;
    assert_eq!(admitted.status, 201, "{:?}", admitted.body);
    assert_eq!(script.calls(), 1);
    let made = app.post("/v1/users", &json!({"email": "ext@gmail.com"})).await;
    assert_eq!(made.status, 201, "a secret key's user is not checked: {:?}", made.body);

    let invalid =
        app.send(&app.caller, Method::PUT, path, Some(&json!({"blocked_email_domains": ["not a domain"]}))).await;
    assert_eq!((invalid.status, invalid.error_code()), (422, "validation_failed"));
    assert_eq!(invalid.body["error"]["details"][0]["field"], "blocked_email_domains[0]");
    assert_eq!(app.get(path).await.data(), &stored, "a refused change changes nothing");
    let cleared = app.send(&app.caller, Method::PUT, path, Some(&json!({}))).await;
    assert_eq!(cleared.data(), &empty);
    assert_eq!(try_sign_up(&app, &script, "allow", "eve@gmail.com").await.status, 201, "cleared at once");
    let audited = app.audit_types().await;
    assert_eq!(audited.iter().filter(|t| *t == "sign_up_restrictions.updated").count(), 2);
}
