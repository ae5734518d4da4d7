//! Governance: separation-of-duties policies (operation 12), the last-owner
//! rule, access reviews (operation 15).
use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::{as_user, public_post, sign_up},
    helpers::{spawn_app, TestApp},
};

/// A user without a password (no hashing), by id.
async fn user(app: &TestApp, email: &str) -> String {
    let created = app.post("/v1/users", &json!({"email": email})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data()["id"].as_str().unwrap().to_string()
}

async fn organization(app: &TestApp, name: &str) -> String {
    let created = app.post("/v1/organizations", &json!({"name": name})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data()["id"].as_str().unwrap().to_string()
}

fn members(organization_id: &str) -> String {
    format!("/v1/organizations/{organization_id}/memberships")
}

async fn grant(app: &TestApp, organization_id: &str, user_id: &str, role: &str) -> crate::helpers::Reply {
    app.post(&members(organization_id), &json!({"user_id": user_id, "role": role})).await
}

async fn roles_of(app: &TestApp, organization_id: &str) -> Vec<(String, String)> {
    let listed = app.get(&members(organization_id)).await;
    let rows = listed.data().as_array().unwrap();
    rows.iter().map(|m| (m["user_id"].as_str().unwrap().into(), m["role"].as_str().unwrap().into())).collect()
}

async fn policy(app: &TestApp, body: Value) -> String {
    let created = app.post("/v1/sod-policies", &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data()["id"].as_str().unwrap().to_string()
}

#[actix_web::test]
async fn an_enforced_policy_refuses_the_second_role_and_an_unenforced_one_reports_it() {
    let app = spawn_app().await;
    let same = app.post("/v1/sod-policies", &json!({"name": "x", "role_a": "payer", "role_b": "payer"})).await;
    assert_eq!((same.status, same.body["error"]["details"][0]["field"].as_str()), (422, Some("role_b")));
    let id = policy(&app, json!({"name": "Pay or approve", "role_a": "payer", "role_b": "approver"})).await;
    let found = app.get(&format!("/v1/sod-policies/{id}")).await;
    assert_eq!((found.data()["enforced"].as_bool(), found.data()["role_b"].as_str()), (Some(true), Some("approver")));

    let ada = user(&app, "ada@example.com").await;
    let (finance, ops) = (organization(&app, "Finance").await, organization(&app, "Ops").await);
    assert_eq!(grant(&app, &finance, &ada, "payer").await.status, 201);
    let refused = grant(&app, &ops, &ada, "approver").await;
    assert_eq!((refused.status, refused.error_code()), (409, "sod_violation"), "{:?}", refused.body);
    assert!(roles_of(&app, &ops).await.is_empty(), "nothing changed");
    // The what-if check says the same and changes nothing.
    let check = app.post("/v1/sod-policies/check", &json!({"user_id": ada, "role": "approver"})).await;
    assert_eq!((check.status, check.data()["allowed"].as_bool()), (200, Some(false)), "{:?}", check.body);
    assert_eq!(check.data()["violations"][0]["id"], id.as_str());
    // Changing the one membership replaces its role: no conflict with itself.
    let replace = json!({"user_id": ada, "role": "approver", "organization_id": finance});
    assert_eq!(app.post("/v1/sod-policies/check", &replace).await.data()["allowed"], true);
    let path = format!("{}/{ada}", members(&finance));
    let changed = app.patch(&path, &json!({"role": "approver"})).await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    // Now the update path is refused too.
    assert_eq!(grant(&app, &ops, &ada, "member").await.status, 201);
    let refused = app.patch(&format!("{}/{ada}", members(&ops)), &json!({"role": "payer"})).await;
    assert_eq!((refused.status, refused.error_code()), (409, "sod_violation"));

    // Operation 12: the whole policy, `enforced` kept when left out, then turned off.
    let patch = json!({"name": "Pay or approve (audit only)", "role_a": "payer", "role_b": "approver"});
    let updated = app.patch(&format!("/v1/sod-policies/{id}"), &patch).await;
    assert_eq!((updated.status, updated.data()["enforced"].as_bool()), (200, Some(true)), "{:?}", updated.body);
    let patch =
        json!({"name": "Pay or approve (audit only)", "role_a": "payer", "role_b": "approver", "enforced": false});
    assert_eq!(app.patch(&format!("/v1/sod-policies/{id}"), &patch).await.data()["enforced"], false);
    let allowed = app.patch(&format!("{}/{ada}", members(&ops)), &json!({"role": "payer"})).await;
    assert_eq!(allowed.status, 200, "{:?}", allowed.body);
    let violations = app.get(&format!("/v1/sod-policies/{id}/violations")).await;
    assert_eq!(violations.status, 200);
    assert_eq!(
        violations.data(),
        &json!([{"user_id": ada, "role_a_organization_ids": [ops], "role_b_organization_ids": [finance]}])
    );
    let export = app.get("/v1/audit-logs/export?type=sod&limit=1000").await;
    let detected = export.data().as_array().unwrap().iter().find(|r| r["type"] == "sod.violation_detected").unwrap();
    assert_eq!(
        (detected["data"]["policy_id"].as_str(), detected["data"]["role"].as_str()),
        (Some(&*id), Some("payer"))
    );

    let missing = format!("/v1/sod-policies/{}", uuid::Uuid::now_v7());
    assert_eq!(app.patch(&missing, &patch).await.status, 404);
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/sod-policies/{id}"), None).await.status, 200);
    assert_eq!(app.get(&format!("/v1/sod-policies/{id}")).await.status, 404);
    let types = app.audit_types().await;
    for expected in ["sod_policy.created", "sod_policy.updated", "sod_policy.deleted", "sod.violation_detected"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn another_application_cannot_see_or_change_a_policy() {
    let app = spawn_app().await;
    let id = policy(&app, json!({"name": "p", "role_a": "a", "role_b": "b"})).await;
    let other = app.other_account().await;
    let path = format!("/v1/sod-policies/{id}");
    assert_eq!(app.send(&other, Method::GET, &path, None).await.status, 404);
    let body = json!({"name": "mine", "role_a": "a", "role_b": "c"});
    assert_eq!(app.send(&other, Method::PATCH, &path, Some(&body)).await.status, 404);
    assert_eq!(app.send(&other, Method::DELETE, &path, None).await.status, 404);
    assert_eq!(app.send(&other, Method::GET, &format!("{path}/violations"), None).await.status, 404);
    assert_eq!(app.get(&path).await.data()["role_b"], "b");
}

#[actix_web::test]
async fn concurrent_grants_that_together_break_an_enforced_policy_let_exactly_one_through() {
    let app = spawn_app().await;
    policy(&app, json!({"name": "p", "role_a": "payer", "role_b": "approver"})).await;
    let (finance, ops) = (organization(&app, "Finance").await, organization(&app, "Ops").await);
    for round in 0..8 {
        let ada = user(&app, &format!("ada{round}@example.com")).await;
        let (a, b) = tokio::join!(grant(&app, &finance, &ada, "payer"), grant(&app, &ops, &ada, "approver"));
        let mut statuses = [a.status, b.status];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}: {:?} {:?}", a.body, b.body);
        assert!([a.error_code(), b.error_code()].contains(&"sod_violation"));
    }
}

#[actix_web::test]
async fn an_organization_never_loses_its_last_owner() {
    let app = spawn_app().await;
    let org = organization(&app, "Acme").await;
    let (ada, bob) = (user(&app, "ada@example.com").await, user(&app, "bob@example.com").await);
    assert_eq!(grant(&app, &org, &ada, "owner").await.status, 201);
    let ada_path = format!("{}/{ada}", members(&org));
    let removed = app.send(&app.caller, Method::DELETE, &ada_path, None).await;
    assert_eq!((removed.status, removed.error_code()), (409, "last_owner"));
    let demoted = app.patch(&ada_path, &json!({"role": "admin"})).await;
    assert_eq!((demoted.status, demoted.error_code()), (409, "last_owner"));
    assert_eq!(roles_of(&app, &org).await, [(ada.clone(), "owner".to_string())]);

    assert_eq!(grant(&app, &org, &bob, "owner").await.status, 201);
    assert_eq!(app.patch(&ada_path, &json!({"role": "admin"})).await.status, 200);
    assert_eq!(app.patch(&ada_path, &json!({"role": "owner"})).await.status, 200);
    // Two owners removed at once: one goes, the other stays.
    let bob_path = format!("{}/{bob}", members(&org));
    let (a, b) = tokio::join!(
        app.send(&app.caller, Method::DELETE, &ada_path, None),
        app.send(&app.caller, Method::DELETE, &bob_path, None)
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{:?} {:?}", a.body, b.body);
    let left = roles_of(&app, &org).await;
    assert_eq!((left.len(), left[0].1.as_str()), (1, "owner"));
}

#[actix_web::test]
async fn an_access_review_snapshots_memberships_and_a_revocation_ends_access_at_once() {
    let app = spawn_app().await;
    let org = organization(&app, "Acme").await;
    let other_org = organization(&app, "Elsewhere").await;
    let owner = user(&app, "owner@example.com").await;
    let signed_up = sign_up(&app, &app.caller, "mia@example.com").await;
    let mia = signed_up["user"]["id"].as_str().unwrap().to_string();
    let ben = user(&app, "ben@example.com").await;
    for (id, role) in [(&owner, "owner"), (&mia, "member"), (&ben, "member")] {
        assert_eq!(grant(&app, &org, id, role).await.status, 201);
    }
    assert_eq!(grant(&app, &other_org, &ben, "member").await.status, 201);
    let mia_caller = as_user(&app.caller, signed_up["access_token"].as_str().unwrap());
    let activated = app.send(&mia_caller, Method::POST, &format!("/v1/auth/organizations/{org}/activate"), None).await;
    assert_eq!(activated.status, 200);
    let mia_caller = as_user(&app.caller, activated.data()["access_token"].as_str().unwrap());

    let unknown = app.post("/v1/access-reviews", &json!({"name": "Q4", "organization_id": uuid::Uuid::now_v7()})).await;
    assert_eq!(unknown.status, 404);
    let created = app.post("/v1/access-reviews", &json!({"name": "Q4 Acme", "organization_id": org})).await;
    assert_eq!((created.status, created.data()["item_count"].as_i64()), (201, Some(3)), "{:?}", created.body);
    assert_eq!(created.data()["status"], "open");
    let review = created.data()["id"].as_str().unwrap().to_string();
    let everyone = app.post("/v1/access-reviews", &json!({"name": "Q4 all"})).await;
    assert_eq!(everyone.data()["item_count"], 4);

    let items = app.get(&format!("/v1/access-reviews/{review}/items")).await;
    let items = items.data().as_array().unwrap().clone();
    let item_of = |user_id: &str| items.iter().find(|i| i["user_id"] == user_id).unwrap()["id"].as_str().unwrap();
    assert!(items.iter().all(|i| i["decision"].is_null() && i["organization_id"] == org.as_str()));
    let decide = |item: &str| format!("/v1/access-review-items/{item}/decide");

    // Revoked: the membership goes and Mia's session with the organization active ends.
    assert_eq!(app.post(&decide(item_of(&mia)), &json!({"decision": "maybe"})).await.status, 422);
    let decided = app.post(&decide(item_of(&mia)), &json!({"decision": "revoked"})).await;
    assert_eq!(decided.status, 200, "{:?}", decided.body);
    assert_eq!(
        (decided.data()["decision"].as_str(), decided.data()["role"].as_str()),
        (Some("revoked"), Some("member"))
    );
    assert!(decided.data()["decided_at"].is_string() && decided.data()["decided_by"].is_string());
    assert!(!roles_of(&app, &org).await.iter().any(|(id, _)| *id == mia));
    assert_eq!(app.send(&mia_caller, Method::GET, "/v1/auth/me", None).await.status, 401);
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": signed_up["refresh_token"]})).await;
    assert_eq!(refreshed.status, 401, "the session is revoked");
    let again = app.post(&decide(item_of(&mia)), &json!({"decision": "approved"})).await;
    assert_eq!((again.status, again.error_code()), (409, "already_decided"));

    // Changed since the snapshot: decided against the membership as it is now.
    assert_eq!(app.patch(&format!("{}/{ben}", members(&org)), &json!({"role": "admin"})).await.status, 200);
    assert_eq!(app.post(&decide(item_of(&ben)), &json!({"decision": "revoked"})).await.status, 200);
    assert!(!roles_of(&app, &org).await.iter().any(|(id, _)| *id == ben));
    assert_eq!(roles_of(&app, &other_org).await.len(), 1, "another organization's membership stays");

    // The last owner: refused, the item stays pending; closing approves it.
    let last = app.post(&decide(item_of(&owner)), &json!({"decision": "revoked"})).await;
    assert_eq!((last.status, last.error_code()), (409, "last_owner"));
    let other = app.other_account().await;
    let foreign =
        app.send(&other, Method::POST, &decide(item_of(&owner)), Some(&json!({"decision": "approved"}))).await;
    assert_eq!(foreign.status, 404);
    assert_eq!(app.send(&other, Method::GET, &format!("/v1/access-reviews/{review}"), None).await.status, 404);
    let closed = app.post(&format!("/v1/access-reviews/{review}/close"), &json!({})).await;
    assert_eq!((closed.status, closed.data()["status"].as_str()), (200, Some("closed")), "{:?}", closed.body);
    assert!(closed.data()["closed_at"].is_string());
    let read = app.get(&format!("/v1/access-reviews/{review}")).await;
    assert_eq!((read.status, read.data()["status"].as_str()), (200, Some("closed")), "{:?}", read.body);
    let items = app.get(&format!("/v1/access-reviews/{review}/items")).await;
    let owner_item = items.data().as_array().unwrap().iter().find(|i| i["user_id"] == owner.as_str()).unwrap().clone();
    assert_eq!(owner_item["decision"], "approved");
    assert_eq!(roles_of(&app, &org).await, [(owner.clone(), "owner".to_string())]);
    let twice = app.post(&format!("/v1/access-reviews/{review}/close"), &json!({})).await;
    assert_eq!((twice.status, twice.error_code()), (409, "already_decided"));

    // Closing with `revoked` removes what is left (the other organization's member).
    let all = everyone.data()["id"].as_str().unwrap();
    let last_owner = app.post(&format!("/v1/access-reviews/{all}/close"), &json!({"remaining": "revoked"})).await;
    assert_eq!(last_owner.error_code(), "last_owner", "the owner of Acme is in this review too");
    let everyone_items = app.get(&format!("/v1/access-reviews/{all}/items")).await;
    let owner_item = everyone_items.data().as_array().unwrap().iter().find(|i| i["user_id"] == owner.as_str()).unwrap();
    let owner_decided = app.post(&decide(owner_item["id"].as_str().unwrap()), &json!({"decision": "approved"})).await;
    assert_eq!(owner_decided.status, 200);
    let closed = app.post(&format!("/v1/access-reviews/{all}/close"), &json!({"remaining": "revoked"})).await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    assert!(roles_of(&app, &other_org).await.is_empty());
    let listed = app.get("/v1/access-reviews").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 2);
    let types = app.audit_types().await;
    for expected in ["access_review.created", "access_review.item.decided", "access_review.closed", "session.revoked"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}
