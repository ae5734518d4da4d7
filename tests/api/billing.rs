//! Billing: the payment method (sealed token), the connected account (a
//! claim, verified by a signed event whose metadata names the application),
//! the processor's signed events and the cached status.
use std::time::Duration;

use entity::{billing_profile, unmatched_processor_event};
use gatehouse::{areas::billing::token_context, crypto::seal, events::processor_signature, startup::Application};
use reqwest::Method;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, IntoActiveModel};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{
    first_shard, spawn_app, us_node_with_eu_peer, Caller, Reply, TestApp, TwoRegions, PROCESSOR_SECRET,
};

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// An `account.updated` event whose account names `owner` in its metadata
/// (what the customer sets on their own account at the processor).
fn account_event(id: &str, account: &str, owner: &Caller, created: i64, details_submitted: bool) -> String {
    let metadata = json!({"gatehouse_application_id": owner.application_id});
    event_with_metadata(id, account, metadata, created, details_submitted)
}

fn event_with_metadata(id: &str, account: &str, metadata: Value, created: i64, details_submitted: bool) -> String {
    json!({
        "id": id,
        "object": "event",
        "type": "account.updated",
        "created": created,
        "data": {"object": {
            "id": account,
            "object": "account",
            "charges_enabled": details_submitted,
            "payouts_enabled": false,
            "details_submitted": details_submitted,
            "metadata": metadata,
            "requirements": {"disabled_reason": if details_submitted { Value::Null } else { json!("requirements.past_due") }},
        }},
    })
    .to_string()
}

async fn deliver_at(app: &TestApp, address: &str, body: &str, signature: Option<&str>) -> Reply {
    let mut request = app
        .client
        .post(format!("{address}/v1/billing/processor-webhooks"))
        .header("content-type", "application/json; charset=utf-8")
        .body(body.to_string());
    if let Some(signature) = signature {
        request = request.header("stripe-signature", signature);
    }
    app.raw(request).await
}

async fn deliver(app: &TestApp, body: &str, signature: Option<&str>) -> Reply {
    deliver_at(app, &app.address, body, signature).await
}

async fn deliver_signed(app: &TestApp, body: &str) -> Reply {
    deliver(app, body, Some(&processor_signature::sign(PROCESSOR_SECRET, now(), body.as_bytes()))).await
}

fn new_account() -> String {
    format!("acct_{}", Uuid::new_v4().simple())
}

async fn connect(app: &TestApp, caller: &Caller, account: &str) -> Reply {
    let body = json!({"processor_account_id": account});
    app.send(caller, Method::POST, "/v1/billing/connect", Some(&body)).await
}

