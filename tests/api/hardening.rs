//! What an attack run and a fault run found (issue 13), one test per
//! defect: each failed on the code before its fix.
use std::{
    io::{Read, Write},
    time::Duration,
};

use futures_util::future::join_all;
use reqwest::Method;
use sea_orm::{ConnectionTrait, Database};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    end_users::{as_user, public_post, sign_up, PASSWORD},
    helpers::{region, spawn_app, spawn_with, Caller, Reply, TestApp},
};

/// Creators sent at once against each limit.
const CREATORS: usize = 20;

/// Sends [`CREATORS`] versions of one request at once; the replies' statuses.
async fn at_once(app: &TestApp, caller: &Caller, path: &str, body: impl Fn(usize) -> Value) -> Vec<u16> {
    let sends = (0..CREATORS).map(|i| {
        let body = body(i);
        async move { app.send(caller, Method::POST, path, Some(&body)).await.status }
    });
    join_all(sends).await
}

fn tally(statuses: &[u16]) -> (usize, usize) {
    assert!(statuses.iter().all(|s| *s == 201 || *s == 422), "only 201 or 422: {statuses:?}");
    (statuses.iter().filter(|s| **s == 201).count(), statuses.iter().filter(|s| **s == 422).count())
}

#[actix_web::test]
async fn every_count_limit_is_exact_under_concurrent_creators() {
    // Arrange: small limits, so twenty creators at once cross each of them.
    let app = spawn_with(|s| {
        s.limits.active_secret_keys_per_application = 5;
        s.limits.webhooks_per_application = 3;
        s.limits.hooks_per_application = 3;
        s.limits.profile_fields_per_application = 3;
        s.limits.personal_keys_per_user = 4;
        s.server.workers = 4;
    })
    .await;
    let caller = app.caller.clone();
    let user = sign_up(&app, &caller, "limits@example.com").await;
    let user = as_user(&caller, user["access_token"].as_str().unwrap());

    // Act
    let keys = at_once(&app, &caller, "/v1/api-keys", |i| json!({"name": format!("k{i}")})).await;
    let webhooks = at_once(&app, &caller, "/v1/webhooks", |i| json!({"url": format!("http://127.0.0.1:9/w{i}")})).await;
    let hooks = at_once(
        &app,
        &caller,
        "/v1/hooks",
        |i| json!({"point": "pre_sign_up", "url": format!("http://127.0.0.1:9/h{i}"), "enabled": false}),
    )
    .await;
    let fields = at_once(
        &app,
        &caller,
        "/v1/profile-fields",
        |i| json!({"key": format!("f{i}"), "label": "F", "field_type": "text"}),
    )
    .await;
    let personal = at_once(&app, &user, "/v1/auth/me/api-keys", |i| json!({"name": format!("p{i}")})).await;

    // Assert: the first admin key counts among the five.
    assert_eq!(tally(&keys), (4, 16), "{keys:?}");
    assert_eq!(tally(&webhooks), (3, 17), "{webhooks:?}");
    assert_eq!(tally(&hooks), (3, 17), "{hooks:?}");
    assert_eq!(tally(&fields), (3, 17), "{fields:?}");
    assert_eq!(tally(&personal), (4, 16), "{personal:?}");
    let listed = app.get("/v1/api-keys?limit=100").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 5);
    let refused = app.post("/v1/api-keys", &json!({"name": "one more"})).await;
    assert_eq!(refused.error_code(), "validation_failed");
    assert_eq!(refused.body["error"]["details"][0]["field"], "name");
}

#[actix_web::test]
async fn a_nul_in_any_json_string_is_422_on_every_backend_and_stores_nothing() {
    let app = spawn_app().await;
    // No credentials needed: the attack run's 500 on PostgreSQL.
    let sign_in = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "a\u{0}b@example.com", "password": PASSWORD}),
    )
    .await;
    assert_eq!((sign_in.status, sign_in.error_code()), (422, "validation_failed"), "{:?}", sign_in.body);
    assert_eq!(sign_in.body["error"]["details"][0]["field"], "email");

    let user = app
        .post("/v1/users", &json!({"email": "nul@example.com", "password": PASSWORD, "profile": {"x\u{0}": 1}}))
        .await;
    assert_eq!(user.status, 422, "{:?}", user.body);
    let org = app.post("/v1/organizations", &json!({"name": "Acme\u{0}"})).await;
    assert_eq!((org.status, org.body["error"]["details"][0]["field"].as_str()), (422, Some("name")));
    assert_eq!(app.get("/v1/users").await.data().as_array().unwrap().len(), 0);
    assert_eq!(app.get("/v1/organizations").await.data().as_array().unwrap().len(), 0);
}

