//! Operation 17: moving an application, with all its data, to another
//! region's database, while its requests are held; and its crash safety.

use std::time::Duration;

use gatehouse::{region::Region, storage::tenant_tables};
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};
use serde_json::json;
use uuid::Uuid;

use crate::{
    end_users::{as_user, public_post, sign_up},
    helpers::{first_shard, region, spawn_with, TestApp, FOURTH_REGION},
    slow_smtp::SlowSmtp,
    webhooks::{start_receiver, verifies},
};

async fn rows_in(app: &TestApp, region: Region, id: Uuid) -> Vec<(&'static str, u64)> {
    let shard =
        app.state.storage.shard(gatehouse::region::Shard::first_of(region)).expect("the node holds every region");
    tenant_tables::count_all(&shard.conn, id).await.unwrap()
}

fn count(rows: &[(&str, u64)], table: &str) -> u64 {
    rows.iter().find(|(t, _)| *t == table).map(|(_, n)| *n).unwrap_or(0)
}

/// Sign-ups queue their verification email; the mail worker makes its code
/// (and writes its audit row) once the sign-up has answered.
async fn settled(app: &TestApp, emails_sent: usize) {
    crate::wait::until("the verification emails' audit rows", || async {
        let types = app.audit_types().await;
        types.iter().filter(|t| *t == "user.email_verification_sent").count() >= emails_sent
    })
    .await
}

async fn move_to(app: &TestApp, region: &str) -> crate::helpers::Reply {
    app.send(&app.caller, Method::POST, "/v1/security/region", Some(&json!({"region": region}))).await
}

#[actix_web::test]
async fn a_move_takes_every_row_to_the_new_region_and_leaves_none_behind() {
    // Arrange: an application in us with something in most of its tables,
    // and a webhook message still pending (its receiver failed once; the
    // retry is due after the move).
    let app = spawn_with(|s| {
        s.webhooks.poll_interval_ms = 20;
        s.webhooks.retry_schedule = "0s,3s".into();
    })
    .await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let receiver = start_receiver(vec![500]).await;
    let webhook = app.post("/v1/webhooks", &json!({"url": receiver.url, "event_types": ["api_key.created"]})).await;
    let secret = webhook.data()["secret"].as_str().unwrap().to_string();
    let ada = sign_up(&app, &app.caller, "ada@example.com").await;
    sign_up(&app, &app.caller, "grace@example.com").await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await;
    let org_id = org.data()["id"].as_str().unwrap().to_string();
    let user_id = ada["user"]["id"].as_str().unwrap();
    let joined = app
        .post(&format!("/v1/organizations/{org_id}/memberships"), &json!({"user_id": user_id, "role": "admin"}))
        .await;
    assert_eq!(joined.status, 201, "{:?}", joined.body);
    assert_eq!(app.post("/v1/hooks", &json!({"point": "pre_sign_up", "url": "https://h.example/x"})).await.status, 201);
    let field = json!({"key": "company", "label": "Company", "field_type": "text"});
    assert_eq!(app.post("/v1/profile-fields", &field).await.status, 201);
    assert_eq!(app.post("/v1/api-keys", &json!({"name": "moved"})).await.status, 201);
    let first_attempt = receiver.wait_for(1).await;
    assert_eq!(first_attempt.len(), 1, "the first attempt failed (500) before the move");
    settled(&app, 2).await;
    let before = rows_in(&app, region("us"), id).await;
    for table in [
        "users",
        "sessions",
        "refresh_tokens",
        "organizations",
        "memberships",
        "api_keys",
        "webhooks",
        "webhook_messages",
        "hooks",
        "profile_fields",
        "audit_events",
        "signing_keys",
    ] {
        assert!(count(&before, table) > 0, "{table} has rows before the move: {before:?}");
    }

    // Act
    let moved = move_to(&app, "eu").await;

    // Assert: the answer, then nothing left in us, everything in eu.
    assert_eq!(moved.status, 200, "{:?}", moved.body);
    assert_eq!(moved.data(), &json!({"region": "eu"}));
    assert_eq!(rows_in(&app, region("us"), id).await, vec![], "nothing of the application is left in us");
    let after = rows_in(&app, region("eu"), id).await;
    for (table, rows) in &before {
        let expected = if *table == "audit_events" { rows + 1 } else { *rows };
        assert_eq!(count(&after, table), expected, "{table}: {after:?}");
    }
    let now = app.get("/v1/security/region").await;
    assert_eq!((now.status, now.data()["region"].clone()), (200, json!("eu")));
    // The chain continues unbroken in eu, the move its last row.
    let eu = app.state.storage.shard(first_shard("eu")).unwrap();
    let chained = gatehouse::audit::query::verify(&eu.conn, id).await.unwrap().expect("the chain verifies");
    assert_eq!(chained as u64, count(&after, "audit_events"));
    let audit = app.get("/v1/audit-logs?type=application.region_changed").await;
    assert_eq!(audit.data()[0]["data"]["from"], "us", "{:?}", audit.body);
    assert_eq!(audit.data()[0]["data"]["to"], "eu");
    assert_eq!(audit.data()[0]["actor_kind"], "api_key");
    // Tokens issued before the move still verify, and its refresh token refreshes.
    let user = as_user(&app.caller, ada["access_token"].as_str().unwrap());
    assert_eq!(app.send(&user, Method::GET, "/v1/auth/me", None).await.status, 200);
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": ada["refresh_token"]})).await;
    assert_eq!(refreshed.status, 200, "{:?}", refreshed.body);
    // Every call still works, and writes land in eu.
    assert_eq!(app.get("/v1/users").await.data().as_array().unwrap().len(), 2);
    assert_eq!(app.post("/v1/api-keys", &json!({"name": "after"})).await.status, 201);
    assert_eq!(count(&rows_in(&app, region("eu"), id).await, "api_keys"), count(&before, "api_keys") + 1);
    // The pending message is delivered from eu: same webhook-id, signed.
    let delivered = receiver.wait_for(3).await;
    let retried: Vec<_> = delivered.iter().skip(1).filter(|d| d.id == delivered[0].id).collect();
    assert_eq!(retried.len(), 1, "the pending message arrived once after the move: {delivered:?}");
    assert!(verifies(&secret, retried[0]));
}

