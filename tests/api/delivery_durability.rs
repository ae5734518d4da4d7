//! Deliveries survive a crash of the process, and several nodes on one
//! database never send the same message twice.
use std::{collections::HashMap, time::Duration};

use gatehouse::startup::Application;
use sea_orm::{EntityTrait, QuerySelect};
use serde_json::{json, Value};

use crate::{
    binary::Binary,
    helpers::spawn_with,
    hooks::start_hook_receiver,
    webhooks::{start_receiver, start_slow_receiver, Received},
};

fn event_ids(received: &[Received]) -> HashMap<String, Vec<String>> {
    let mut by_event: HashMap<String, Vec<String>> = HashMap::new();
    for delivery in received {
        let body: Value = serde_json::from_str(&delivery.body).unwrap();
        by_event.entry(body["data"]["event_id"].as_str().unwrap().to_string()).or_default().push(delivery.id.clone());
    }
    by_event
}

/// The real binary with fast webhook polling, short timeouts and leases.
fn binary() -> Binary {
    Binary::new(&[
        ("GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS", "20".into()),
        ("GATEHOUSE__WEBHOOKS__TIMEOUT_SECONDS", "1".into()),
        ("GATEHOUSE__WEBHOOKS__LEASE_SECONDS", "2".into()),
        ("GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND", "0".into()),
        ("RUST_LOG", "error".into()),
    ])
}

