//! Messaging providers (operation 2): upsert, list, the production rules,
//! the sealed secret, a real SMTP server receiving the test send, the outbox.
use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use entity::messaging_provider;
use reqwest::Method;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{first_shard, spawn_app, Caller, Reply, TestApp};

fn base(caller: &Caller) -> String {
    format!("/v1/applications/{}/providers/messaging", caller.application_id)
}

async fn put(app: &TestApp, caller: &Caller, body: Value) -> Reply {
    app.send(caller, Method::PUT, &base(caller), Some(&body)).await
}

async fn test_send(app: &TestApp, caller: &Caller, to: &str) -> Reply {
    let path = format!("{}/test", base(caller));
    app.send(caller, Method::POST, &path, Some(&json!({"channel": "email", "to": to}))).await
}

async fn providers(app: &TestApp, caller: &Caller) -> Vec<Value> {
    let reply = app.send(caller, Method::GET, &base(caller), None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().as_array().unwrap().clone()
}

async fn outbox(app: &TestApp, caller: &Caller) -> Vec<Value> {
    let reply = app.send(caller, Method::GET, &format!("{}/outbox", base(caller)), None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().as_array().unwrap().clone()
}

/// The real SMTP server (aiosmtpd) on a free loopback port, or `None` when
/// python3 or aiosmtpd is missing and `GATEHOUSE_TEST_REQUIRE_SMTP` is unset.
struct SmtpSink {
    child: Child,
    port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl SmtpSink {
    fn start(username: &str, password: &str) -> Option<SmtpSink> {
        let available = Command::new("python3")
            .args(["-c", "import aiosmtpd"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !available {
            assert!(
                std::env::var_os("GATEHOUSE_TEST_REQUIRE_SMTP").is_none(),
                "GATEHOUSE_TEST_REQUIRE_SMTP is set but python3 with aiosmtpd is missing (pip3 install aiosmtpd==1.4.6)"
            );
            eprintln!("SKIPPED: the SMTP test needs python3 with aiosmtpd (pip3 install aiosmtpd==1.4.6)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("received.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/support/smtp_sink.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args([&port.to_string(), out.to_str().unwrap(), username, password])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "the SMTP sink did not start");
        Some(SmtpSink { child, port, out, _dir: dir })
    }

    /// What has arrived, once something has.
    async fn received(&self) -> Vec<Value> {
        let arrived = || async { Some(self.received_now()).filter(|received| !received.is_empty()) };
        crate::wait::until_some("a message at the SMTP sink", arrived).await
    }

    /// What has arrived so far. A send is answered after the sink stored
    /// it, so once a send's answer is in, an empty list is conclusive.
    fn received_now(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop();
    }
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_smtp),
    ignore = "needs aiosmtpd: pip3 install aiosmtpd==1.4.6, then GATEHOUSE_TEST_REQUIRE_SMTP=1 cargo test"
)]
async fn an_smtp_provider_really_sends_and_its_status_follows_the_sends() {
    // Arrange: a real SMTP server that accepts one username and password.
    let Some(mut sink) = SmtpSink::start("mailer", "smtp-password-1") else { return };
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let config = json!({"host": "127.0.0.1", "port": sink.port, "username": "mailer", "from": "no-reply@example.com"});
    let saved =
        put(&app, &caller, json!({"channel": "email", "kind": "smtp", "config": config, "secret": "smtp-password-1"}))
            .await;
    assert_eq!(saved.status, 200, "{:?}", saved.body);
    assert_eq!(saved.data()["status"], "unverified");
    assert_eq!(saved.data()["has_secret"], true);
    assert!(saved.data()["verified_at"].is_null());
    assert_eq!(saved.data()["config"]["starttls"], false);
    assert_eq!(saved.data()["config"]["port"], sink.port);

    // Act: a test send.
    let sent = test_send(&app, &caller, "alice@example.com").await;

    // Assert: the server received it, signed in, and the provider is verified.
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    assert_eq!(sent.data()["status"], "verified");
    assert!(sent.data()["verified_at"].is_string());
    let received = sink.received().await;
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["rcpt_tos"], json!(["alice@example.com"]));
    assert_eq!(received[0]["mail_from"], "no-reply@example.com");
    assert_eq!(received[0]["subject"], "Gatehouse test message");
    assert!(received[0]["body"].as_str().unwrap().contains(&caller.application_id), "{received:?}");
    assert_eq!(received[0]["authenticated"], true);
    let listed = providers(&app, &caller).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "verified");

    // Omitting the secret keeps it: the same settings stay verified.
    let kept = put(&app, &caller, json!({"channel": "email", "kind": "smtp", "config": config})).await;
    assert_eq!(kept.status, 200, "{:?}", kept.body);
    assert_eq!(kept.data()["has_secret"], true);
    assert_eq!(kept.data()["status"], "verified");

    // The server goes away: the next test send fails and the provider is failing.
    sink.stop();
    let failed = test_send(&app, &caller, "alice@example.com").await;
    assert_eq!(failed.status, 503, "{:?}", failed.body);
    assert_eq!(failed.error_code(), "unavailable");
    let listed = providers(&app, &caller).await;
    assert_eq!(listed[0]["status"], "failing");
    assert!(listed[0]["verified_at"].is_string(), "the last success stays known");
    let audit = app.get("/v1/audit-logs/export?limit=1000").await;
    let provider_rows: Vec<&Value> =
        audit.data().as_array().unwrap().iter().filter(|r| r["type"] == "provider.updated").collect();
    assert_eq!(provider_rows.len(), 4, "two upserts and two test sends: {provider_rows:?}");
    assert_eq!(provider_rows[0]["data"], json!({"provider": "messaging", "channel": "email", "kind": "smtp"}));
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_smtp),
    ignore = "needs aiosmtpd: pip3 install aiosmtpd==1.4.6, then GATEHOUSE_TEST_REQUIRE_SMTP=1 cargo test"
)]
async fn a_wrong_password_makes_the_provider_failing() {
    let Some(sink) = SmtpSink::start("mailer", "right-password") else { return };
    let app = spawn_app().await;
    let config = json!({"host": "127.0.0.1", "port": sink.port, "username": "mailer", "from": "no-reply@example.com"});
    put(&app, &app.caller, json!({"channel": "email", "kind": "smtp", "config": config, "secret": "wrong-password"}))
        .await;
    let failed = test_send(&app, &app.caller, "bob@example.com").await;
    assert_eq!(failed.status, 503, "{:?}", failed.body);
    assert!(failed.body["error"]["message"].as_str().unwrap().contains("refused"), "{:?}", failed.body);
    assert_eq!(providers(&app, &app.caller).await[0]["status"], "failing");
    assert!(sink.received_now().is_empty());
}

