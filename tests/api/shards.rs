//! Shards as data: `gatehouse shards add` adds a database to a region while
//! a node serves it (no restart), placement sends new applications to the
//! least loaded shard, and `gatehouse shards move` rebalances an
//! application between two shards of its region through the journaled move.
use std::time::Duration;

use gatehouse::storage::tenant_tables;
use sea_orm::Database;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{binary::Binary, wait, webhooks::start_receiver};

/// Each shard's line of `gatehouse shards list`, by name.
fn listed(binary: &Binary) -> std::collections::BTreeMap<String, Value> {
    let out = binary.command(&["shards", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|shard| (shard["shard"].as_str().unwrap().to_string(), shard))
        .collect()
}

async fn rows(binary: &Binary, file: &str, id: Uuid) -> Vec<(&'static str, u64)> {
    let url = format!("sqlite://{}/{file}.db?mode=ro", binary.dir.path().display());
    let db = Database::connect(url).await.unwrap();
    let counted = tenant_tables::count_all(&db, id).await.unwrap();
    db.close().await.unwrap();
    counted
}

/// `gatehouse shards add`; its JSON answer, or its refusal on standard error.
fn add(binary: &Binary, region: &str, name: &str, url: &str) -> Result<Value, String> {
    let args = ["shards", "add", "--region", region, "--name", name, "--database-url", url];
    let out = binary.command(&args).output().unwrap();
    match out.status.success() {
        true => Ok(serde_json::from_slice(&out.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

fn move_to(binary: &Binary, application: &str, shard: &str) -> (bool, String, String) {
    let out = binary.command(&["shards", "move", "--application", application, "--to", shard]).output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[actix_web::test]
async fn a_shard_added_while_a_node_serves_takes_new_applications_and_one_moves_there_and_back() {
    let binary = Binary::new(&[("RUST_LOG", "warn".into())]);
    let (app, key) = binary.bootstrap();
    let id: Uuid = app.parse().unwrap();
    let _server = binary.serve(None).await;
    let client = reqwest::Client::new();
    let base = binary.base.clone();
    let call = |method: reqwest::Method, path: &str, key: &str, app: &str| {
        client.request(method, format!("{base}{path}")).bearer_auth(key).header("x-application-id", app)
    };
    let signed_up = call(reqwest::Method::POST, "/v1/auth/sign-up", &key, &app)
        .json(&json!({"email": "ada@example.com", "password": "correct horse battery staple"}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_up.status(), 201);

    // Added while the node serves; what cannot be a shard is refused.
    let url = format!("sqlite://{}/us-2.db", binary.dir.path().display());
    let added = add(&binary, "us", "us-2", &url).unwrap();
    assert_eq!((added["region"].as_str(), added["shard"].as_str()), (Some("us"), Some("us-2")));
    for (region, name, url, why) in [
        ("us", "us-2", url.clone(), "exists"),
        ("us", "eu", format!("sqlite://{}/x.db", binary.dir.path().display()), "a region's name"),
        ("us", "us-3", url.clone(), "another shard uses that database"),
        ("mars", "us-3", format!("sqlite://{}/y.db", binary.dir.path().display()), "not a region"),
        ("us", "US 3", format!("sqlite://{}/z.db", binary.dir.path().display()), "the shard's name"),
    ] {
        let refused = add(&binary, region, name, &url).unwrap_err();
        assert!(refused.contains(why), "{name} in {region}: {refused}");
    }
    let shards = listed(&binary);
    assert_eq!(shards.keys().collect::<Vec<_>>(), ["ap", "eu", "us", "us-2"]);
    assert_eq!((shards["us"]["applications"].as_u64(), shards["us-2"]["applications"].as_u64()), (Some(1), Some(0)));

    // Once it takes applications, the least loaded shard takes each new one
    // (of equals, the region's first).
    let placed_from: chrono::DateTime<chrono::Utc> = added["placed_from"].as_str().unwrap().parse().unwrap();
    let until = (placed_from - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(until + Duration::from_millis(200)).await;
    let mut created = Vec::new();
    for name in ["On us-2", "On us", "On us-2 too"] {
        let reply = call(reqwest::Method::POST, "/v1/applications", &key, &app).json(&json!({"name": name}));
        let reply: Value = reply.send().await.unwrap().json().await.unwrap();
        created.push((
            reply["data"]["id"].as_str().unwrap().to_string(),
            reply["data"]["secret_key"].as_str().unwrap().to_string(),
        ));
    }
    let shards = listed(&binary);
    assert_eq!((shards["us"]["applications"].as_u64(), shards["us-2"]["applications"].as_u64()), (Some(2), Some(2)));

    // The node serves the new shard without a restart: its writes, its
    // sessions (the refresh rotator) and its webhook deliveries.
    let (on_new, new_key) = &created[0];
    assert!(!rows(&binary, "us-2", on_new.parse().unwrap()).await.is_empty(), "its rows are on us-2");
    let receiver = start_receiver(vec![]).await;
    let hook = call(reqwest::Method::POST, "/v1/webhooks", new_key, on_new)
        .json(&json!({"url": receiver.url, "event_types": ["user.created"]}));
    assert_eq!(hook.send().await.unwrap().status(), 201);
    let body = json!({"email": "grace@example.com", "password": "correct horse battery staple"});
    let signed_up: Value = call(reqwest::Method::POST, "/v1/auth/sign-up", new_key, on_new)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refresh = signed_up["data"]["refresh_token"].as_str().expect("a session").to_string();
    let refreshed = call(reqwest::Method::POST, "/v1/auth/token", new_key, on_new)
        .json(&json!({"refresh_token": refresh}))
        .send()
        .await
        .unwrap();
    assert_eq!(refreshed.status(), 200);
    wait::until("user.created delivered from us-2", || async { !receiver.received.lock().unwrap().is_empty() }).await;

    // Rebalancing: the first application moves to us-2 with every row, and
    // back; it serves throughout (503 only during its copies).
    let before = rows(&binary, "us", id).await;
    for (to, from) in [("us-2", "us"), ("us", "us-2")] {
        let (moved, row, stderr) = move_to(&binary, &app, to);
        assert!(moved, "to {to}: {row} {stderr}");
        let row: Value = serde_json::from_str(row.trim()).unwrap();
        assert_eq!(row["step"], "cleaned", "{row}");
        assert_eq!(rows(&binary, from, id).await, vec![], "nothing of it stays on {from}");
        let region = call(reqwest::Method::GET, "/v1/security/region", &key, &app).send().await.unwrap();
        assert_eq!(region.status(), 200);
        assert_eq!(region.json::<Value>().await.unwrap()["data"]["region"], "us");
    }
    let after = rows(&binary, "us", id).await;
    for (table, count) in &before {
        let expected = if *table == "audit_events" { count + 2 } else { *count };
        assert_eq!(after.iter().find(|(t, _)| t == table).map(|(_, n)| *n), Some(expected), "{table}: {after:?}");
    }
    let audited: Value = call(reqwest::Method::GET, "/v1/audit-logs?type=application.region_changed", &key, &app)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let moves: Vec<(&str, &str)> = audited["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["data"]["from_shard"].as_str().unwrap(), row["data"]["to_shard"].as_str().unwrap()))
        .collect();
    assert_eq!(moves, [("us", "us-2"), ("us-2", "us")]);
    let verified = binary.command(&["audit", "verify", "--application", &app]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));

    // A move names a shard of the application's own region.
    for (to, why) in [("us-9", "has no shard"), ("eu", "has no shard"), ("us", "already")] {
        let (moved, _, stderr) = move_to(&binary, &app, to);
        assert!(!moved && stderr.contains(why), "{to}: {stderr}");
    }
}
