//! Two nodes on one deployment with Redis: a change on one reaches the
//! other's caches through the invalidation bus in milliseconds, and a cold
//! node serves a JWKS from Redis. Skipped without `GATEHOUSE_TEST_REDIS_URL`
//! (the TTL fallback is what a node without Redis has).
use std::time::{Duration, Instant};

use actix_web::web;
use gatehouse::{startup::Application, state::AppState};
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{first_shard, spawn_app, TestApp};

fn with_redis() -> bool {
    let set = std::env::var("GATEHOUSE_TEST_REDIS_URL").is_ok();
    if !set {
        eprintln!("skipped: GATEHOUSE_TEST_REDIS_URL is not set");
    }
    set
}

async fn second_node(a: &TestApp) -> (String, web::Data<AppState>) {
    let node = Application::build(a.storage.settings.clone()).await.expect("second node");
    let (address, state) = (format!("http://127.0.0.1:{}", node.port()), node.state.clone());
    actix_web::rt::spawn(node.run_until_stopped());
    // The bus subscribes in the background; wait until it listens.
    crate::wait::until("the second node's bus to connect", || async { state.bus.connected() == Some(true) }).await;
    (address, state)
}

/// B records a key's first use in the background; with two nodes on one
/// SQLite file (a test-only setup) that write must be done before A writes.
async fn wait_for_first_use(a: &TestApp, key_id: &str) {
    let path = format!("/v1/api-keys/{key_id}");
    crate::wait::until("the key's first use to be recorded", || async {
        a.get(&path).await.data()["last_used_at"].is_string()
    })
    .await;
}

/// How long until `check` holds, polling every 5 ms; panics after 5 s.
async fn time_until<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) -> Duration {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(5), "the other node did not see the change");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