#[actix_web::test]
async fn the_log_kind_and_a_channel_without_provider_keep_messages_in_the_outbox() {
    let app = spawn_app().await;
    let caller = app.caller.clone();
    // No provider: a test send has nothing to go through.
    let missing = test_send(&app, &caller, "carol@example.com").await;
    assert_eq!(missing.status, 404, "{:?}", missing.body);
    let saved = put(&app, &caller, json!({"channel": "email", "kind": "log"})).await;
    assert_eq!(saved.status, 200, "{:?}", saved.body);
    assert_eq!(saved.data()["config"], json!({}));
    assert_eq!(saved.data()["has_secret"], false);
    let sent = test_send(&app, &caller, "carol@example.com").await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    assert_eq!(sent.data()["status"], "verified");
    let kept = outbox(&app, &caller).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["recipient"], "carol@example.com");
    assert_eq!(kept[0]["subject"], "Gatehouse test message");
    assert_eq!(kept[0]["reason"], "log");
    assert_eq!(kept[0]["channel"], "email");
    assert!(kept[0]["body"].as_str().unwrap().contains("`log`"));
    assert!(kept[0]["created_at"].is_string());
    // An sms provider next to it: one row per channel.
    let sms = put(&app, &caller, json!({"channel": "sms", "kind": "log"})).await;
    assert_eq!(sms.status, 200, "{:?}", sms.body);
    let path = format!("{}/test", base(&caller));
    let bad = app.send(&caller, Method::POST, &path, Some(&json!({"channel": "sms", "to": "carol@example.com"}))).await;
    assert_eq!(bad.status, 422, "{:?}", bad.body);
    let texted = app.send(&caller, Method::POST, &path, Some(&json!({"channel": "sms", "to": "+4915112345678"}))).await;
    assert_eq!(texted.status, 200, "{:?}", texted.body);
    assert_eq!(providers(&app, &caller).await.len(), 2);
    let kept = outbox(&app, &caller).await;
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0]["recipient"], "+4915112345678", "newest first");
    let paged = app.send(&caller, Method::GET, &format!("{}/outbox?limit=1", base(&caller)), None).await;
    assert_eq!(paged.data().as_array().unwrap().len(), 1);
    assert_eq!(paged.body["meta"]["has_more"], true);
}