async fn status(app: &TestApp, caller: &Caller) -> Value {
    let reply = app.send(caller, Method::GET, "/v1/billing/connect/status", None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().clone()
}

async fn count_type(app: &TestApp, event_type: &str) -> usize {
    app.audit_types().await.iter().filter(|t| *t == event_type).count()
}

async fn count_type_of(app: &TestApp, caller: &Caller, event_type: &str) -> usize {
    let rows = app.send(caller, Method::GET, "/v1/audit-logs/export?limit=1000", None).await;
    assert_eq!(rows.status, 200, "{:?}", rows.body);
    rows.data().as_array().unwrap().iter().filter(|r| r["type"] == event_type).count()
}

async fn unmatched(app: &TestApp) -> Vec<unmatched_processor_event::Model> {
    unmatched_processor_event::Entity::find().all(&app.state.storage.catalog.conn).await.unwrap()
}

fn unverified(account: &str) -> Value {
    json!({"charges_enabled": false, "details_submitted": false, "disabled_reason": null, "onboarded": false,
        "payouts_enabled": false, "processor_account_id": account, "verified": false})
}

#[actix_web::test]
async fn a_payment_method_is_answered_as_a_summary_and_its_token_is_sealed_to_the_application() {
    // Arrange
    let app = spawn_app().await;
    let before = app.get("/v1/billing/payment-method").await;
    assert_eq!(before.status, 200);
    assert_eq!(
        *before.data(),
        json!({"has_payment_method": false, "payment_brand": null, "payment_last4": null, "billing_email": null})
    );
    // Act
    let body = json!({"brand": "visa", "last4": "4242", "token": "pm_secret_token_one", "billing_email": "Billing@Example.com"});
    let set = app.send(&app.caller, Method::PUT, "/v1/billing/payment-method", Some(&body)).await;
    // Assert
    assert_eq!(set.status, 200, "{:?}", set.body);
    let expected = json!({"has_payment_method": true, "payment_brand": "visa", "payment_last4": "4242", "billing_email": "billing@example.com"});
    assert_eq!(*set.data(), expected);
    assert_eq!(*app.get("/v1/billing/payment-method").await.data(), expected);
    assert!(!set.body.to_string().contains("pm_secret_token_one"));
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let row = billing_profile::Entity::find_by_id(id).one(shard).await.unwrap().unwrap();
    let raw = String::from_utf8_lossy(&row.payment_token_sealed).to_string();
    assert!(!raw.contains("pm_secret_token_one"), "the token is not stored in plaintext");
    let key = &app.state.master_key;
    assert_eq!(seal::open(key, &token_context(id), &row.payment_token_sealed).unwrap(), b"pm_secret_token_one");
    // Copied into another application's row, the ciphertext does not open there.
    let other = app.create_application(json!({"name": "Other"})).await;
    let other_id: Uuid = other.application_id.parse().unwrap();
    let put = app
        .send(
            &other,
            Method::PUT,
            "/v1/billing/payment-method",
            Some(&json!({"brand": "amex", "last4": "0005", "token": "pm_other"})),
        )
        .await;
    assert_eq!(put.status, 200);
    let mut copied =
        billing_profile::Entity::find_by_id(other_id).one(shard).await.unwrap().unwrap().into_active_model();
    copied.payment_token_sealed = Set(row.payment_token_sealed.clone());
    copied.update(shard).await.unwrap();
    let stolen = billing_profile::Entity::find_by_id(other_id).one(shard).await.unwrap().unwrap();
    assert!(seal::open(key, &token_context(other_id), &stolen.payment_token_sealed).is_err());
    assert_eq!(count_type(&app, "billing.payment_method.updated").await, 1);
    assert!(!app.get("/v1/audit-logs/export?limit=1000").await.body.to_string().contains("pm_secret_token_one"));
}

#[actix_web::test]
async fn replacing_a_payment_method_keeps_no_old_token() {
    let app = spawn_app().await;
    let first = json!({"brand": "visa", "last4": "4242", "token": "pm_first"});
    let second = json!({"brand": "mastercard", "last4": "4444", "token": "pm_second"});
    assert_eq!(app.send(&app.caller, Method::PUT, "/v1/billing/payment-method", Some(&first)).await.status, 200);
    let replaced = app.send(&app.caller, Method::PUT, "/v1/billing/payment-method", Some(&second)).await;
    assert_eq!(replaced.status, 200);
    assert_eq!(replaced.data()["payment_brand"], "mastercard");
    assert_eq!(replaced.data()["billing_email"], Value::Null);
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let rows = billing_profile::Entity::find().all(shard).await.unwrap();
    assert_eq!(rows.len(), 1, "one row per application");
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let opened = seal::open(&app.state.master_key, &token_context(id), &rows[0].payment_token_sealed).unwrap();
    assert_eq!(opened, b"pm_second");
    assert_eq!(count_type(&app, "billing.payment_method.updated").await, 2);
}

#[actix_web::test]
async fn each_bad_payment_method_field_is_422_and_nothing_is_stored() {
    let app = spawn_app().await;
    let valid = json!({"brand": "visa", "last4": "4242", "token": "pm_1", "billing_email": "a@example.com"});
    let cases = [
        ("brand", json!("maestro")),
        ("brand", json!("")),
        ("last4", json!("424")),
        ("last4", json!("42a2")),
        ("last4", json!("٤٢٤٢")),
        ("token", json!("")),
        ("token", json!("   ")),
        ("billing_email", json!("not-an-email")),
    ];
    for (field, value) in cases {
        let mut body = valid.clone();
        body[field] = value.clone();
        let reply = app.send(&app.caller, Method::PUT, "/v1/billing/payment-method", Some(&body)).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{field} = {value}");
        assert_eq!(reply.body["error"]["details"][0]["field"], field, "{:?}", reply.body);
    }
    for missing in ["brand", "last4", "token"] {
        let mut body = valid.clone();
        body.as_object_mut().unwrap().remove(missing);
        let reply = app.send(&app.caller, Method::PUT, "/v1/billing/payment-method", Some(&body)).await;
        assert_eq!(reply.status, 422, "without {missing}");
    }
    let not_admin = app.key_with_scopes(json!([])).await;
    let refused = app.send(&not_admin, Method::PUT, "/v1/billing/payment-method", Some(&valid)).await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_scope"));
    assert_eq!(app.get("/v1/billing/payment-method").await.data()["has_payment_method"], false);
}

#[actix_web::test]
async fn a_claim_of_another_applications_account_reveals_nothing_and_receives_nothing() {
    // Arrange: B (another tenant) claims A's account before A does.
    let app = spawn_app().await;
    let squatter = app.other_account().await;
    let account = new_account();
    // Act
    let squatted = connect(&app, &squatter, &account).await;
    let claimed = connect(&app, &app.caller, &account).await;
    let again = connect(&app, &squatter, &account).await;
    // Assert: every claim is 200 with the same answer; none says whether another application claimed it.
    for reply in [&squatted, &claimed, &again] {
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(*reply.data(), unverified(&account));
    }
    assert_eq!(status(&app, &squatter).await, unverified(&account));
    // Before the processor proves anything, an event naming nobody goes to nobody.
    let anonymous = event_with_metadata("evt_anon", &account, json!({}), now(), true);
    assert_eq!(deliver_signed(&app, &anonymous).await.status, 200);
    assert_eq!(status(&app, &app.caller).await, unverified(&account));
    assert_eq!(status(&app, &squatter).await, unverified(&account));
    // The account's owner named A in its metadata: A is verified, B gets nothing.
    let proof = deliver_signed(&app, &account_event("evt_proof", &account, &app.caller, now(), true)).await;
    assert_eq!(proof.status, 200, "{:?}", proof.body);
    let own = status(&app, &app.caller).await;
    assert_eq!((own["verified"].clone(), own["onboarded"].clone()), (json!(true), json!(true)), "{own}");
    assert_eq!(own["processor_account_id"], json!(account));
    assert_eq!(status(&app, &squatter).await, unverified(&account));
    // B claiming again still answers the same, and gets nothing of A's later events.
    assert_eq!(*connect(&app, &squatter, &account).await.data(), unverified(&account));
    deliver_signed(&app, &account_event("evt_later", &account, &app.caller, now(), false)).await;
    assert_eq!(status(&app, &squatter).await, unverified(&account));
    assert_eq!(status(&app, &app.caller).await["charges_enabled"], false, "A's later event applied");
    assert_eq!(count_type_of(&app, &squatter, "billing.connect_status.updated").await, 0);
    assert_eq!(count_type_of(&app, &squatter, "billing.connected_account.claimed").await, 1);
    assert_eq!(count_type(&app, "billing.connected_account.claimed").await, 1);
    assert_eq!(count_type(&app, "billing.connected_account.verified").await, 1);
    assert_eq!(count_type(&app, "billing.connect_status.updated").await, 2);
    let not_admin = app.key_with_scopes(json!([])).await;
    assert_eq!(connect(&app, &not_admin, &new_account()).await.status, 403);
    assert_eq!(connect(&app, &app.caller, "acct with spaces").await.status, 422);
}

#[actix_web::test]
async fn an_event_without_metadata_naming_a_claimer_changes_nothing_and_is_recorded_unmatched() {
    // Arrange: A claims the account; C claims another one.
    let app = spawn_app().await;
    let other = app.create_application(json!({"name": "Other"})).await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    connect(&app, &other, &new_account()).await;
    let t = now();
    let cases = [
        ("evt_none", json!(null)),
        ("evt_empty", json!({})),
        ("evt_other", json!({"gatehouse_application_id": other.application_id})),
        ("evt_nobody", json!({"gatehouse_application_id": Uuid::new_v4().to_string()})),
        ("evt_garbage", json!({"gatehouse_application_id": "not-an-id"})),
        ("evt_number", json!({"gatehouse_application_id": 7})),
    ];
    // Act
    for (id, metadata) in &cases {
        let reply = deliver_signed(&app, &event_with_metadata(id, &account, metadata.clone(), t, true)).await;
        assert_eq!((reply.status, reply.data().clone()), (200, json!({"received": true})), "{id}");
    }
    // Assert
    assert_eq!(status(&app, &app.caller).await, unverified(&account));
    assert_eq!(status(&app, &other).await["verified"], false);
    let mut recorded: Vec<String> = unmatched(&app).await.into_iter().map(|row| row.event_id).collect();
    recorded.sort();
    let mut expected: Vec<String> = cases.iter().map(|(id, _)| id.to_string()).collect();
    expected.sort();
    assert_eq!(recorded, expected);
    assert_eq!(count_type(&app, "billing.connect_status.updated").await, 0);
    // Once verified, an event without the metadata still goes to no one (only the metadata decides).
    deliver_signed(&app, &account_event("evt_verify", &account, &app.caller, t, true)).await;
    assert_eq!(status(&app, &app.caller).await["verified"], true);
    let bare = event_with_metadata("evt_bare", &account, json!(null), t + 1, false);
    assert_eq!(deliver_signed(&app, &bare).await.status, 200);
    assert_eq!(status(&app, &app.caller).await["onboarded"], true, "the event without metadata was applied");
    assert_eq!(unmatched(&app).await.len(), cases.len() + 1);
}

#[actix_web::test]
async fn the_metadata_moves_a_verified_link_and_a_new_claim_drops_it() {
    let app = spawn_app().await;
    let other = app.create_application(json!({"name": "Other"})).await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    connect(&app, &other, &account).await;
    let t = now();
    deliver_signed(&app, &account_event("evt_a", &account, &app.caller, t, true)).await;
    assert_eq!(status(&app, &app.caller).await["verified"], true);
    // The owner names the other application, which claims the account too: the link moves.
    deliver_signed(&app, &account_event("evt_b", &account, &other, t + 1, false)).await;
    assert_eq!(status(&app, &app.caller).await, unverified(&account));
    let moved = status(&app, &other).await;
    assert_eq!(
        (moved["verified"].clone(), moved["disabled_reason"].clone()),
        (json!(true), json!("requirements.past_due"))
    );
    assert_eq!(count_type(&app, "billing.connected_account.unverified").await, 1);
    // Claiming the same account again changes nothing; claiming another drops the verified link.
    assert_eq!(connect(&app, &other, &account).await.data()["verified"], true);
    let next = new_account();
    assert_eq!(*connect(&app, &other, &next).await.data(), unverified(&next));
    deliver_signed(&app, &account_event("evt_old_claim", &account, &other, t + 2, true)).await;
    assert_eq!(status(&app, &other).await, unverified(&next));
    assert!(unmatched(&app).await.iter().any(|row| row.event_id == "evt_old_claim"));
}

#[actix_web::test]
async fn concurrent_claims_of_one_account_all_succeed_and_only_the_named_one_is_verified() {
    let app = spawn_app().await;
    let mut callers = vec![app.caller.clone()];
    for i in 0..4 {
        callers.push(app.create_application(json!({"name": format!("App {i}")})).await);
    }
    callers.push(app.other_account().await);
    let account = new_account();
    let replies = futures_util::future::join_all(callers.iter().map(|c| connect(&app, c, &account))).await;
    for reply in &replies {
        assert_eq!((reply.status, reply.data().clone()), (200, unverified(&account)), "{:?}", reply.body);
    }
    let named = &callers[3];
    deliver_signed(&app, &account_event("evt_named", &account, named, now(), true)).await;
    for (i, caller) in callers.iter().enumerate() {
        assert_eq!(status(&app, caller).await["verified"], i == 3, "application {i}");
    }
    assert_eq!(status(&app, named).await["onboarded"], true);
}

#[actix_web::test]
async fn before_any_event_the_status_is_all_false_and_null() {
    let app = spawn_app().await;
    let expected = json!({"charges_enabled": false, "details_submitted": false, "disabled_reason": null,
        "onboarded": false, "payouts_enabled": false, "processor_account_id": null, "verified": false});
    assert_eq!(status(&app, &app.caller).await, expected);
}

#[actix_web::test]
async fn a_signed_event_updates_the_status_once_with_one_audit_row() {
    // Arrange
    let app = spawn_app().await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    assert_eq!(status(&app, &app.caller).await["onboarded"], false, "cached before the event");
    let body = account_event("evt_1", &account, &app.caller, now(), true);
    // Act
    let first = deliver_signed(&app, &body).await;
    let again = deliver_signed(&app, &body).await;
    // Assert
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(*first.data(), json!({"received": true}));
    assert_eq!((again.status, again.data().clone()), (200, json!({"received": true})));
    let seen = status(&app, &app.caller).await;
    assert_eq!(seen["onboarded"], true);
    assert_eq!(seen["charges_enabled"], true);
    assert_eq!(seen["details_submitted"], true);
    assert_eq!(seen["disabled_reason"], Value::Null);
    assert_eq!(seen["verified"], true);
    assert_eq!(count_type(&app, "billing.connect_status.updated").await, 1, "a duplicate writes nothing");
    assert_eq!(count_type(&app, "billing.connected_account.verified").await, 1, "verified once");
    let rows = app.get("/v1/audit-logs?type=billing.connect_status.updated").await;
    assert_eq!(rows.data()[0]["actor_kind"], "public");
}

#[actix_web::test]
async fn an_older_event_after_a_newer_one_does_not_regress_the_status() {
    let app = spawn_app().await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    let t = now();
    assert_eq!(deliver_signed(&app, &account_event("evt_new", &account, &app.caller, t, true)).await.status, 200);
    assert_eq!(deliver_signed(&app, &account_event("evt_old", &account, &app.caller, t - 60, false)).await.status, 200);
    let seen = status(&app, &app.caller).await;
    assert_eq!((seen["onboarded"].clone(), seen["disabled_reason"].clone()), (json!(true), Value::Null));
    assert_eq!(count_type(&app, "billing.connect_status.updated").await, 1);
    assert_eq!(count_type(&app, "billing.processor_event.superseded").await, 1);
}

#[actix_web::test]
async fn twenty_concurrent_events_for_one_account_end_with_the_newest() {
    let app = spawn_app().await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    let base = now() - 100;
    // The newest (created base + 19) says onboarded; every other says not.
    let bodies: Vec<String> =
        (0..20).map(|i| account_event(&format!("evt_c{i}"), &account, &app.caller, base + i, i == 19)).collect();
    let mut order: Vec<usize> = (0..20).collect();
    order.reverse();
    order.swap(0, 10);
    let replies = futures_util::future::join_all(order.iter().map(|i| deliver_signed(&app, &bodies[*i]))).await;
    assert!(replies.iter().all(|r| r.status == 200), "{:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
    let seen = status(&app, &app.caller).await;
    assert_eq!(seen["onboarded"], true, "{seen}");
    let applied = count_type(&app, "billing.connect_status.updated").await;
    let superseded = count_type(&app, "billing.processor_event.superseded").await;
    assert_eq!(applied + superseded, 20);
}

#[actix_web::test]
async fn bad_signatures_are_400_and_change_nothing() {
    let app = spawn_app().await;
    let account = new_account();
    connect(&app, &app.caller, &account).await;
    let body = account_event("evt_bad", &account, &app.caller, now(), true);
    let t = now();
    let good = processor_signature::sign(PROCESSOR_SECRET, t, body.as_bytes());
    let v1 = good.split_once(",v1=").unwrap().1.to_string();
    let tampered = body.replace("\"details_submitted\":true", "\"details_submitted\":false");
    assert_ne!(tampered, body);
    let cases: Vec<(&str, String, Option<String>)> = vec![
        ("tampered body", tampered, Some(good.clone())),
        ("old timestamp", body.clone(), Some(processor_signature::sign(PROCESSOR_SECRET, t - 301, body.as_bytes()))),
        // A minute past the tolerance: the server reads its clock seconds
        // after `t` on a loaded machine, and `t + 301` could fall inside.
        ("future timestamp", body.clone(), Some(processor_signature::sign(PROCESSOR_SECRET, t + 360, body.as_bytes()))),
        ("wrong secret", body.clone(), Some(processor_signature::sign("whsec_wrong", t, body.as_bytes()))),
        ("no header", body.clone(), None),
        ("empty header", body.clone(), Some(String::new())),
        ("short header", body.clone(), Some("t=1".into())),
        ("no timestamp", body.clone(), Some(format!("v1={v1}"))),
        ("malformed", body.clone(), Some("garbage".into())),
        ("bad timestamp", body.clone(), Some(format!("t=abc,v1={v1}"))),
        ("bad hex", body.clone(), Some(format!("t={t},v1=xyz"))),
    ];
    for (name, body, signature) in cases {
        let reply = deliver(&app, &body, signature.as_deref()).await;
        assert_eq!((reply.status, reply.error_code()), (400, "invalid_signature"), "{name}: {:?}", reply.body);
    }
    assert_eq!(status(&app, &app.caller).await["onboarded"], false);
    assert_eq!(count_type(&app, "billing.connect_status.updated").await, 0);
    // Two v1 values, one valid: taken.
    let two = format!("t={t},v1={},v1={v1}", "0".repeat(64));
    assert_eq!(deliver(&app, &body, Some(&two)).await.status, 200);
    assert_eq!(status(&app, &app.caller).await["onboarded"], true);
}

#[actix_web::test]
async fn an_event_for_an_unknown_account_is_acknowledged_and_recorded() {
    let app = spawn_app().await;
    let account = new_account();
    let reply = deliver_signed(&app, &account_event("evt_unknown", &account, &app.caller, now(), true)).await;
    assert_eq!((reply.status, reply.data().clone()), (200, json!({"received": true})));
    assert_eq!(
        deliver_signed(&app, &account_event("evt_unknown", &account, &app.caller, now(), true)).await.status,
        200
    );
    let rows = unmatched(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].processor_account_id, account);
    // Another type of event is acknowledged too.
    let other =
        json!({"id": "evt_charge", "type": "charge.succeeded", "created": now(), "data": {"object": {"id": "ch_1"}}});
    assert_eq!(deliver_signed(&app, &other.to_string()).await.status, 200);
    // A signed event without its fields is 422.
    assert_eq!(deliver_signed(&app, &json!({"id": "evt_x"}).to_string()).await.status, 422);
}

#[actix_web::test]
async fn each_application_sees_its_own_connect_status() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    let (mine, theirs) = (new_account(), new_account());
    connect(&app, &app.caller, &mine).await;
    connect(&app, &other, &theirs).await;
    deliver_signed(&app, &account_event("evt_mine", &mine, &app.caller, now(), true)).await;
    let own = status(&app, &app.caller).await;
    let others = status(&app, &other).await;
    assert_eq!((own["onboarded"].clone(), own["processor_account_id"].clone()), (json!(true), json!(mine)));
    assert_eq!(others, unverified(&theirs));
}

