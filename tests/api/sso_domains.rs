//! SSO domains (operation 20): claims by owners and admins of the active
//! organization, verification against a real DNS server (dnsmasq on
//! loopback): a missing record, a wrong value, the right one, the server
//! gone; consumer domains refused; one verifier per domain; auto-join once
//! the user has proven the address (never at sign-up), with no role above
//! what the domain's claimer may grant.
use reqwest::Method;
use sea_orm::ConnectionTrait;
use serde_json::json;

use crate::{
    dns::{self, Dnsmasq},
    end_users::{as_user, sign_up},
    helpers::{first_shard, spawn_with, Caller, Reply, TestApp},
    invitations::member,
};

async fn claim(app: &TestApp, caller: &Caller, body: serde_json::Value) -> Reply {
    app.send(caller, Method::POST, "/v1/dashboard/sso/domains", Some(&body)).await
}

/// Signs up `email` and proves it: the data of the sign-up.
async fn proven_sign_up(app: &TestApp, email: &str) -> serde_json::Value {
    let signed_up = sign_up(app, &app.caller, email).await;
    prove(app, email).await;
    signed_up
}

/// Proves `email` with the code the outbox holds for it.
async fn prove(app: &TestApp, email: &str) {
    let path = format!("/v1/applications/{}/providers/messaging/outbox", app.caller.application_id);
    let code = crate::wait::until_some(&format!("a verification code to {email}"), || async {
        let messages = app.get(&path).await.data().as_array().unwrap().clone();
        let sent =
            |m: &&serde_json::Value| m["recipient"] == email && m["subject"].as_str().unwrap().starts_with("Verify");
        messages.iter().find(sent).map(|m| m["body"].as_str().unwrap().split("\n\n").nth(1).unwrap().trim().to_string())
    })
    .await;
    let proven = crate::end_users::public_post(
        app,
        &app.caller,
        "/v1/auth/email/verify",
        &json!({"email": email, "code": code}),
    )
    .await;
    assert_eq!(proven.status, 200, "{:?}", proven.body);
}