#[actix_web::test]
async fn the_mailer_records_email_without_a_provider_in_the_outbox() {
    let app = spawn_app().await;
    let scope = gatehouse_scope(&app).await;
    let message = gatehouse::areas::mailer::Message {
        to: "dave@example.com".to_string(),
        subject: "Welcome".to_string(),
        body: "Hello".to_string(),
    };
    let sent = app.state.mailer.send(&scope, "email", message).await.unwrap();
    assert_eq!(sent, gatehouse::areas::mailer::Sent::Recorded);
    let kept = outbox(&app, &app.caller).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["reason"], "no_provider");
    assert_eq!(kept[0]["subject"], "Welcome");
}

/// The test application's scope, as an unauthenticated flow (an invitation's
/// acceptance, a sign-up) holds it.
async fn gatehouse_scope(app: &TestApp) -> gatehouse::storage::TenantScope {
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    gatehouse::auth::public_scope(&app.state, tenant).unwrap()
}

#[actix_web::test]
async fn production_may_not_use_the_shared_sender_nor_the_log_kind() {
    let app = spawn_app().await;
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    let shared = put(&app, &production, json!({"channel": "email", "kind": "shared"})).await;
    assert_eq!(shared.status, 422, "{:?}", shared.body);
    assert_eq!(shared.error_code(), "production_shared_sender_forbidden");
    let log = put(&app, &production, json!({"channel": "email", "kind": "log"})).await;
    assert_eq!(log.status, 422, "{:?}", log.body);
    assert_eq!(log.error_code(), "validation_failed");
    let plain = json!({"host": "smtp.example.com", "from": "no-reply@example.com"});
    let refused = put(&app, &production, json!({"channel": "email", "kind": "smtp", "config": plain})).await;
    assert_eq!(refused.status, 422, "plain SMTP in production: {:?}", refused.body);
    assert!(providers(&app, &production).await.is_empty(), "nothing stored");
    let tls = json!({"host": "smtp.example.com", "from": "no-reply@example.com", "starttls": true});
    let own = put(&app, &production, json!({"channel": "email", "kind": "smtp", "config": tls})).await;
    assert_eq!(own.status, 200, "{:?}", own.body);
    // Development may use the shared sender.
    let dev = put(&app, &app.caller, json!({"channel": "email", "kind": "shared"})).await;
    assert_eq!(dev.status, 200, "{:?}", dev.body);
}

#[actix_web::test]
async fn bad_input_is_refused_with_nothing_stored() {
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let smtp = json!({"host": "smtp.example.com", "from": "no-reply@example.com"});
    for body in [
        json!({"channel": "fax", "kind": "log"}),
        json!({"channel": "email", "kind": "pigeon"}),
        json!({"channel": "sms", "kind": "smtp", "config": smtp}),
        json!({"channel": "email", "kind": "smtp"}),
        json!({"channel": "email", "kind": "smtp", "config": {"host": "smtp.example.com"}}),
        json!({"channel": "email", "kind": "smtp", "config": {"host": "bad host", "from": "a@example.com"}}),
        json!({"channel": "email", "kind": "smtp", "config": {"host": "h", "from": "x", "extra": 1}}),
        json!({"channel": "email", "kind": "smtp", "config": {"host": "h", "from": "a@example.com", "username": "u"}}),
        json!({"channel": "email", "kind": "smtp", "config": smtp, "secret": "password-without-username"}),
        json!({"channel": "email", "kind": "log", "config": {"host": "h"}}),
        json!({"channel": "email", "kind": "log", "secret": "s"}),
        json!({"channel": "email"}),
        json!({"channel": "email", "kind": "log", "id": "x"}),
    ] {
        let reply = put(&app, &caller, body.clone()).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
        assert_eq!(reply.error_code(), "validation_failed", "{body}");
    }
    assert!(providers(&app, &caller).await.is_empty());
    assert!(!app.audit_types().await.contains(&"provider.updated".to_string()));
}

