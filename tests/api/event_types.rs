//! Event types (contract §8, issue 35 item 10): each operation whose type
//! was named otherwise emits the contract's type, in the audit log and to a
//! webhook whose filter names the contract's families; the old names are
//! gone. The list itself, and `docs/reference/events.md` generated from it, are
//! tested in `events::catalog`.
use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::{as_user, sign_up},
    helpers::{spawn_app, TestApp},
    invitations::{accept, code_sent_to, invite, member},
};

/// The audit rows of exactly `event_type`.
async fn rows_of(app: &TestApp, event_type: &str) -> Vec<Value> {
    let rows = app.get(&format!("/v1/audit-logs/export?type={event_type}&limit=1000")).await;
    assert_eq!(rows.status, 200, "{:?}", rows.body);
    rows.data().as_array().unwrap().iter().filter(|r| r["type"] == event_type).cloned().collect()
}

/// `event_type` was emitted once, for `aggregate_id` when given.
async fn emitted_once(app: &TestApp, event_type: &str, aggregate_id: Option<&str>) {
    let rows = rows_of(app, event_type).await;
    assert_eq!(rows.len(), 1, "one `{event_type}` row: {rows:?}");
    if let Some(id) = aggregate_id {
        assert_eq!(rows[0]["aggregate_id"], id, "`{event_type}` names its resource");
    }
}

#[actix_web::test]
async fn each_operation_emits_its_contract_event_type_to_the_audit_log_and_to_a_family_filter() {
    // Arrange: a webhook filtering by the contract's families (its
    // deliveries list every message written for it, delivered or not), an
    // organization with an owner acting in it, and a feature.
    let app = spawn_app().await;
    let families = ["team.invitation", "sso_domain", "access_review.item", "entitlement.override"];
    let url = "https://hooks.example.com/events";
    let webhook = app.post("/v1/webhooks", &json!({"url": url, "event_types": families})).await;
    assert_eq!(webhook.status, 201, "{:?}", webhook.body);
    let webhook_id = webhook.data()["id"].as_str().unwrap().to_string();
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@acme.test", "owner").await;
    let feature = json!({"kind": "limit", "default_value": 3});
    assert_eq!(app.send(&app.caller, Method::PUT, "/v1/features/seats", Some(&feature)).await.status, 200);

    // Act and assert, one operation at a time.
    // Invite: `team.invitation.created`.
    let invited = invite(&app, &owner, "mia@example.com", "member").await;
    assert_eq!(invited.status, 201, "{:?}", invited.body);
    emitted_once(&app, "team.invitation.created", Some(&org)).await;

    // Accept: `team.invitation.accepted`.
    let code = code_sent_to(&app, "mia@example.com").await;
    let mia = sign_up(&app, &app.caller, "mia@example.com").await;
    let mia_id = mia["user"]["id"].as_str().unwrap().to_string();
    let mia = as_user(&app.caller, mia["access_token"].as_str().unwrap());
    let accepted = accept(&app, &mia, &code).await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
    emitted_once(&app, "team.invitation.accepted", Some(&org)).await;

    // Claim a domain: `sso_domain.created`.
    let claimed =
        app.send(&owner, Method::POST, "/v1/dashboard/sso/domains", Some(&json!({"domain": "acme.test"}))).await;
    assert_eq!(claimed.status, 201, "{:?}", claimed.body);
    emitted_once(&app, "sso_domain.created", Some(&org)).await;

    // Decide an access review's item: `access_review.item.decided`.
    let review = app.post("/v1/access-reviews", &json!({"name": "Q4", "organization_id": org})).await;
    assert_eq!(review.status, 201, "{:?}", review.body);
    let items = app.get(&format!("/v1/access-reviews/{}/items", review.data()["id"].as_str().unwrap())).await;
    let items = items.data().as_array().unwrap().clone();
    let item = items.iter().find(|i| i["user_id"] == mia_id.as_str()).expect("Mia's membership is reviewed");
    let item_id = item["id"].as_str().unwrap();
    let decided =
        app.post(&format!("/v1/access-review-items/{item_id}/decide"), &json!({"decision": "approved"})).await;
    assert_eq!(decided.status, 200, "{:?}", decided.body);
    emitted_once(&app, "access_review.item.decided", Some(item_id)).await;

    // Put an organization's override: `entitlement.override.updated`.
    let overrides = format!("/v1/organizations/{org}/entitlement-overrides/seats");
    let overridden = app.send(&app.caller, Method::PUT, &overrides, Some(&json!({"value": 10}))).await;
    assert_eq!(overridden.status, 200, "{:?}", overridden.body);
    emitted_once(&app, "entitlement.override.updated", Some(&org)).await;

    // The names of before are gone from the log.
    let types = app.audit_types().await;
    for old in [
        "access_review.item_decided",
        "invitation.created",
        "invitation.accepted",
        "sso_domain.claimed",
        "organization.entitlement_overridden",
    ] {
        assert!(!types.iter().any(|t| t == old), "`{old}` is still emitted");
    }

    // A customer filtering by the contract's families receives each of them.
    let deliveries = app.get(&format!("/v1/webhooks/{webhook_id}/deliveries")).await;
    assert_eq!(deliveries.status, 200, "{:?}", deliveries.body);
    let received: BTreeSet<_> =
        deliveries.data().as_array().unwrap().iter().map(|m| m["event_type"].as_str().unwrap().to_string()).collect();
    let expected: BTreeSet<_> = [
        "access_review.item.decided",
        "entitlement.override.updated",
        "sso_domain.created",
        "team.invitation.accepted",
        "team.invitation.created",
    ]
    .map(str::to_string)
    .into();
    assert_eq!(received, expected);
}