#[actix_web::test]
async fn requests_during_a_move_are_503_with_retry_after_and_the_move_is_seen_by_the_directory() {
    let app = spawn_with(|_| {}).await;
    // The test holds the application's chain head: the move's copy waits
    // for it, so the move stays at its first step until the test lets go.
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let mut holder = gatehouse::auth::public_scope(&app.state, tenant).unwrap().begin().await.unwrap();
    holder.lock_tenant().await.unwrap();
    let mover = {
        let (client, url, caller) = (app.client.clone(), app.url("/v1/security/region"), app.caller.clone());
        actix_web::rt::spawn(async move {
            client
                .post(url)
                .header("x-application-id", &caller.application_id)
                .bearer_auth(&caller.key)
                .json(&json!({"region": "ap"}))
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    // The move holds the application's requests from its first step.
    let held = crate::wait::until_some("the move to hold requests", || async {
        let reply = app.get("/v1/api-keys").await;
        (reply.status == 503).then_some(reply)
    })
    .await;
    let again = move_to(&app, "eu").await;
    drop(holder);

    assert_eq!((held.status, held.error_code()), (503, "region_migration_in_progress"), "{:?}", held.body);
    assert_eq!(held.header("retry-after"), Some("2"));
    assert_eq!(again.status, 503, "a second move waits for the first");
    assert_eq!(mover.await.unwrap(), 200);
    assert_eq!(app.get("/v1/security/region").await.data()["region"], "ap");
    assert_eq!(app.get("/v1/api-keys").await.status, 200);
}

#[actix_web::test]
async fn the_same_region_is_a_no_op_and_bad_bodies_change_nothing() {
    let app = spawn_with(|_| {}).await;

    let same = move_to(&app, "us").await;
    let unknown = move_to(&app, "mars").await;
    let empty = move_to(&app, "").await;
    let missing = app.post("/v1/security/region", &json!({})).await;
    let reader = app.key_with_scopes(json!(["audit:read"])).await;
    let not_admin = app.send(&reader, Method::POST, "/v1/security/region", Some(&json!({"region": "eu"}))).await;

    assert_eq!((same.status, same.data()["region"].clone()), (200, json!("us")));
    assert_eq!((unknown.status, unknown.error_code()), (422, "unknown_region"));
    assert_eq!((empty.status, empty.error_code()), (422, "unknown_region"));
    assert_eq!((missing.status, missing.error_code()), (422, "validation_failed"));
    assert_eq!((not_admin.status, not_admin.error_code()), (403, "insufficient_scope"));
    assert_eq!(app.get("/v1/security/region").await.data()["region"], "us");
    let types = app.audit_types().await;
    assert!(!types.contains(&"application.region_changed".to_string()), "{types:?}");
}

#[actix_web::test]
async fn moving_back_and_forth_keeps_every_row_and_one_chain() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    sign_up(&app, &app.caller, "ada@example.com").await;
    settled(&app, 1).await;
    let before = rows_in(&app, region("us"), id).await;
    let other = app.other_account().await;
    let other_id: Uuid = other.application_id.parse().unwrap();
    let other_before = rows_in(&app, region("us"), other_id).await;

    for region in ["eu", "ap", "us"] {
        assert_eq!(move_to(&app, region).await.status, 200);
    }

    let after = rows_in(&app, region("us"), id).await;
    assert_eq!(rows_in(&app, region("eu"), id).await, vec![]);
    assert_eq!(rows_in(&app, region("ap"), id).await, vec![]);
    assert_eq!(count(&after, "audit_events"), count(&before, "audit_events") + 3, "{:?}", app.audit_types().await);
    assert_eq!(count(&after, "users"), 1);
    let us = app.state.storage.shard(first_shard("us")).unwrap();
    assert!(gatehouse::audit::query::verify(&us.conn, id).await.unwrap().is_ok());
    // Another application of the same region is not touched by the moves.
    assert_eq!(rows_in(&app, region("us"), other_id).await, other_before);
    assert!(!other_before.is_empty());
    assert_eq!(app.send(&other, Method::GET, "/v1/security/region", None).await.data()["region"], "us");
}

/// Regions are configuration: the tests' fourth region, which no line of
/// the service names, takes a move like any other, is in the served
/// document's enum, and a region the deployment does not name is 422.
#[actix_web::test]
async fn an_application_moves_to_a_region_only_the_configuration_names() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let document: serde_json::Value =
        app.client.get(app.url("/v1/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(document["components"]["schemas"]["Region"]["enum"], json!(["us", "eu", "ap", FOURTH_REGION]));
    let before = rows_in(&app, region("us"), id).await;

    let moved = move_to(&app, FOURTH_REGION).await;
    assert_eq!((moved.status, moved.data()["region"].clone()), (200, json!(FOURTH_REGION)), "{:?}", moved.body);
    assert_eq!(rows_in(&app, region("us"), id).await, vec![], "nothing of the application is left in us");
    let after = rows_in(&app, region(FOURTH_REGION), id).await;
    assert_eq!(count(&after, "api_keys"), count(&before, "api_keys"));
    assert!(app.get("/v1/api-keys").await.status == 200, "served from its new region");

    for unknown in ["mars", "CA", ""] {
        let refused = move_to(&app, unknown).await;
        assert_eq!((refused.status, refused.error_code()), (422, "unknown_region"), "{unknown:?}");
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(message.ends_with(&format!("us, eu, ap, {FOURTH_REGION}.")), "{message}");
    }
    let created = app.post("/v1/applications", &json!({"name": "Elsewhere", "region": "mars"})).await;
    assert_eq!((created.status, created.error_code()), (422, "unknown_region"));
}

/// A region is removed from the configuration only once no application is
/// pinned to it: a node started without it refuses to start, naming it.
#[actix_web::test]
async fn a_node_refuses_to_start_without_a_region_an_application_is_pinned_to() {
    let app = spawn_with(|_| {}).await;
    let mut settings = app.storage.settings.clone();
    settings.deployment.regions.retain(|r| r.as_str() != "us");
    settings.node.regions.retain(|r| r.as_str() != "us");
    settings.regions.remove(&region("us"));
    settings.server.listen = "127.0.0.1:0".into();
    let refused = gatehouse::startup::Application::build(settings).await.err().expect("start-up is refused");
    let message = refused.to_string();
    assert!(message.contains("region `us` is not in deployment.regions, but 1 application(s)"), "{message}");
}

/// Sign-ups answered just before a move have promised their verification
/// emails: each is sent exactly once, by the region that holds the
/// application when its turn comes. The SMTP server takes two seconds per
/// message (four at once), so when the move starts a few are in flight
/// and the rest wait.
#[actix_web::test]
async fn emails_promised_just_before_a_move_are_each_sent_exactly_once() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let smtp = SlowSmtp::start(Duration::from_secs(2)).await;
    let config = json!({"host": "127.0.0.1", "port": smtp.port, "from": "no-reply@example.com"});
    let provider = json!({"channel": "email", "kind": "smtp", "config": config});
    let path = format!("/v1/applications/{id}/providers/messaging");
    let put = app.send(&app.caller, Method::PUT, &path, Some(&provider)).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    let mut emails: Vec<String> = (0..16).map(|i| format!("user{i}@example.com")).collect();
    futures_util::future::join_all(emails.iter().map(|email| sign_up(&app, &app.caller, email))).await;
    tokio::time::sleep(Duration::from_millis(150)).await;

    let moved = move_to(&app, "eu").await;

    assert_eq!(moved.status, 200, "{:?}", moved.body);
    let sent_from_us = smtp.accepted().len();
    assert!(sent_from_us < emails.len(), "some emails were left for eu to send ({sent_from_us} sent from us)");
    crate::wait::until("every verification email", || async { smtp.accepted().len() >= emails.len() }).await;
    // Every queued mail moved to eu and is settled there: one copied with
    // a live lease would stay pending until the lease lapsed (30 s), then
    // be sent again.
    let eu = app.state.storage.shard(first_shard("eu")).unwrap();
    crate::wait::until("every mail settled `sent` in eu", || async {
        let rows = entity::mail_queue::Entity::find()
            .filter(entity::mail_queue::Column::ApplicationId.eq(id))
            .all(&eu.conn)
            .await
            .unwrap();
        rows.len() == emails.len() && rows.iter().all(|row| row.status == "sent" && row.sealed.is_empty())
    })
    .await;
    assert_eq!(count(&rows_in(&app, region("us"), id).await, "mail_queue"), 0);
    // The one wait on time: a second send of one email leaves no trace to poll for.
    crate::wait::stays("no email is sent twice", Duration::from_secs(1), || async {
        smtp.accepted().len() == emails.len()
    })
    .await;
    let accepted = smtp.accepted();
    assert!(accepted.iter().all(|a| a.subject.starts_with("Verify your email")), "{accepted:?}");
    let mut recipients: Vec<String> = accepted.into_iter().flat_map(|accepted| accepted.to).collect();
    recipients.sort();
    emails.sort();
    assert_eq!(recipients, emails, "each email once");
    println!("sent from us before the move answered: {sent_from_us} of {}", emails.len());
}

/// The eu database already holds a row with one of the application's ids
/// (a user's, under another application): every copy fails on it.
async fn block_the_copy_to_eu(app: &TestApp, id: Uuid) -> entity::user::Model {
    sign_up(app, &app.caller, "ada@example.com").await;
    let us = app.state.storage.shard(first_shard("us")).unwrap();
    let user = entity::user::Entity::find()
        .filter(entity::user::Column::ApplicationId.eq(id))
        .one(&us.conn)
        .await
        .unwrap()
        .unwrap();
    let stray = entity::user::Model { application_id: Uuid::now_v7(), ..user };
    let eu = app.state.storage.shard(first_shard("eu")).unwrap();
    entity::user::Entity::insert(stray.clone().into_active_model()).exec_without_returning(&eu.conn).await.unwrap();
    stray
}

async fn served_from(app: &TestApp) -> String {
    let now = app.get("/v1/security/region").await;
    assert_eq!(now.status, 200, "{:?}", now.body);
    now.data()["region"].as_str().unwrap().to_string()
}

/// A move whose copy keeps failing is rolled back at its bound
/// (`node.move_copy_timeout_seconds`): the caller gets the error, the
/// application serves from its old region again, the new region holds
/// nothing of it, its chain says why, and a later move succeeds.
#[actix_web::test]
async fn a_move_that_cannot_copy_within_its_bound_is_rolled_back() {
    let app = spawn_with(|s| s.node.move_copy_timeout_seconds = 2).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let stray = block_the_copy_to_eu(&app, id).await;

    let moved = move_to(&app, "eu").await;

    assert_eq!(moved.status, 503, "{:?}", moved.body);
    assert!(moved.body.to_string().contains("rolled back"), "{:?}", moved.body);
    assert_eq!(served_from(&app).await, "us");
    assert_eq!(app.post("/v1/api-keys", &json!({"name": "after"})).await.status, 201, "writes work again");
    assert_eq!(rows_in(&app, region("eu"), id).await, vec![], "nothing of it in eu");
    let audit = app.get("/v1/audit-logs?type=application.region_move_rolled_back").await;
    assert_eq!(
        (audit.data()[0]["data"]["from"].as_str(), audit.data()[0]["data"]["to"].as_str()),
        (Some("us"), Some("eu"))
    );
    let journaled = gatehouse::storage::move_journal::find(&app.state.storage.catalog, id).await.unwrap().unwrap();
    assert_eq!(journaled.step, "rolled_back");
    // With the stray row gone, the same move goes through.
    let eu = app.state.storage.shard(first_shard("eu")).unwrap();
    entity::user::Entity::delete_by_id(stray.id).exec(&eu.conn).await.unwrap();
    assert_eq!(move_to(&app, "eu").await.status, 200);
    assert_eq!(served_from(&app).await, "eu");
}

/// An operator's cancel reaches a move that is still trying to copy: it
/// rolls back at its next try, long before its bound.
#[actix_web::test]
async fn a_cancelled_move_rolls_back_at_its_next_try() {
    let app = spawn_with(|s| s.node.move_copy_timeout_seconds = 60).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    block_the_copy_to_eu(&app, id).await;
    let mover = {
        let (client, url, caller) = (app.client.clone(), app.url("/v1/security/region"), app.caller.clone());
        actix_web::rt::spawn(async move {
            let moving = client.post(url).header("x-application-id", &caller.application_id).bearer_auth(&caller.key);
            moving.json(&json!({"region": "eu"})).send().await.unwrap().status()
        })
    };
    let catalog = &app.state.storage.catalog;
    crate::wait::until("the move is journaled", || async {
        gatehouse::storage::move_journal::find(catalog, id).await.unwrap().is_some()
    })
    .await;
    let started = std::time::Instant::now();

    let asked = gatehouse::storage::move_journal::request_cancel(catalog, id).await.unwrap();

    assert!(matches!(asked, gatehouse::storage::move_journal::CancelAsked::Requested(_)));
    assert_eq!(mover.await.unwrap(), 503);
    assert!(started.elapsed() < Duration::from_secs(30), "rolled back at a try, not at the 60 s bound");
    assert_eq!(served_from(&app).await, "us");
    let journaled = gatehouse::storage::move_journal::find(catalog, id).await.unwrap().unwrap();
    assert_eq!(journaled.step, "rolled_back");
}

/// A request that passed the router before a move began and writes after
/// the move's copy (a sign-up waiting 3 s on its pre-sign-up hook) is
/// refused with 503 `region_migration_in_progress`: its write would land in
/// the region the move leaves, and be lost. Retried, it lands in the new one.
#[actix_web::test]
async fn a_write_that_outlives_the_move_it_began_before_is_refused_not_lost() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let (url, script) = crate::hooks::start_hook_receiver().await;
    let hook = json!({"point": "pre_sign_up", "url": url, "timeout_ms": 5000});
    let created = app.post("/v1/hooks", &hook).await;
    *script.secret.lock().unwrap() = created.data()["secret"].as_str().unwrap().to_string();
    *script.mode.lock().unwrap() = "slow".into();
    let body = json!({"email": "late@example.com", "password": "correct horse battery"});
    let late = {
        let (client, url, app_id) =
            (app.client.clone(), app.url("/v1/auth/sign-up"), app.caller.application_id.clone());
        let body = body.clone();
        actix_web::rt::spawn(async move {
            let answer = client.post(url).header("x-application-id", app_id).json(&body).send().await.unwrap();
            (answer.status().as_u16(), answer.json::<serde_json::Value>().await.unwrap())
        })
    };
    crate::wait::until("the sign-up to wait at its hook", || async { script.calls() >= 1 }).await;

    let moved = move_to(&app, "eu").await;
    let (status, answer) = late.await.unwrap();

    assert_eq!(moved.status, 200, "{:?}", moved.body);
    assert_eq!((status, answer["error"]["code"].as_str()), (503, Some("region_migration_in_progress")), "{answer}");
    assert_eq!(count(&rows_in(&app, region("us"), id).await, "users"), 0, "nothing written where it left");
    *script.mode.lock().unwrap() = "allow".into();
    assert_eq!(public_post(&app, &app.caller, "/v1/auth/sign-up", &body).await.status, 201, "retried, it lands");
    assert_eq!(count(&rows_in(&app, region("eu"), id).await, "users"), 1);
}

/// A fence left on the region that serves an application (a move cancelled
/// after its copy, whose old region could not be written at its roll-back)
/// refuses its writes with 503 until the stalled-move scan lifts it.
#[actix_web::test]
async fn a_stale_fence_is_lifted_by_the_stalled_move_scan() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let us = app.state.storage.shard(first_shard("us")).unwrap();
    gatehouse::audit::fence(&us.conn, id, Some(chrono::Utc::now())).await.unwrap();

    let refused = app.post("/v1/api-keys", &json!({"name": "fenced"})).await;

    assert_eq!((refused.status, refused.error_code()), (503, "region_migration_in_progress"), "{:?}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("2"));
    crate::wait::until("the scan to lift the fence", || async {
        app.post("/v1/api-keys", &json!({"name": "lifted"})).await.status == 201
    })
    .await;
    let names: Vec<String> =
        app.get("/v1/api-keys").await.data().as_array().unwrap().iter().map(|k| k["name"].to_string()).collect();
    assert!(!names.iter().any(|n| n.contains("fenced")), "the refused write left nothing: {names:?}");
}

/// A move copies the audit chain ahead while the application serves, and
/// under the fence only what was appended since. What the new region held
/// of the chain counts only where it is the same chain: a row that differs
/// (left by anything but a copy of this chain) is replaced, and the chain
/// there verifies.
#[actix_web::test]
async fn audit_rows_the_new_region_holds_are_kept_only_where_they_are_the_same_chain() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(app.post("/v1/api-keys", &json!({"name": name})).await.status, 201);
    }
    let us = app.state.storage.shard(first_shard("us")).unwrap();
    let eu = app.state.storage.shard(first_shard("eu")).unwrap();
    let first = entity::audit_event::Entity::find()
        .filter(entity::audit_event::Column::ApplicationId.eq(id))
        .filter(entity::audit_event::Column::Seq.eq(1))
        .one(&us.conn)
        .await
        .unwrap()
        .unwrap();
    let forged = entity::audit_event::Model { hash: "f".repeat(64), ..first };
    entity::audit_event::Entity::insert(forged.into_active_model()).exec(&eu.conn).await.unwrap();
    let before = rows_in(&app, region("us"), id).await;

    let moved = move_to(&app, "eu").await;

    assert_eq!(moved.status, 200, "{:?}", moved.body);
    let after = rows_in(&app, region("eu"), id).await;
    assert_eq!(count(&after, "audit_events"), count(&before, "audit_events") + 1, "the move's own row added");
    assert!(gatehouse::audit::query::verify(&eu.conn, id).await.unwrap().is_ok(), "the forged row was replaced");
    let audit = app.get("/v1/audit-logs?type=application.region_changed").await;
    let total: u64 = before.iter().map(|(_, n)| n).sum();
    assert_eq!(audit.data()[0]["data"]["rows"], json!(total), "rows: what the new region holds of it");
}