#[actix_web::test]
async fn another_applications_providers_are_not_found() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    put(&app, &other, json!({"channel": "email", "kind": "log"})).await;
    // The caller names the other application in the path.
    let path = base(&other);
    for (method, body) in [
        (Method::GET, None),
        (Method::PUT, Some(json!({"channel": "email", "kind": "log"}))),
        (Method::POST, Some(json!({"channel": "email", "to": "a@example.com"}))),
    ] {
        let path = if method == Method::POST { format!("{path}/test") } else { path.clone() };
        let reply = app.send(&app.caller, method, &path, body.as_ref()).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
    }
    let reply = app.send(&app.caller, Method::GET, &format!("{path}/outbox"), None).await;
    assert_eq!(reply.status, 404);
    assert!(providers(&app, &app.caller).await.is_empty());
    // A key with `providers:read` may list but not change.
    let reader = app.key_with_scopes(json!(["providers:read"])).await;
    let refused = put(&app, &reader, json!({"channel": "email", "kind": "log"})).await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_smtp),
    ignore = "needs aiosmtpd: pip3 install aiosmtpd==1.4.6, then GATEHOUSE_TEST_REQUIRE_SMTP=1 cargo test"
)]
async fn a_sealed_secret_copied_to_another_application_does_not_open() {
    let Some(sink) = SmtpSink::start("mailer", "copied-password") else { return };
    let app = spawn_app().await;
    let second = app.create_application(json!({"name": "Second"})).await;
    let config = json!({"host": "127.0.0.1", "port": sink.port, "username": "mailer", "from": "no-reply@example.com"});
    put(&app, &app.caller, json!({"channel": "email", "kind": "smtp", "config": config, "secret": "copied-password"}))
        .await;
    put(&app, &second, json!({"channel": "email", "kind": "smtp", "config": config, "secret": "other-password"})).await;
    // An attacker with database access copies the first row's ciphertext.
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let first_id: Uuid = app.caller.application_id.parse().unwrap();
    let second_id: Uuid = second.application_id.parse().unwrap();
    let row_of = |id: Uuid| {
        messaging_provider::Entity::find().filter(messaging_provider::Column::ApplicationId.eq(id)).one(shard)
    };
    let first = row_of(first_id).await.unwrap().unwrap();
    assert!(!String::from_utf8_lossy(first.secret_sealed.as_ref().unwrap()).contains("copied-password"));
    let mut target = row_of(second_id).await.unwrap().unwrap().into_active_model();
    target.secret_sealed = Set(first.secret_sealed.clone());
    target.update(shard).await.unwrap();
    // Reload the second application's state (as a bus message would).
    app.state.bus.publish(gatehouse::cache::Invalidation::All).await;
    let failed = test_send(&app, &second, "eve@example.com").await;
    assert_eq!(failed.status, 503, "{:?}", failed.body);
    assert!(failed.body["error"]["message"].as_str().unwrap().contains("does not open"), "{:?}", failed.body);
    assert!(sink.received_now().is_empty());
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_smtp),
    ignore = "needs aiosmtpd: pip3 install aiosmtpd==1.4.6, then GATEHOUSE_TEST_REQUIRE_SMTP=1 cargo test"
)]
async fn a_canary_secret_never_appears_in_answers_or_the_audit_export() {
    const CANARY: &str = "canary-7f3a9c1e-smtp-password";
    let sink = SmtpSink::start("mailer", CANARY);
    let app = spawn_app().await;
    let caller = app.caller.clone();
    let port = sink.as_ref().map_or(9, |s| s.port);
    let config = json!({"host": "127.0.0.1", "port": port, "username": "mailer", "from": "no-reply@example.com"});
    let mut answers =
        vec![put(&app, &caller, json!({"channel": "email", "kind": "smtp", "config": config, "secret": CANARY})).await];
    answers.push(put(&app, &caller, json!({"channel": "email", "kind": "smtp", "config": config})).await);
    answers.push(test_send(&app, &caller, "frank@example.com").await);
    answers.push(app.send(&caller, Method::GET, &base(&caller), None).await);
    answers.push(app.send(&caller, Method::GET, &format!("{}/outbox", base(&caller)), None).await);
    answers.push(app.get("/v1/audit-logs/export?limit=1000").await);
    answers.push(app.get("/v1/audit-logs?limit=100").await);
    for answer in &answers {
        assert!(answer.status < 500 || answer.status == 503, "{:?}", answer.body);
        let text = answer.body.to_string();
        assert!(!text.contains(CANARY), "the canary leaked: {text}");
        assert!(!text.contains("secret_sealed"), "{text}");
    }
    let first = &answers[0];
    assert_eq!(first.status, 200);
    assert_eq!(first.data()["has_secret"], true);
    assert!(first.data()["config"].get("secret").is_none());
}