fn metric_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("gatehouse_http_requests_total{")).collect()
}

#[actix_web::test]
async fn client_chosen_methods_and_paths_add_no_metric_series() {
    let app = spawn_app().await;
    let mut marks = Vec::new();
    for i in 0..100 {
        let mark = format!("FUZZ{}X{i}", Uuid::new_v4().simple().to_string()[..8].to_uppercase());
        let method = Method::from_bytes(mark.as_bytes()).unwrap();
        let path = if i % 2 == 0 { "/v1/api-keys".to_string() } else { format!("/v1/{}", mark.to_lowercase()) };
        let reply = app.send(&app.caller, method, &path, None).await;
        assert!(reply.status == 404 || reply.status == 405, "{} {path}: {}", mark, reply.status);
        let unknown_path = app.get(&format!("/nowhere/{}", mark.to_lowercase())).await;
        assert_eq!(unknown_path.status, 404);
        marks.push(mark);
    }
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let known = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "other"];
    for line in metric_lines(&text) {
        let lower = line.to_lowercase();
        assert!(!marks.iter().any(|m| lower.contains(&m.to_lowercase())), "a client chose a label: {line}");
        let method = line.split("method=\"").nth(1).and_then(|r| r.split('"').next()).unwrap();
        assert!(known.contains(&method), "{line}");
    }
    assert!(text.contains("method=\"other\""), "unknown methods are counted as `other`");
}

/// A path of the OpenAPI document made concrete: the caller's application
/// for an application id, a random UUID for any other id.
fn concrete(path: &str, application_id: &str) -> String {
    path.split('/')
        .map(|segment| match segment {
            "{id}" | "{application_id}" => application_id.to_string(),
            s if s.starts_with('{') => Uuid::now_v7().to_string(),
            s => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[actix_web::test]
async fn every_route_answers_a_wrong_method_405_with_allow_and_head_like_get() {
    let app = spawn_app().await;
    let document = app.client.get(app.url("/v1/openapi.json")).send().await.unwrap().json::<Value>().await.unwrap();
    let paths = document["paths"].as_object().unwrap();
    assert!(paths.len() >= 35, "the walk covers the route table ({} paths)", paths.len());
    for (path, item) in paths {
        let documented: Vec<String> =
            item.as_object().unwrap().keys().filter(|k| k.chars().all(|c| c.is_ascii_lowercase())).cloned().collect();
        let mut expected: Vec<&str> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
            .into_iter()
            .filter(|m| {
                documented.contains(&m.to_lowercase()) || (*m == "HEAD" && documented.iter().any(|d| d == "get"))
            })
            .collect();
        expected.sort();
        let url = concrete(path, &app.caller.application_id);
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "OPTIONS"] {
            if expected.contains(&method) {
                continue;
            }
            let reply = app.send(&app.caller, Method::from_bytes(method.as_bytes()).unwrap(), &url, None).await;
            if method == "OPTIONS" && path.starts_with("/v1/auth/") {
                continue; // a CORS preflight route
            }
            assert_eq!(reply.status, 405, "{method} {path}: {:?}", reply.body);
            assert_eq!(reply.error_code(), "method_not_allowed", "{method} {path}");
            let mut allow: Vec<&str> = reply.header("allow").unwrap_or_default().split(", ").collect();
            allow.sort();
            assert_eq!(allow, expected, "Allow of {path}");
        }
        if expected.contains(&"GET") {
            let get = app.send(&app.caller, Method::GET, &url, None).await;
            let head = app.send(&app.caller, Method::HEAD, &url, None).await;
            assert_eq!(head.status, get.status, "HEAD {path}");
            assert_eq!(head.body, Value::String(String::new()), "HEAD {path} has no body");
        }
    }
}

#[actix_web::test]
async fn a_head_answer_carries_headers_and_no_body_on_the_wire() {
    let app = spawn_app().await;
    let address = app.address.trim_start_matches("http://").to_string();
    let answer = actix_web::rt::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.write_all(b"HEAD /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("\r\n\r\n"), "a body followed the headers: {answer:?}");
}

#[actix_web::test]
async fn authentication_comes_before_query_parsing() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    let foreign = Caller { application_id: app.caller.application_id.clone(), key: other.key.clone() };
    for _ in 0..20 {
        let reply = app.send(&foreign, Method::GET, "/v1/api-keys?nonsense=1", None).await;
        assert_eq!((reply.status, reply.error_code()), (401, "unauthenticated"));
        let reply = app.send(&foreign, Method::GET, "/v1/audit-logs?limit=abc", None).await;
        assert_eq!(reply.status, 401);
    }
    let own = app.get("/v1/api-keys?nonsense=1").await;
    assert_eq!(own.status, 422, "the owner still learns what is wrong");
}

#[actix_web::test]
async fn emails_that_look_the_same_are_one_user() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "u1@example.com").await;
    for look_alike in ["ｕ1@example.com", "U1@EXAMPLE.COM", " u1@ｅｘａｍｐｌｅ.com ", "u1@example.com"] {
        let reply =
            public_post(&app, &app.caller, "/v1/auth/sign-up", &json!({"email": look_alike, "password": PASSWORD}))
                .await;
        assert_eq!((reply.status, reply.error_code()), (409, "conflict"), "{look_alike}");
        let sign_in =
            public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": look_alike, "password": PASSWORD}))
                .await;
        assert_eq!(sign_in.status, 200, "{look_alike}: {:?}", sign_in.body);
    }
    let idn = sign_up(&app, &app.caller, "Anna@Bücher.Example").await;
    assert_eq!(idn["user"]["email"], "anna@xn--bcher-kva.example");
    let punycode = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "anna@xn--bcher-kva.example", "password": PASSWORD}),
    )
    .await;
    assert_eq!(punycode.status, 200);
    for bad in ["no-at-sign", "a@", "@example.com", "a@exa mple.com"] {
        let reply =
            public_post(&app, &app.caller, "/v1/auth/sign-up", &json!({"email": bad, "password": PASSWORD})).await;
        assert_eq!((reply.status, reply.body["error"]["details"][0]["field"].as_str()), (422, Some("email")), "{bad}");
    }
}