/// Rows of an application in a database that neither serves it nor is its
/// move's target (its chain copied ahead of a move that never began: the
/// node died before journaling it) are deleted by the stalled-move scan
/// once their fenced head is a minute old; its own region is untouched.
#[actix_web::test]
async fn rows_copied_ahead_of_a_move_that_never_began_are_removed() {
    let app = spawn_with(|_| {}).await;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let (us, eu) =
        (app.state.storage.shard(first_shard("us")).unwrap(), app.state.storage.shard(first_shard("eu")).unwrap());
    gatehouse::storage::tenant_tables::copy_audit_ahead(&us.conn, &eu.conn, id).await.unwrap();
    gatehouse::audit::mark_copied_ahead(&eu.conn, id).await.unwrap();
    assert!(count(&rows_in(&app, region("eu"), id).await, "audit_events") > 0);
    let before = rows_in(&app, region("us"), id).await;
    // Fresh, the copy waits for its move: the scan leaves it.
    crate::wait::stays("a fresh copy ahead stays", Duration::from_secs(4), || async {
        count(&rows_in(&app, region("eu"), id).await, "audit_events") > 0
    })
    .await;

    let long_ago = chrono::Utc::now() - chrono::Duration::minutes(2);
    gatehouse::audit::fence(&eu.conn, id, Some(long_ago)).await.unwrap();

    crate::wait::until("the scan to remove the leftovers", || async {
        rows_in(&app, region("eu"), id).await.is_empty()
    })
    .await;
    assert_eq!(rows_in(&app, region("us"), id).await, before, "its own region untouched");
    assert_eq!(app.post("/v1/api-keys", &json!({"name": "still here"})).await.status, 201);
}
