//! Bulk import of users with the password hashes of other systems, made
//! here by independent libraries (Python's passlib, bcrypt and
//! argon2-cffi) and Firebase's reference parameters: each user signs in
//! with their old password, which is then rehashed to argon2id.
use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::public_post,
    helpers::{first_shard, spawn_app, Reply, TestApp},
    wait,
};

/// Hashes of `pw-<scheme>` in each scheme, from Python's libraries.
fn foreign_hashes() -> Value {
    let script = r#"
import json, bcrypt
from passlib.hash import pbkdf2_sha256, scrypt, argon2
print(json.dumps({
  "pbkdf2": pbkdf2_sha256.hash("pw-pbkdf2"),
  "scrypt": scrypt.using(rounds=14).hash("pw-scrypt"),
  "bcrypt_2a": bcrypt.hashpw(b"pw-bcrypt-2a", bcrypt.gensalt(rounds=4, prefix=b"2a")).decode(),
  "bcrypt_2b": bcrypt.hashpw(b"pw-bcrypt-2b", bcrypt.gensalt(rounds=4, prefix=b"2b")).decode(),
  "bcrypt_2y": bcrypt.hashpw(b"pw-bcrypt-2y", bcrypt.gensalt(rounds=4)).decode().replace("$2b$", "$2y$", 1),
  "argon2i": argon2.using(type="I", memory_cost=1024, rounds=2).hash("pw-argon2i"),
  "argon2id": argon2.using(type="ID", memory_cost=1024, rounds=2).hash("pw-argon2id"),
}))
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("python3 runs (pip install passlib bcrypt argon2-cffi)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Firebase's scrypt, with the reference example of github.com/firebase/scrypt.
fn firebase_hash() -> Value {
    json!({
        "algorithm": "firebase_scrypt",
        "hash": "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
        "salt": "42xEC+ixf3L2lw==",
        "salt_separator": "Bw==",
        "signer_key": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
        "rounds": 8,
        "mem_cost": 14,
    })
}

async fn post_import(app: &TestApp, body: String) -> Reply {
    let request = app
        .client
        .post(app.url("/v1/users/imports"))
        .bearer_auth(&app.caller.key)
        .header("x-application-id", &app.caller.application_id)
        .header("content-type", "application/x-ndjson")
        .body(body);
    app.raw(request).await
}

async fn completed(app: &TestApp, id: &str) -> Value {
    wait::until_some("the import to complete", || async {
        let job = app.get(&format!("/v1/users/imports/{id}")).await;
        (job.data()["status"] == "completed").then(|| job.data().clone())
    })
    .await
}

fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_hashes),
    ignore = "needs passlib, bcrypt and argon2-cffi: pip3 install passlib==1.7.4 bcrypt==5.0.0 argon2-cffi==23.1.0, then GATEHOUSE_TEST_REQUIRE_HASHES=1 cargo test"
)]
async fn users_with_foreign_hashes_sign_in_with_their_old_passwords_which_are_then_rehashed() {
    let app = spawn_app().await;
    let hashes = foreign_hashes();
    let mut lines: Vec<Value> = hashes
        .as_object()
        .unwrap()
        .iter()
        .map(|(scheme, hash)| json!({"external_id": format!("old-{scheme}"), "email": format!("{scheme}@example.com"), "password_hash": hash}))
        .collect();
    lines
        .push(json!({"external_id": "old-firebase", "email": "firebase@example.com", "password_hash": firebase_hash(),
        "email_verified": true, "organizations": [{"slug": "acme", "name": "Acme", "role": "admin"}]}));
    lines.push(json!({"external_id": "old-nopassword", "email": "nopassword@example.com", "profile": {},
        "organizations": [{"slug": "acme", "role": "member"}]}));
    let queued = post_import(&app, ndjson(&lines)).await;
    assert_eq!(queued.status, 202, "{:?}", queued.body);
    assert_eq!(queued.data()["status"], "queued");
    let job = completed(&app, queued.data()["id"].as_str().unwrap()).await;
    assert_eq!((job["created"].as_i64(), job["failed"].as_i64()), (Some(lines.len() as i64), Some(0)), "{job}");

    for scheme in hashes.as_object().unwrap().keys().map(String::as_str).chain(["firebase"]) {
        let email = format!("{scheme}@example.com");
        let password =
            if scheme == "firebase" { "user1password".to_string() } else { format!("pw-{}", scheme.replace('_', "-")) };
        let wrong =
            public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": "wrong password"}))
                .await;
        assert_eq!(wrong.status, 401, "{scheme}");
        for _ in 0..2 {
            let signed_in =
                public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": password}))
                    .await;
            assert_eq!(signed_in.status, 200, "{scheme}: {:?}", signed_in.body);
        }
    }
    // Each first sign-in rehashed its user's hash; the second found argon2id.
    let rows = app.get("/v1/audit-logs?type=sign_in.succeeded&limit=100").await;
    let rehashed: Vec<bool> =
        rows.data().as_array().unwrap().iter().map(|r| r["data"]["password_rehashed"] == true).collect();
    assert_eq!(rehashed.iter().filter(|r| **r).count(), 8, "{rehashed:?}");
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let stored: Vec<Option<String>> = {
        use sea_orm::{EntityTrait, QuerySelect};
        #[allow(clippy::disallowed_methods)] // the test reads the table whole
        entity::user::Entity::find()
            .select_only()
            .column(entity::user::Column::PasswordHash)
            .into_tuple()
            .all(&shard.conn)
            .await
            .unwrap()
    };
    assert!(stored.iter().flatten().all(|hash| hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$")), "{stored:?}");

    // The organization was made once, with both memberships.
    let organizations = app.get("/v1/organizations").await;
    let acme: Vec<&Value> = organizations.data().as_array().unwrap().iter().filter(|o| o["slug"] == "acme").collect();
    assert_eq!(acme.len(), 1);
    let members = app.get(&format!("/v1/organizations/{}/memberships", acme[0]["id"].as_str().unwrap())).await;
    assert_eq!(members.data().as_array().unwrap().len(), 2, "{:?}", members.body);
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_hashes),
    ignore = "needs passlib, bcrypt and argon2-cffi: pip3 install passlib==1.7.4 bcrypt==5.0.0 argon2-cffi==23.1.0, then GATEHOUSE_TEST_REQUIRE_HASHES=1 cargo test"
)]
async fn an_import_again_skips_what_it_made_and_a_bad_line_is_refused_alone() {
    let app = spawn_app().await;
    let good =
        json!({"external_id": "u-1", "email": "one@example.com", "password_hash": foreign_hashes()["bcrypt_2b"]});
    let first = post_import(&app, ndjson(std::slice::from_ref(&good))).await;
    completed(&app, first.data()["id"].as_str().unwrap()).await;
    let taken = app.post("/v1/users", &json!({"email": "taken@example.com"})).await;
    assert_eq!(taken.status, 201);

    let body = [
        good.to_string(),
        "{not json".to_string(),
        json!({"external_id": "u-2", "email": "two@example.com", "password_hash": "$md5$x$y"}).to_string(),
        json!({"external_id": "u-3", "email": "taken@example.com"}).to_string(),
        json!({"external_id": "u-4", "email": "four@example.com", "password_hash": "$scrypt$ln=24,r=8,p=1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA"}).to_string(),
        json!({"external_id": "u-5", "email": "five@example.com", "organizations": [{"slug": "Not A Slug", "role": "member"}]}).to_string(),
        json!({"external_id": "u-6", "email": "six@example.com"}).to_string(),
        json!({"external_id": "u-6", "email": "six-again@example.com"}).to_string(),
    ]
    .join("\n");
    let second = post_import(&app, body).await;
    assert_eq!(second.status, 202, "{:?}", second.body);
    let job = completed(&app, second.data()["id"].as_str().unwrap()).await;
    assert_eq!(
        (job["lines_total"].as_i64(), job["created"].as_i64(), job["skipped"].as_i64(), job["failed"].as_i64()),
        (Some(8), Some(1), Some(1), Some(6)),
        "{job}"
    );
    let codes: Vec<(i64, &str)> = job["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["line"].as_i64().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        codes,
        [
            (2, "malformed_line"),
            (3, "invalid_password_hash"),
            (5, "invalid_password_hash"),
            (6, "validation_failed"),
            (4, "email_taken"),
            (8, "duplicate_in_import")
        ]
    );
    let users = app.get("/v1/users?limit=100").await;
    let mut emails: Vec<&str> = users.data().as_array().unwrap().iter().map(|u| u["email"].as_str().unwrap()).collect();
    emails.sort();
    assert_eq!(emails, ["one@example.com", "six@example.com", "taken@example.com"]);
}