/// PostgreSQL only: backends terminated under load are 503 with
/// `Retry-After`, never 500, and nothing half-done is acknowledged.
#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_postgres),
    ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
)]
async fn lost_database_connections_are_503_never_500() {
    let Ok(admin_url) = std::env::var("GATEHOUSE_TEST_POSTGRES_URL") else {
        return; // SQLite has no connections to lose.
    };
    let app = spawn_app().await;
    let region_url = app.storage.settings.configured_region_url(region("us")).unwrap().to_string();
    let database = url::Url::parse(&region_url).unwrap().path().trim_start_matches('/').to_string();
    let admin = Database::connect(&admin_url).await.unwrap();
    let app = &app;
    let load = async move {
        let mut statuses = Vec::new();
        for round in 0..30 {
            let sends = (0..8).map(|i| async move {
                if i % 2 == 0 {
                    app.get("/v1/api-keys").await
                } else {
                    app.post("/v1/organizations", &json!({"name": format!("org {round}-{i}")})).await
                }
            });
            statuses.extend(
                join_all(sends).await.into_iter().map(|r: Reply| (r.status, r.header("retry-after").is_some())),
            );
        }
        statuses
    };
    let killer = async {
        for _ in 0..10 {
            actix_web::rt::time::sleep(Duration::from_millis(30)).await;
            admin
                .execute_unprepared(&format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}' AND pid <> pg_backend_pid()"
                ))
                .await
                .unwrap();
        }
    };
    let (statuses, ()) = futures_util::join!(load, killer);
    let unavailable = statuses.iter().filter(|(s, _)| *s == 503).count();
    eprintln!("{} requests under terminated backends: {unavailable} answered 503", statuses.len());
    for (status, retry_after) in &statuses {
        assert!(matches!(status, 200 | 201 | 503), "{statuses:?}");
        assert!(*status != 503 || *retry_after, "a 503 says when to retry");
    }
    // Every organization acknowledged is there.
    let acknowledged = statuses.iter().filter(|(s, _)| *s == 201).count();
    let listed = app.get("/v1/organizations?limit=100").await;
    let mut stored = listed.data().as_array().unwrap().len();
    let mut offset = 100;
    while stored == offset {
        stored +=
            app.get(&format!("/v1/organizations?limit=100&offset={offset}")).await.data().as_array().unwrap().len();
        offset += 100;
    }
    // A 503 may hide a commit that went through; an acknowledged one is never lost.
    assert!(stored >= acknowledged, "{stored} stored, {acknowledged} acknowledged");
}
