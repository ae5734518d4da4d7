//! Data rights: a user's export (GDPR Art. 15, 20) and erasure (Art. 17)
//! that keeps the audit chain verifiable: the personal data in audit rows
//! is sealed per person, and erasing them destroys the key.
use std::path::Path;

use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    end_users::public_post,
    helpers::{first_shard, spawn_with, TestApp},
    webhooks::start_receiver,
};

const PASSWORD: &str = "correct horse battery";

async fn app() -> TestApp {
    spawn_with(|s| {
        s.webhooks.poll_interval_ms = 20;
        // The second attempt three seconds after the first: the erasure comes between.
        s.webhooks.retry_schedule = "0s,3s,3s".into();
    })
    .await
}

/// Every row of the application's audit export, in chain order.
async fn audit_rows(app: &TestApp) -> Vec<Value> {
    let mut rows = Vec::new();
    loop {
        let page = app.get(&format!("/v1/audit-logs/export?limit=1000&offset={}", rows.len())).await;
        assert_eq!(page.status, 200, "{:?}", page.body);
        let got = page.data().as_array().unwrap().clone();
        let done = got.len() < 1000;
        rows.extend(got);
        if done {
            return rows;
        }
    }
}

#[actix_web::test]
async fn an_export_holds_the_users_data_without_secrets_and_their_audit_rows_opened() {
    let app = app().await;
    let email = format!("export-{}@example.com", Uuid::new_v4().simple());
    // A failed sign-in before the address is a user's: theirs too, once it is.
    let refused =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(refused.status, 401);
    let created = app.post("/v1/users", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.data()["id"].as_str().unwrap().to_string();
    let signed_in =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);

    let export = app.get(&format!("/v1/users/{id}/export")).await;
    assert_eq!(export.status, 200, "{:?}", export.body);
    let export = export.data();
    assert_eq!(export["format"], "gatehouse.user_export.v1");
    assert_eq!(export["user"]["email"], email.as_str());
    assert_eq!(export["sessions"].as_array().unwrap().len(), 1);
    let types: Vec<&str> = export["audit"].as_array().unwrap().iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"sign_in.failed"), "{types:?}");
    assert!(types.contains(&"user.created") && types.contains(&"sign_in.succeeded"), "{types:?}");
    for row in export["audit"].as_array().unwrap() {
        if row["type"] == "user.created" || row["type"] == "sign_in.failed" {
            assert_eq!(row["personal"]["email"], email.as_str(), "{row}");
            assert_eq!(row["erased"], false);
            assert!(!row["data"].to_string().contains(&email), "stored sealed: {row}");
        }
    }
    let text = export.to_string();
    for secret in ["password_hash", "$argon2", "secret_hash", "secret_sealed", "code_hash"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }

    // Another application's key finds no such user; a key without admin is 403.
    let other = app.other_account().await;
    let foreign = app.send(&other, Method::GET, &format!("/v1/users/{id}/export"), None).await;
    assert_eq!(foreign.status, 404, "{:?}", foreign.body);
    let reader = app.key_with_scopes(json!(["users:read", "users:write"])).await;
    let narrow = app.send(&reader, Method::GET, &format!("/v1/users/{id}/export"), None).await;
    assert_eq!((narrow.status, narrow.error_code()), (403, "insufficient_scope"), "{:?}", narrow.body);
}

#[actix_web::test]
async fn erasure_keeps_the_chain_verifiable_and_leaves_no_byte_of_the_email_in_any_database() {
    let app = app().await;
    let receiver = start_receiver(vec![500, 500, 500]).await;
    let hook = app
        .post("/v1/webhooks", &json!({"url": receiver.url, "event_types": ["user.created", "sign_in.failed"]}))
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let email = format!("erase-{}@example.com", Uuid::new_v4().simple());
    let refused =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(refused.status, 401);
    let created = app.post("/v1/users", &json!({"email": email, "password": PASSWORD, "profile": {}})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.data()["id"].as_str().unwrap().to_string();
    let signed_in =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    let wrong = json!({"email": email, "password": "not the password"});
    assert_eq!(public_post(&app, &app.caller, "/v1/auth/sign-in", &wrong).await.status, 401);

    // First attempts, while the keys exist: the email is in every body (the
    // receiver fails them all, so each is sent again after the erasure).
    let first = receiver.wait_for(3).await;
    assert!(first.iter().all(|delivery| delivery.body.contains(&email)), "{first:#?}");
    let erased = app.send(&app.caller, Method::DELETE, &format!("/v1/users/{id}"), None).await;
    assert_eq!(erased.status, 200, "{:?}", erased.body);
    assert_eq!(app.get(&format!("/v1/users/{id}")).await.status, 404);

    // The chain verifies, rows included that carried the email.
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let application = Uuid::parse_str(&app.caller.application_id).unwrap();
    let verified = gatehouse::audit::query::verify(&shard.conn, application).await.unwrap();
    assert!(matches!(verified, Ok(rows) if rows > 5), "{verified:?}");
    let rows = audit_rows(&app).await;
    let erased_rows: Vec<&Value> = rows.iter().filter(|row| row["erased"] == true).collect();
    let erased_types: Vec<&str> = erased_rows.iter().map(|row| row["type"].as_str().unwrap()).collect();
    assert_eq!(erased_types, ["sign_in.failed", "user.created", "sign_in.failed"], "{rows:#?}");
    assert!(erased_rows.iter().all(|row| row["personal"].is_null()));
    let deleted = rows.iter().find(|row| row["type"] == "user.deleted").unwrap();
    assert_eq!(deleted["data"]["keys_destroyed"], 2, "the user's key and their address's: {deleted}");
    assert!(!serde_json::to_string(&rows).unwrap().contains(&email));

    // What went out after the erasure went without the email.
    let after: Vec<Value> =
        receiver.wait_for(6).await[3..].iter().map(|delivery| serde_json::from_str(&delivery.body).unwrap()).collect();
    for body in &after {
        assert!(!body.to_string().contains(&email), "{body}");
        assert_eq!(body["data"]["attributes"]["erased"], true, "{body}");
    }

    // No byte of the address is left in any database, in plain text or in hex.
    let hex: String = email.bytes().map(|b| format!("{b:02x}")).collect();
    let leftovers = database_contents(&app).await;
    for (name, contents) in &leftovers {
        for needle in [email.as_bytes(), hex.as_bytes()] {
            assert!(find(contents, needle).is_none(), "{name} still holds the address");
        }
    }
    assert!(!leftovers.is_empty());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// Everything the test's databases hold: on SQLite every file of the data
/// directory (databases, write-ahead logs, shared memory); on PostgreSQL
/// a full data dump of each database.
async fn database_contents(app: &TestApp) -> Vec<(String, Vec<u8>)> {
    let settings = &app.storage.settings;
    let Some(catalog) = &settings.storage.catalog_url else {
        let mut files = Vec::new();
        collect_files(&settings.storage.data_dir, &mut files);
        return files;
    };
    let mut urls = vec![catalog.clone()];
    urls.extend(settings.regions.values().filter_map(|region| region.database_url.clone()));
    urls.into_iter()
        .map(|url| {
            let dump = std::process::Command::new("pg_dump")
                .args(["--data-only", "--no-owner", &url])
                .output()
                .expect("pg_dump runs (postgresql-client)");
            assert!(dump.status.success(), "pg_dump {url}: {}", String::from_utf8_lossy(&dump.stderr));
            (url, dump.stdout)
        })
        .collect()
}

fn collect_files(dir: &Path, files: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, files);
        } else {
            files.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
}