#[actix_web::test]
async fn an_event_for_another_regions_application_is_applied_by_that_regions_node() {
    // Arrange: node B holds eu; node A holds us and knows B as its eu peer.
    let TwoRegions { us: node_a, eu_caller, .. } = us_node_with_eu_peer().await;
    let account = new_account();
    assert_eq!(connect(&node_a, &eu_caller, &account).await.status, 200);
    assert_eq!(status(&node_a, &eu_caller).await, unverified(&account), "cached before the event");
    // Act: node A verifies the claim in the catalog and forwards the event to B.
    let reply = deliver_signed(&node_a, &account_event("evt_eu", &account, &eu_caller, now(), true)).await;
    // Assert
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.header("x-gatehouse-region"), Some("eu"));
    let seen = status(&node_a, &eu_caller).await;
    assert_eq!((seen["verified"].clone(), seen["onboarded"].clone()), (json!(true), json!(true)), "{seen}");
    // An event naming nobody is not forwarded: node A records it.
    let bare = event_with_metadata("evt_eu_bare", &account, json!(null), now(), false);
    let reply = deliver_signed(&node_a, &bare).await;
    assert_eq!((reply.status, reply.header("x-gatehouse-region")), (200, None));
    assert_eq!(status(&node_a, &eu_caller).await["onboarded"], true);
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn after_an_event_a_second_node_reads_the_new_status() {
    if std::env::var("GATEHOUSE_TEST_REDIS_URL").is_err() {
        eprintln!("skipped: GATEHOUSE_TEST_REDIS_URL is not set");
        return;
    }
    let a = spawn_app().await;
    let node = Application::build(a.storage.settings.clone()).await.expect("second node");
    let (b, b_state) = (format!("http://127.0.0.1:{}", node.port()), node.state.clone());
    actix_web::rt::spawn(node.run_until_stopped());
    crate::wait::until("the second node's bus to connect", || async { b_state.bus.connected() == Some(true) }).await;
    let account = new_account();
    connect(&a, &a.caller, &account).await;
    let read_b = || async {
        let reply = a.send_at(&b, &a.caller, Method::GET, "/v1/billing/connect/status", None).await;
        reply.data()["onboarded"].as_bool().unwrap()
    };
    assert!(!read_b().await, "B holds the status before the event");
    deliver_signed(&a, &account_event("evt_nodes", &account, &a.caller, now(), true)).await;
    // Half B's 10 s fallback: only the bus could have told it.
    crate::wait::within("B to see the event", Duration::from_secs(5), read_b).await;
    // A restarted node (cold memory) answers from Redis without its databases.
    let cold = Application::build(a.storage.settings.clone()).await.expect("cold node");
    let (c, c_state) = (format!("http://127.0.0.1:{}", cold.port()), cold.state.clone());
    actix_web::rt::spawn(cold.run_until_stopped());
    // Warm the secret key and the directory first; then close the databases.
    assert_eq!(a.send_at(&c, &a.caller, Method::GET, "/v1/api-keys", None).await.status, 200);
    c_state.storage.shard(first_shard("us")).unwrap().conn.clone().close().await.unwrap();
    c_state.storage.catalog.conn.clone().close().await.unwrap();
    let reply = a.send_at(&c, &a.caller, Method::GET, "/v1/billing/connect/status", None).await;
    assert_eq!((reply.status, reply.data()["onboarded"].clone()), (200, json!(true)), "{:?}", reply.body);
}