async fn jwks_kids(client: &reqwest::Client, base: &str, application: &str) -> Vec<String> {
    let url = format!("{base}/v1/applications/{application}/.well-known/jwks.json");
    let document: Value = client.get(url).send().await.unwrap().json().await.unwrap();
    document["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_string()).collect()
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn a_signing_key_rotation_reaches_the_other_nodes_jwks_in_milliseconds() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let (b, _) = second_node(&a).await;
    let id = a.caller.application_id.clone();
    let rounds: usize = std::env::var("GATEHOUSE_PROPAGATION_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(10);
    let mut seen = Vec::new();
    for _ in 0..rounds {
        jwks_kids(&a.client, &b, &id).await; // B holds the current document
        let rotated = a.post(&format!("/v1/applications/{id}/signing-keys/rotate"), &json!({"immediate": true})).await;
        assert_eq!(rotated.status, 200, "{:?}", rotated.body);
        let kid = rotated.data()["kid"].as_str().unwrap().to_string();
        seen.push(time_until(|| async { jwks_kids(&a.client, &b, &id).await.contains(&kid) }).await);
    }
    let (p50, p99) = (percentile(seen.clone(), 0.5), percentile(seen, 0.99));
    eprintln!("rotation seen by the other node: p50 {p50:?}, p99 {p99:?} over {rounds} rounds");
    assert!(p50 < Duration::from_millis(200), "p50 {p50:?}");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn a_revocation_and_a_settings_change_reach_the_other_node_in_milliseconds() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let (b, _) = second_node(&a).await;
    // A key B has cached is refused by B right after A revokes it.
    let victim = a.key_with_scopes(json!(["api_keys:read"])).await;
    assert_eq!(a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status, 200);
    let listed = a.get("/v1/api-keys").await;
    let id = listed.data()[0]["id"].as_str().unwrap().to_string();
    wait_for_first_use(&a, &id).await;
    assert_eq!(a.post(&format!("/v1/api-keys/{id}/revoke"), &json!({})).await.status, 200);
    let revoked =
        time_until(|| async { a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status == 401 });
    let revoked = revoked.await;
    // A new allowed origin is accepted by B's CORS preflight.
    let preflight = |origin: &'static str| {
        a.client
            .request(Method::OPTIONS, format!("{b}/v1/auth/sign-in"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
    };
    let origin = "https://new.example.com";
    assert_eq!(preflight(origin).await.unwrap().status(), 403, "not allowed yet (and B has read the union)");
    let app = a.caller.application_id.clone();
    assert_eq!(a.patch(&format!("/v1/applications/{app}"), &json!({"allowed_origins": [origin]})).await.status, 200);
    let allowed = time_until(|| async { preflight(origin).await.unwrap().status().is_success() }).await;
    eprintln!("revocation seen after {revoked:?}, settings change after {allowed:?}");
    // Well under the fallback TTLs (1 s for keys, 5 s for settings): the bus
    // carried them. (Alone they take 1 to 15 ms; the limit allows a loaded CI.)
    assert!(revoked < Duration::from_millis(500) && allowed < Duration::from_millis(500));
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn a_cold_node_routes_and_serves_the_jwks_from_redis_without_its_databases() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let id = a.caller.application_id.clone();
    let rotated = a.post(&format!("/v1/applications/{id}/signing-keys/rotate"), &json!({"immediate": true})).await;
    let kid = rotated.data()["kid"].as_str().unwrap().to_string();
    assert!(jwks_kids(&a.client, &a.address, &id).await.contains(&kid), "A loaded it into Redis");
    let (b, b_state) = second_node(&a).await;
    // B reaches neither the catalog (the directory) nor its regional
    // database (the keys): only Redis can answer.
    b_state.storage.shard(first_shard("us")).unwrap().conn.clone().close().await.unwrap();
    b_state.storage.catalog.conn.clone().close().await.unwrap();
    assert!(jwks_kids(&a.client, &b, &id).await.contains(&kid));
}

/// A `redis-server` of this test's own on a free loopback port, which the
/// test stops and starts again (the shared one must stay up for the others).
struct PrivateRedis {
    port: u16,
    child: Option<std::process::Child>,
}

impl PrivateRedis {
    fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut redis = PrivateRedis { port, child: None };
        redis.resume().then_some(redis)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn resume(&mut self) -> bool {
        let spawned = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            eprintln!("skipped: redis-server is not installed");
            return false;
        };
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(5), "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn readiness(client: &reqwest::Client, base: &str) -> String {
    let body: Value = client.get(format!("{base}/readyz")).send().await.unwrap().json().await.unwrap();
    body["status"].as_str().unwrap_or_default().to_string()
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn with_redis_stopped_answers_stay_correct_and_after_its_return_changes_arrive_in_milliseconds_again() {
    let Some(mut redis) = PrivateRedis::start() else { return };
    let url = redis.url();
    let a = crate::helpers::spawn_with(|s| s.cache.redis_url = Some(url)).await;
    let (b, b_state) = second_node(&a).await;
    let revoke_seen_by_b = |victim: crate::helpers::Caller| {
        let (a, b) = (&a, b.clone());
        async move {
            assert_eq!(a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status, 200);
            let keys = a.get("/v1/api-keys?limit=1").await;
            let id = keys.data()[0]["id"].as_str().unwrap().to_string();
            wait_for_first_use(a, &id).await;
            assert_eq!(a.post(&format!("/v1/api-keys/{id}/revoke"), &json!({})).await.status, 200);
            let seen =
                time_until(|| async { a.send_at(&b, &victim, Method::GET, "/v1/api-keys", None).await.status == 401 })
                    .await;
            // B records the refused use in the background (one SQLite file: let it finish first).
            let refusals = format!("/v1/audit-logs?type=api_key.use_refused&aggregate_id={id}");
            time_until(|| async { !a.get(&refusals).await.data().as_array().unwrap().is_empty() }).await;
            seen
        }
    };
    // Under the 1 s fallback TTL by a margin: the bus carried it (alone it takes milliseconds).
    let before = revoke_seen_by_b(a.key_with_scopes(json!(["api_keys:read"])).await).await;
    assert!(before < Duration::from_millis(500), "{before:?}");

    // Redis stops: both nodes say degraded, and a revocation still holds
    // everywhere within the fallback TTL (1 s for secret keys).
    redis.stop();
    time_until(|| async { readiness(&a.client, &a.address).await == "degraded" }).await;
    time_until(|| async { b_state.bus.connected() == Some(false) }).await;
    let victim = a.key_with_scopes(json!(["api_keys:read"])).await;
    let during = revoke_seen_by_b(victim).await;
    assert!(during < Duration::from_millis(2500), "{during:?}");

    // Redis is back: the nodes resubscribe by themselves and the bus is fast again.
    assert!(redis.resume());
    time_until(|| async { readiness(&a.client, &a.address).await == "ready" }).await;
    time_until(|| async { b_state.bus.connected() == Some(true) }).await;
    let after = revoke_seen_by_b(a.key_with_scopes(json!(["api_keys:read"])).await).await;
    eprintln!(
        "revocation seen by the other node: {before:?} with Redis, {during:?} without, {after:?} after it came back"
    );
    assert!(after < Duration::from_millis(500), "{after:?}");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn a_disabled_or_deleted_service_account_is_refused_by_the_other_node_within_200_ms() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let (b, _) = second_node(&a).await;
    let verify_at = |node: String, secret: String| {
        let a = &a;
        async move {
            let body = json!({"secret": secret});
            let reply = a.send_at(&node, &a.caller, Method::POST, "/v1/api-keys/verify", Some(&body)).await;
            assert_eq!(reply.status, 200, "{:?}", reply.body);
            reply.data()["valid"] == true
        }
    };
    let mut seen = Vec::new();
    for change in ["disable", "delete"] {
        let account = a.post("/v1/service-accounts", &json!({"name": change, "scopes": ["read"]})).await;
        let id = account.data()["id"].as_str().unwrap().to_string();
        let key = a.post(&format!("/v1/service-accounts/{id}/keys"), &json!({"name": "k"})).await;
        let secret = key.data()["secret"].as_str().unwrap().to_string();
        assert!(verify_at(b.clone(), secret.clone()).await, "B resolves the key");
        if change == "disable" {
            let caller_key = a.get("/v1/api-keys?limit=1").await.data()[0]["id"].as_str().unwrap().to_string();
            wait_for_first_use(&a, &caller_key).await;
        }
        let path = format!("/v1/service-accounts/{id}");
        let changed = if change == "disable" {
            a.patch(&path, &json!({"enabled": false})).await
        } else {
            a.send(&a.caller, Method::DELETE, &path, None).await
        };
        assert_eq!(changed.status, 200, "{change}: {:?}", changed.body);
        assert!(!verify_at(a.address.clone(), secret.clone()).await, "refused at once on the node that changed it");
        seen.push(
            time_until(|| {
                let verified = verify_at(b.clone(), secret.clone());
                async move { !verified.await }
            })
            .await,
        );
    }
    eprintln!("service account disable and delete seen by the other node after {seen:?}");
    assert!(seen.iter().all(|t| *t < Duration::from_millis(200)), "{seen:?}");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn a_policy_created_on_one_node_is_enforced_by_the_other_within_200_ms() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let (b, _) = second_node(&a).await;
    let org = |name: &'static str| {
        let a = &a;
        async move { a.post("/v1/organizations", &json!({"name": name})).await.data()["id"].as_str().unwrap().to_string() }
    };
    let (finance, ops) = (org("Finance").await, org("Ops").await);
    let mut seen = Vec::new();
    for round in 0..3 {
        let user = a.post("/v1/users", &json!({"email": format!("ada{round}@example.com")})).await;
        let user_id = user.data()["id"].as_str().unwrap().to_string();
        let body = json!({"user_id": user_id, "role": format!("payer{round}")});
        let granted = a.post(&format!("/v1/organizations/{finance}/memberships"), &body).await;
        assert_eq!(granted.status, 201);
        // B loads the application's state (no policy yet) before the policy exists.
        let check = json!({"user_id": user_id, "role": format!("approver{round}")});
        let before = a.send_at(&b, &a.caller, Method::POST, "/v1/sod-policies/check", Some(&check)).await;
        assert_eq!(before.data()["allowed"], true, "{:?}", before.body);
        let policy = json!({"name": "p", "role_a": format!("payer{round}"), "role_b": format!("approver{round}")});
        assert_eq!(a.post("/v1/sod-policies", &policy).await.status, 201);
        seen.push(
            time_until(|| {
                let check = check.clone();
                let (a, b) = (&a, b.clone());
                async move {
                    let now = a.send_at(&b, &a.caller, Method::POST, "/v1/sod-policies/check", Some(&check)).await;
                    now.data()["allowed"] == false
                }
            })
            .await,
        );
        let grant = json!({"user_id": user_id, "role": format!("approver{round}")});
        let refused =
            a.send_at(&b, &a.caller, Method::POST, &format!("/v1/organizations/{ops}/memberships"), Some(&grant)).await;
        assert_eq!(refused.error_code(), "sod_violation", "{:?}", refused.body);
    }
    eprintln!("a new policy enforced by the other node after {seen:?}");
    assert!(seen.iter().all(|t| *t < Duration::from_millis(200)), "{seen:?}");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn an_entitlement_change_on_one_node_is_resolved_by_the_other_within_200_ms() {
    if !with_redis() {
        return;
    }
    let a = spawn_app().await;
    let (b, _) = second_node(&a).await;
    let put = |path: String, body: Value| {
        let a = &a;
        async move { a.send(&a.caller, Method::PUT, &path, Some(&body)).await.status }
    };
    assert_eq!(put("/v1/features/seats".into(), json!({"kind": "limit", "default_value": 1})).await, 200);
    let org = a.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let seats_at_b = || {
        let (a, b, org) = (&a, b.clone(), org.clone());
        async move {
            let path = format!("/v1/organizations/{org}/entitlements");
            a.send_at(&b, &a.caller, Method::GET, &path, None).await.data()[0]["value"].clone()
        }
    };
    assert_eq!(seats_at_b().await, 1, "B resolves (and caches) the default");
    let mut seen = Vec::new();
    for (round, change) in ["override", "plan", "feature"].into_iter().enumerate() {
        let expected = json!(10 + round);
        let status = match change {
            "override" => {
                put(format!("/v1/organizations/{org}/entitlement-overrides/seats"), json!({"value": expected})).await
            }
            "plan" => {
                a.send(
                    &a.caller,
                    Method::DELETE,
                    &format!("/v1/organizations/{org}/entitlement-overrides/seats"),
                    None,
                )
                .await;
                assert_eq!(
                    put("/v1/plans/pro".into(), json!({"name": "Pro", "grants": {"seats": expected}})).await,
                    200
                );
                put(format!("/v1/organizations/{org}/plan"), json!({"plan_key": "pro"})).await
            }
            _ => {
                put(format!("/v1/organizations/{org}/plan"), json!({"plan_key": null})).await;
                put("/v1/features/seats".into(), json!({"kind": "limit", "default_value": expected})).await
            }
        };
        assert_eq!(status, 200, "{change}");
        seen.push(
            time_until(|| {
                let (seats, expected) = (seats_at_b(), expected.clone());
                async move { seats.await == expected }
            })
            .await,
        );
    }
    eprintln!("entitlement changes (override, plan, feature default) resolved by the other node after {seen:?}");
    assert!(seen.iter().all(|t| *t < Duration::from_millis(200)), "{seen:?}");
}