#[actix_web::test]
async fn every_acknowledged_event_is_delivered_across_a_sigkill() {
    // Arrange: the real binary, a receiver, an endpoint for application events.
    let binary = binary();
    let (app, key) = binary.bootstrap();
    let receiver = start_receiver(vec![]).await;
    let client = reqwest::Client::new();
    let mut server = binary.serve(None).await;
    let base = binary.base.clone();
    let call = |method: reqwest::Method, path: String, body: Value| {
        client
            .request(method, format!("{base}{path}"))
            .bearer_auth(&key)
            .header("x-application-id", &app)
            .json(&body)
            .send()
    };
    let created = call(
        reqwest::Method::POST,
        "/v1/webhooks".into(),
        json!({"url": receiver.url, "event_types": ["application"]}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 201);

    // Act: 1,000 changes; the process is killed halfway, mid-stream, and restarted.
    let mut acknowledged = 0;
    for i in 0..1000 {
        if i == 500 {
            server.kill().unwrap();
            server.wait().unwrap();
            server = binary.serve(None).await;
        }
        loop {
            let answer =
                call(reqwest::Method::PATCH, format!("/v1/applications/{app}"), json!({"name": format!("n{i}")})).await;
            if answer.is_ok_and(|a| a.status() == 200) {
                acknowledged += 1;
                break;
            }
        }
    }

    // Assert: every recorded change arrived at least once; copies share their webhook-id.
    let mut events: Vec<String> = Vec::new();
    for offset in [0, 1000] {
        let page: Value = call(
            reqwest::Method::GET,
            format!("/v1/audit-logs/export?type=application.updated&limit=1000&offset={offset}"),
            json!(null),
        )
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        events.extend(page["data"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()));
    }
    assert!(events.len() >= acknowledged && acknowledged == 1000);
    let mut delivered = HashMap::new();
    for _ in 0..600 {
        delivered = event_ids(&receiver.received.lock().unwrap());
        if events.iter().all(|e| delivered.contains_key(e)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill().unwrap();
    let missing = events.iter().filter(|e| !delivered.contains_key(*e)).count();
    assert_eq!(missing, 0, "{missing} of {} events never arrived", events.len());
    for (event, webhook_ids) in &delivered {
        assert!(webhook_ids.iter().all(|id| id == &webhook_ids[0]), "event {event} arrived under several webhook-ids");
    }
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_postgres),
    ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
)]
async fn two_nodes_on_one_postgresql_send_each_message_once() {
    if std::env::var("GATEHOUSE_TEST_POSTGRES_URL").is_err() {
        eprintln!("GATEHOUSE_TEST_POSTGRES_URL is not set: the two-node delivery test needs PostgreSQL (CI sets it)");
        return;
    }
    let a = spawn_with(|s| {
        s.webhooks.poll_interval_ms = 10;
        s.rate_limits.management_per_application_per_second = 0;
    })
    .await;
    let b_node = Application::build(a.storage.settings.clone()).await.expect("second node");
    let b = format!("http://127.0.0.1:{}", b_node.port());
    actix_web::rt::spawn(b_node.run_until_stopped());
    let receiver = start_receiver(vec![]).await;
    let created = a.post("/v1/webhooks", &json!({"url": receiver.url, "event_types": ["application"]})).await;
    assert_eq!(created.status, 201);

    let path = format!("/v1/applications/{}", a.caller.application_id);
    let bodies: Vec<Value> = (0..1000).map(|i| json!({"name": format!("n{i}")})).collect();
    let a = &a;
    for chunk in bodies.chunks(20) {
        let writes = chunk.iter().enumerate().map(|(i, body)| {
            let node = if i % 2 == 0 { a.address.clone() } else { b.clone() };
            let path = path.clone();
            async move { a.send_at(&node, &a.caller, reqwest::Method::PATCH, &path, Some(body)).await }
        });
        assert!(futures_util::future::join_all(writes).await.iter().all(|r| r.status == 200));
    }
    receiver.wait_for(1000).await;
    // An absence: a second send of a message would arrive after the first, unannounced.
    crate::wait::stays("no message arrives twice", Duration::from_millis(500), || async {
        receiver.received.lock().unwrap().len() <= 1000
    })
    .await;
    let received = receiver.received.lock().unwrap().clone();
    let mut ids: Vec<&String> = received.iter().map(|r| &r.id).collect();
    let total = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(total, 1000, "every message arrived");
    assert_eq!(ids.len(), total, "no message was sent twice");
}

/// SIGTERM under load: the requests in flight are answered, a new one is
/// refused at connect once the listener closes, the deliveries in flight are recorded,
/// and the process exits 0.
#[actix_web::test]
async fn sigterm_drains_requests_and_records_the_deliveries_in_flight() {
    // Arrange: the real binary; sign-ups held 3 s by a slow hook; webhook
    // deliveries held 4 s by a slow receiver, so they are still in flight
    // when the last request has been answered.
    let mut binary = binary();
    let (app, key) = binary.bootstrap();
    let receiver = start_slow_receiver(vec![], Duration::from_secs(4)).await;
    let (hook_url, hook) = start_hook_receiver().await;
    *hook.mode.lock().unwrap() = "slow".into();
    let client = reqwest::Client::new();
    binary.add_env("GATEHOUSE__WEBHOOKS__TIMEOUT_SECONDS", "10".into());
    let mut server = binary.serve(None).await;
    let base = binary.base.clone();
    let call = |method: reqwest::Method, path: &str, body: Value| {
        client
            .request(method, format!("{base}{path}"))
            .bearer_auth(&key)
            .header("x-application-id", &app)
            .json(&body)
            .send()
    };
    let webhook = call(reqwest::Method::POST, "/v1/webhooks", json!({"url": receiver.url})).await.unwrap();
    assert_eq!(webhook.status(), 201);
    let created: Value =
        call(reqwest::Method::POST, "/v1/hooks", json!({"point": "pre_sign_up", "url": hook_url, "timeout_ms": 5000}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    *hook.secret.lock().unwrap() = created["data"]["secret"].as_str().unwrap().to_string();
    receiver.wait_for(2).await; // the two creations' deliveries are under way

    // Act: eight sign-ups in flight, then SIGTERM.
    let sign_ups: Vec<_> = (0..8)
        .map(|i| {
            let request = client
                .post(format!("{base}/v1/auth/sign-up"))
                .header("x-application-id", &app)
                .json(&json!({"email": format!("drain{i}@example.com"), "password": "correct horse battery"}))
                .send();
            actix_web::rt::spawn(request)
        })
        .collect();
    crate::wait::until("the eight sign-ups to be held at the hook", || async { hook.calls() >= 8 }).await;
    let pid = server.id() as i32;
    // SAFETY: a plain signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    // The listener closes first: a new request is refused at connect, never cut off half-way.
    let address = base.trim_start_matches("http://").to_string();
    let closed = || async { tokio::net::TcpStream::connect(&address).await.is_err() };
    crate::wait::until("the listener to close after SIGTERM", closed).await;
    let late = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let refused = late.get(format!("{base}/healthz")).send().await.expect_err("the listener is closed");
    assert!(refused.is_connect(), "a request after SIGTERM is refused at connect: {refused:?}");

    // Assert: every sign-up in flight was answered, and the process ended well.
    for sign_up in sign_ups {
        let answer = sign_up.await.unwrap().expect("an in-flight request is answered");
        assert_eq!(answer.status(), 201);
        // Answered while draining (actix's graceful stop): the kept-alive connection is not reused.
        assert_eq!(answer.headers().get("connection").and_then(|v| v.to_str().ok()), Some("close"));
    }
    let mut exit = None;
    for _ in 0..200 {
        if let Some(status) = server.try_wait().unwrap() {
            exit = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let exit = exit.unwrap_or_else(|| {
        server.kill().unwrap();
        panic!("the process did not stop within 10 s of SIGTERM")
    });
    assert!(exit.success(), "{exit:?}");
    // Every delivery the receiver saw has its attempt recorded.
    let received: Vec<String> = receiver.received.lock().unwrap().iter().map(|r| r.id.clone()).collect();
    assert!(!received.is_empty());
    let db = sea_orm::Database::connect(format!("sqlite://{}/us.db", binary.dir.path().display())).await.unwrap();
    let attempted: Vec<uuid::Uuid> = entity::webhook_attempt::Entity::find()
        .select_only()
        .column(entity::webhook_attempt::Column::MessageId)
        .into_tuple()
        .all(&db)
        .await
        .unwrap();
    for id in &received {
        assert!(attempted.iter().any(|a| a.to_string() == *id), "the delivery of {id} was sent but not recorded");
    }
}