#[actix_web::test]
async fn an_import_needs_ndjson_and_a_key_that_writes_users_and_is_not_anothers() {
    let app = spawn_app().await;
    let line = json!({"external_id": "a", "email": "a@example.com"}).to_string();
    let as_json = app
        .raw(
            app.client
                .post(app.url("/v1/users/imports"))
                .bearer_auth(&app.caller.key)
                .header("x-application-id", &app.caller.application_id)
                .header("content-type", "application/json")
                .body(line.clone()),
        )
        .await;
    assert_eq!((as_json.status, as_json.error_code()), (415, "unsupported_media_type"));
    let empty = post_import(&app, "\n\n".to_string()).await;
    assert_eq!(empty.status, 422);
    let queued = post_import(&app, line).await;
    let id = queued.data()["id"].as_str().unwrap().to_string();
    let other = app.other_account().await;
    assert_eq!(app.send(&other, Method::GET, &format!("/v1/users/imports/{id}"), None).await.status, 404);
    let reader = app.key_with_scopes(json!(["users:read"])).await;
    let refused = app
        .raw(
            app.client
                .post(app.url("/v1/users/imports"))
                .bearer_auth(&reader.key)
                .header("x-application-id", &reader.application_id)
                .header("content-type", "application/x-ndjson")
                .body("{}"),
        )
        .await;
    assert_eq!(refused.status, 403);
}