async fn verify(app: &TestApp, caller: &Caller, id: &str) -> Reply {
    app.send(caller, Method::POST, &format!("/v1/dashboard/sso/domains/{id}/verify"), None).await
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_dns),
    ignore = "needs dnsmasq: apt-get install dnsmasq-base, then GATEHOUSE_TEST_REQUIRE_DNS=1 cargo test"
)]
async fn a_domain_is_claimed_verified_by_its_txt_record_and_used_for_auto_join() {
    if !dns::available() {
        return;
    }
    let resolver = dns::free_address();
    let app = spawn_with(|s| s.dns.nameservers = vec![resolver]).await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@acme.test", "owner").await;
    let (admin, _) = member(&app, &org, "admin@acme.test", "admin").await;
    let (plain, _) = member(&app, &org, "plain@acme.test", "member").await;

    let refused = claim(&app, &plain, json!({"domain": "acme.test"})).await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"));
    let fresh = sign_up(&app, &app.caller, "fresh@example.com").await;
    let fresh = as_user(&app.caller, fresh["access_token"].as_str().unwrap());
    assert_eq!(claim(&app, &fresh, json!({"domain": "acme.test"})).await.error_code(), "no_active_organization");
    for bad in ["gmail.com", "Outlook.com.", "not a domain", "localhost", "-x.test", "1.2.3.4"] {
        let refused = claim(&app, &owner, json!({"domain": bad})).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{bad}: {:?}", refused.body);
    }
    let claimed = claim(&app, &owner, json!({"domain": "Acme.TEST."})).await;
    assert_eq!(claimed.status, 201, "{:?}", claimed.body);
    let data = claimed.data().clone();
    assert_eq!((data["domain"].as_str(), data["status"].as_str()), (Some("acme.test"), Some("pending")));
    assert_eq!(data["verification"]["type"], "TXT");
    let (name, value) =
        (data["verification"]["name"].as_str().unwrap(), data["verification"]["value"].as_str().unwrap());
    assert_eq!(name, "_gatehouse-challenge.acme.test");
    let id = data["id"].as_str().unwrap();
    assert_eq!(claim(&app, &admin, json!({"domain": "acme.test"})).await.error_code(), "domain_taken");

    // No record (NXDOMAIN), then a wrong value, then the right one.
    let server = Dnsmasq::start(resolver, &[("_gatehouse-challenge.other.test", "x")]);
    let missing = verify(&app, &admin, id).await;
    assert_eq!((missing.status, missing.error_code()), (422, "domain_verification_failed"), "{:?}", missing.body);
    assert!(missing.body["error"]["message"].as_str().unwrap().contains("no TXT record"));
    drop(server);
    let server = Dnsmasq::start(resolver, &[(name, "gatehouse-domain-verification=wrong")]);
    let wrong = verify(&app, &admin, id).await;
    assert_eq!(wrong.error_code(), "domain_verification_failed");
    assert!(wrong.body["error"]["message"].as_str().unwrap().contains("1 other TXT records"));
    drop(server);
    let server = Dnsmasq::start(resolver, &[(name, "unrelated"), (name, value)]);
    let verified = verify(&app, &admin, id).await;
    assert_eq!((verified.status, verified.data()["status"].as_str()), (200, Some("verified")), "{:?}", verified.body);
    assert!(verified.data()["verified_at"].is_string());
    assert_eq!(verify(&app, &admin, id).await.status, 200, "verifying again changes nothing");

    // Another organization of the application cannot claim it, nor see or delete ours.
    let rival_org =
        app.post("/v1/organizations", &json!({"name": "Rival"})).await.data()["id"].as_str().unwrap().to_string();
    let (rival, _) = member(&app, &rival_org, "owner@rival.test", "owner").await;
    assert_eq!(claim(&app, &rival, json!({"domain": "acme.test"})).await.error_code(), "domain_taken");
    let path = format!("/v1/dashboard/sso/domains/{id}");
    assert_eq!(app.send(&rival, Method::DELETE, &path, None).await.status, 404);
    assert_eq!(verify(&app, &rival, id).await.status, 404);
    assert!(app
        .send(&rival, Method::GET, "/v1/dashboard/sso/domains", None)
        .await
        .data()
        .as_array()
        .unwrap()
        .is_empty());

    // Auto-join: a new user at a verified domain that asks for it joins with its role.
    let beta = claim(&app, &owner, json!({"domain": "beta.test", "auto_join_role": "member"})).await;
    let beta = beta.data().clone();
    drop(server);
    let beta_name = beta["verification"]["name"].as_str().unwrap();
    let _server = Dnsmasq::start(resolver, &[(beta_name, beta["verification"]["value"].as_str().unwrap())]);
    assert_eq!(verify(&app, &owner, beta["id"].as_str().unwrap()).await.status, 200);
    // Not at sign-up: anyone may type an address at the domain.
    let joined = sign_up(&app, &app.caller, "new@beta.test").await;
    let members = app.get(&format!("/v1/organizations/{org}/memberships")).await.data().as_array().unwrap().len();
    assert_eq!(members, 3, "an unproven address joins nothing");
    prove(&app, "new@beta.test").await;
    let memberships = app.get(&format!("/v1/organizations/{org}/memberships")).await;
    let roles: Vec<_> =
        memberships.data().as_array().unwrap().iter().filter(|m| m["user_id"] == joined["user"]["id"]).collect();
    assert_eq!((roles.len(), roles[0]["role"].as_str()), (1, Some("member")));
    proven_sign_up(&app, "someone@acme.test").await;
    assert_eq!(
        app.get(&format!("/v1/organizations/{org}/memberships")).await.data().as_array().unwrap().len(),
        4,
        "acme.test asked for no auto-join"
    );

    let listed = app.send(&admin, Method::GET, "/v1/dashboard/sso/domains", None).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 2);
    let deleted = app.send(&admin, Method::DELETE, &path, None).await;
    assert_eq!((deleted.status, deleted.data()), (200, &json!({})));
    assert_eq!(app.send(&admin, Method::DELETE, &path, None).await.status, 404);
    let types = app.audit_types().await;
    for expected in ["sso_domain.created", "sso_domain.verified", "sso_domain.deleted"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn a_dns_server_that_does_not_answer_is_a_503_and_changes_nothing() {
    let resolver = dns::free_address();
    let app = spawn_with(|s| s.dns.nameservers = vec![resolver]).await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@acme.test", "owner").await;
    let claimed = claim(&app, &owner, json!({"domain": "acme.test"})).await;
    let id = claimed.data()["id"].as_str().unwrap();
    let down = verify(&app, &owner, id).await;
    assert_eq!((down.status, down.error_code()), (503, "unavailable"), "{:?}", down.body);
    let listed = app.send(&owner, Method::GET, "/v1/dashboard/sso/domains", None).await;
    assert_eq!(listed.data()[0]["status"], "pending");
}

/// An auto-join role is a grant: an admin may name only `member`, as in an
/// invitation; an owner may name any role. (Before the fix an admin's
/// claim with `owner` was 201, and a sign-up at the domain became an owner.)
#[actix_web::test]
async fn an_admin_may_claim_a_domain_only_with_a_role_an_admin_may_invite() {
    let app = spawn_with(|_| {}).await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@acme.test", "owner").await;
    let (admin, _) = member(&app, &org, "admin@acme.test", "admin").await;

    for role in ["owner", "admin", "auditor"] {
        let refused = claim(&app, &admin, json!({"domain": "acme.test", "auto_join_role": role})).await;
        assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"), "{role}: {:?}", refused.body);
        let invited = app
            .send(&admin, Method::POST, "/v1/dashboard/team", Some(&json!({"email": "x@acme.test", "role": role})))
            .await;
        assert_eq!((invited.status, invited.error_code()), (403, "insufficient_role"), "the same rule as inviting");
    }
    assert!(app
        .send(&owner, Method::GET, "/v1/dashboard/sso/domains", None)
        .await
        .data()
        .as_array()
        .unwrap()
        .is_empty());
    let as_member = claim(&app, &admin, json!({"domain": "acme.test", "auto_join_role": "member"})).await;
    assert_eq!(as_member.status, 201, "{:?}", as_member.body);
    let without_role = claim(&app, &admin, json!({"domain": "beta.test"})).await;
    assert_eq!(without_role.status, 201, "{:?}", without_role.body);
    let by_owner = claim(&app, &owner, json!({"domain": "gamma.test", "auto_join_role": "owner"})).await;
    assert_eq!((by_owner.status, by_owner.data()["auto_join_role"].as_str()), (201, Some("owner")));
}

/// Marks every claimed domain verified, as a published TXT record would
/// (no DNS server needed), and sets a column on `domain`'s row.
async fn verified_with(app: &TestApp, domain: &str, set: &str) {
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    shard.execute_unprepared("UPDATE sso_domains SET status = 'verified'").await.unwrap();
    if !set.is_empty() {
        shard.execute_unprepared(&format!("UPDATE sso_domains SET {set} WHERE domain = '{domain}'")).await.unwrap();
    }
}

async fn role_in(app: &TestApp, org: &str, user_id: &serde_json::Value) -> Option<String> {
    let memberships = app.get(&format!("/v1/organizations/{org}/memberships")).await;
    let found = memberships.data().as_array().unwrap().iter().find(|m| &m["user_id"] == user_id).cloned();
    found.map(|m| m["role"].as_str().unwrap().to_string())
}

/// At each auto-join the role is checked again against its claimer as they
/// are now: a claimer demoted since grants no more than an admin may, and a
/// domain stored before the claimer was recorded (an admin's `owner` claim
/// from before the fix) grants `member` at most.
#[actix_web::test]
async fn auto_join_grants_no_role_above_what_the_domains_claimer_may_grant_now() {
    let app = spawn_with(|_| {}).await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, owner_id) = member(&app, &org, "owner@acme.test", "owner").await;
    member(&app, &org, "second-owner@acme.test", "owner").await;
    let claimed = claim(&app, &owner, json!({"domain": "acme.test", "auto_join_role": "admin"})).await;
    assert_eq!(claimed.status, 201, "{:?}", claimed.body);
    let legacy = claim(&app, &owner, json!({"domain": "legacy.test", "auto_join_role": "member"})).await;
    assert_eq!(legacy.status, 201, "{:?}", legacy.body);
    let legacy_member = claim(&app, &owner, json!({"domain": "old.test", "auto_join_role": "member"})).await;
    assert_eq!(legacy_member.status, 201, "{:?}", legacy_member.body);
    verified_with(&app, "legacy.test", "auto_join_role = 'owner', claimed_by = NULL").await;
    verified_with(&app, "old.test", "claimed_by = NULL").await;

    let joined = proven_sign_up(&app, "first@acme.test").await;
    assert_eq!(role_in(&app, &org, &joined["user"]["id"]).await.as_deref(), Some("admin"), "the owner may grant it");
    let before_fix = proven_sign_up(&app, "new@legacy.test").await;
    assert_eq!(role_in(&app, &org, &before_fix["user"]["id"]).await, None, "no owner from an unknown claimer");
    let old = proven_sign_up(&app, "new@old.test").await;
    assert_eq!(role_in(&app, &org, &old["user"]["id"]).await.as_deref(), Some("member"));

    let demoted =
        app.patch(&format!("/v1/organizations/{org}/memberships/{owner_id}"), &json!({"role": "member"})).await;
    assert_eq!(demoted.status, 200, "{:?}", demoted.body);
    let after = proven_sign_up(&app, "second@acme.test").await;
    assert_eq!(
        role_in(&app, &org, &after["user"]["id"]).await,
        None,
        "demoted, the claimer grants no more than an admin may"
    );
    let refusals = app.audit_types().await.iter().filter(|t| *t == "sso_domain.auto_join_refused").count();
    assert_eq!(refusals, 2);
}
