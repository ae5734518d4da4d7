//! Deliveries survive a crash of the process, and several nodes on one
//! database never send the same message twice.
use std::{collections::HashMap, process::Command, time::Duration};

use gatehouse::startup::Application;
use serde_json::{json, Value};

use crate::{
    helpers::spawn_with,
    webhooks::{start_receiver, Received},
};

fn event_ids(received: &[Received]) -> HashMap<String, Vec<String>> {
    let mut by_event: HashMap<String, Vec<String>> = HashMap::new();
    for delivery in received {
        let body: Value = serde_json::from_str(&delivery.body).unwrap();
        by_event.entry(body["data"]["event_id"].as_str().unwrap().to_string()).or_default().push(delivery.id.clone());
    }
    by_event
}

struct Server {
    child: std::process::Child,
    base: String,
}

fn start(dir: &std::path::Path, port: u16) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("serve")
        .envs(server_env(dir, port))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Server { child, base: format!("http://127.0.0.1:{port}") }
}

fn server_env(dir: &std::path::Path, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("GATEHOUSE__STORAGE__DATA_DIR", dir.display().to_string()),
        ("GATEHOUSE__SERVER__LISTEN", format!("127.0.0.1:{port}")),
        ("GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS", "20".into()),
        ("GATEHOUSE__WEBHOOKS__TIMEOUT_SECONDS", "1".into()),
        ("GATEHOUSE__WEBHOOKS__LEASE_SECONDS", "2".into()),
        ("GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND", "0".into()),
        ("RUST_LOG", "error".into()),
    ]
}

async fn wait_until_up(client: &reqwest::Client, base: &str) {
    for _ in 0..400 {
        if client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server did not come up");
}

#[actix_web::test]
async fn every_acknowledged_event_is_delivered_across_a_sigkill() {
    // Arrange: the real binary, a receiver, an endpoint for application events.
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let boot = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["bootstrap", "--name", "Crash"])
        .envs(server_env(dir.path(), port))
        .output()
        .unwrap();
    let creds: Value = serde_json::from_slice(&boot.stdout).unwrap();
    let (app, key) =
        (creds["application_id"].as_str().unwrap().to_string(), creds["secret_key"].as_str().unwrap().to_string());
    let receiver = start_receiver(vec![]).await;
    let client = reqwest::Client::new();
    let mut server = start(dir.path(), port);
    wait_until_up(&client, &server.base).await;
    let call = |method: reqwest::Method, path: String, body: Value| {
        client
            .request(method, format!("http://127.0.0.1:{port}{path}"))
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
            server.child.kill().unwrap();
            server.child.wait().unwrap();
            server = start(dir.path(), port);
            wait_until_up(&client, &server.base).await;
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
    server.child.kill().unwrap();
    let missing = events.iter().filter(|e| !delivered.contains_key(*e)).count();
    assert_eq!(missing, 0, "{missing} of {} events never arrived", events.len());
    for (event, webhook_ids) in &delivered {
        assert!(webhook_ids.iter().all(|id| id == &webhook_ids[0]), "event {event} arrived under several webhook-ids");
    }
}

#[actix_web::test]
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
    let received = receiver.wait_for(1000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let received =
        if received.len() < 1000 { receiver.wait_for(1000).await } else { receiver.received.lock().unwrap().clone() };
    let mut ids: Vec<&String> = received.iter().map(|r| &r.id).collect();
    let total = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(total, 1000, "every message arrived");
    assert_eq!(ids.len(), total, "no message was sent twice");
}
