//! Team invitations (operation 13): the caller's active organization and
//! role, the email through the application's provider (the development
//! outbox here), acceptance by the invited user only, separation of duties
//! on acceptance, revocation, expiry.

use reqwest::Method;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, IntoActiveModel};
use serde_json::{json, Value};

use crate::{
    end_users::{as_user, public_post, sign_up},
    helpers::{first_shard, spawn_app, Caller, Reply, TestApp},
};

/// A signed-up user with `role` in `org`, acting with that organization active.
pub async fn member(app: &TestApp, org: &str, email: &str, role: &str) -> (Caller, String) {
    let data = sign_up(app, &app.caller, email).await;
    let user_id = data["user"]["id"].as_str().unwrap().to_string();
    let added =
        app.post(&format!("/v1/organizations/{org}/memberships"), &json!({"user_id": user_id, "role": role})).await;
    assert_eq!(added.status, 201, "{:?}", added.body);
    let user = as_user(&app.caller, data["access_token"].as_str().unwrap());
    let activated = app.send(&user, Method::POST, &format!("/v1/auth/organizations/{org}/activate"), None).await;
    (as_user(&app.caller, activated.data()["access_token"].as_str().unwrap()), user_id)
}

pub async fn invite(app: &TestApp, caller: &Caller, email: &str, role: &str) -> Reply {
    app.send(caller, Method::POST, "/v1/dashboard/team", Some(&json!({"email": email, "role": role}))).await
}

/// The code of the newest invitation email to `to`, once recorded.
pub async fn code_sent_to(app: &TestApp, to: &str) -> String {
    let path = format!("/v1/applications/{}/providers/messaging/outbox", app.caller.application_id);
    crate::wait::until_some(&format!("an invitation email to {to}"), || async {
        let messages = app.get(&path).await.data().as_array().unwrap().clone();
        let invitation = |m: &&Value| m["recipient"] == to && m["subject"].as_str().unwrap().starts_with("Join ");
        let body = messages.iter().find(invitation)?["body"].as_str().unwrap().to_string();
        Some(body.split("\n\n").nth(2).unwrap().trim().to_string())
    })
    .await
}

pub async fn accept(app: &TestApp, caller: &Caller, token: &str) -> Reply {
    app.send(caller, Method::POST, "/v1/auth/invitations/accept", Some(&json!({"token": token}))).await
}

#[actix_web::test]
async fn owners_invite_any_role_admins_only_members_and_the_invited_user_accepts() {
    let app = spawn_app().await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, owner_id) = member(&app, &org, "owner@example.com", "owner").await;
    let (admin, _) = member(&app, &org, "admin@example.com", "admin").await;
    let (plain, _) = member(&app, &org, "plain@example.com", "member").await;

    // No active organization.
    let fresh = sign_up(&app, &app.caller, "fresh@example.com").await;
    let fresh_caller = as_user(&app.caller, fresh["access_token"].as_str().unwrap());
    let none = invite(&app, &fresh_caller, "x@example.com", "member").await;
    assert_eq!((none.status, none.error_code()), (403, "no_active_organization"));
    // The role matrix.
    let refused = invite(&app, &plain, "x@example.com", "member").await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"));
    let refused = invite(&app, &admin, "x@example.com", "admin").await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"));
    let by_admin = invite(&app, &admin, "Mia@Example.com", "member").await;
    assert_eq!(by_admin.status, 201, "{:?}", by_admin.body);
    let by_owner = invite(&app, &owner, "ben@example.com", "admin").await;
    assert_eq!(by_owner.status, 201, "{:?}", by_owner.body);
    let data = by_owner.data();
    assert_eq!(
        (data["status"].as_str(), data["role"].as_str(), data["invited_by"].as_str()),
        (Some("pending"), Some("admin"), Some(&*owner_id))
    );
    let days = (chrono::DateTime::parse_from_rfc3339(data["expires_at"].as_str().unwrap()).unwrap()
        - chrono::DateTime::parse_from_rfc3339(data["created_at"].as_str().unwrap()).unwrap())
    .num_days();
    assert_eq!(days, 7);
    // Conflicts.
    let again = invite(&app, &owner, "mia@example.com", "member").await;
    assert_eq!((again.status, again.error_code()), (409, "already_invited"));
    let member_already = invite(&app, &owner, "plain@example.com", "member").await;
    assert_eq!((member_already.status, member_already.error_code()), (409, "already_member"));
    let listed = app.send(&admin, Method::GET, "/v1/dashboard/team/invitations", None).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 2);
    assert_eq!(app.send(&plain, Method::GET, "/v1/dashboard/team/invitations", None).await.status, 403);

    // Mia accepts; the email was normalised; someone else cannot use her code.
    let code = code_sent_to(&app, "mia@example.com").await;
    let ben = sign_up(&app, &app.caller, "ben@example.com").await;
    let ben_caller = as_user(&app.caller, ben["access_token"].as_str().unwrap());
    let wrong_user = accept(&app, &ben_caller, &code).await;
    assert_eq!((wrong_user.status, wrong_user.error_code()), (403, "invitation_email_mismatch"));
    let mia = sign_up(&app, &app.caller, "mia@example.com").await;
    let mia_caller = as_user(&app.caller, mia["access_token"].as_str().unwrap());
    let joined = accept(&app, &mia_caller, &code).await;
    assert_eq!(joined.status, 200, "{:?}", joined.body);
    assert_eq!(
        (joined.data()["organization_id"].as_str(), joined.data()["role"].as_str()),
        (Some(&*org), Some("member"))
    );
    let mia_user = app.get(&format!("/v1/users/{}", mia["user"]["id"].as_str().unwrap())).await;
    assert!(mia_user.data()["email_verified_at"].is_string(), "the code proved the address: {:?}", mia_user.body);
    let twice = accept(&app, &mia_caller, &code).await;
    assert_eq!((twice.status, twice.error_code()), (400, "invalid_grant"));
    assert_eq!(accept(&app, &mia_caller, "not-a-code").await.error_code(), "invalid_grant");

    // Revoked: Ben's code no longer works.
    let ben_invitation = data["id"].as_str().unwrap();
    let revoke = format!("/v1/dashboard/team/invitations/{ben_invitation}/revoke");
    assert_eq!(app.send(&plain, Method::POST, &revoke, None).await.status, 403);
    let revoked = app.send(&admin, Method::POST, &revoke, None).await;
    assert_eq!((revoked.status, revoked.data()["status"].as_str()), (200, Some("revoked")), "{:?}", revoked.body);
    assert_eq!(app.send(&admin, Method::POST, &revoke, None).await.status, 409);
    let ben_code = code_sent_to(&app, "ben@example.com").await;
    assert_eq!(accept(&app, &ben_caller, &ben_code).await.error_code(), "invalid_grant");
    let members = app.get(&format!("/v1/organizations/{org}/memberships")).await;
    assert_eq!(members.data().as_array().unwrap().len(), 4);
    let types = app.audit_types().await;
    for expected in ["team.invitation.created", "team.invitation.accepted", "team.invitation.revoked"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
    let export = app.get("/v1/audit-logs/export?type=team.invitation&limit=100").await;
    assert!(!export.body.to_string().contains(&code), "no code in the audit log");
}

#[actix_web::test]
async fn acceptance_passes_separation_of_duties_and_an_expired_invitation_is_refused() {
    let app = spawn_app().await;
    let policy = json!({"name": "p", "role_a": "payer", "role_b": "approver"});
    assert_eq!(app.post("/v1/sod-policies", &policy).await.status, 201);
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let other =
        app.post("/v1/organizations", &json!({"name": "Other"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@example.com", "owner").await;
    let (_, ada_id) = member(&app, &other, "ada@example.com", "payer").await;
    assert_eq!(invite(&app, &owner, "ada@example.com", "approver").await.status, 201);
    let code = code_sent_to(&app, "ada@example.com").await;
    let signed_in = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "ada@example.com", "password": crate::end_users::PASSWORD}),
    )
    .await;
    let ada = as_user(&app.caller, signed_in.data()["access_token"].as_str().unwrap());
    let refused = accept(&app, &ada, &code).await;
    assert_eq!((refused.status, refused.error_code()), (409, "sod_violation"), "{:?}", refused.body);
    let members = app.get(&format!("/v1/organizations/{org}/memberships")).await;
    assert!(!members.body.to_string().contains(&ada_id), "nothing changed");
    // The refusal changed nothing: the invitation is still pending.
    let pending = app.send(&owner, Method::GET, "/v1/dashboard/team/invitations", None).await;
    assert_eq!(pending.data()[0]["status"], "pending");

    assert_eq!(invite(&app, &owner, "late@example.com", "member").await.status, 201);
    let late_code = code_sent_to(&app, "late@example.com").await;
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    for row in entity::invitation::Entity::find().all(shard).await.unwrap() {
        let mut aged = row.into_active_model();
        aged.expires_at = Set(gatehouse::clock::now() - chrono::Duration::seconds(1));
        aged.update(shard).await.unwrap();
    }
    let late = sign_up(&app, &app.caller, "late@example.com").await;
    let late_caller = as_user(&app.caller, late["access_token"].as_str().unwrap());
    assert_eq!(accept(&app, &late_caller, &late_code).await.error_code(), "invalid_grant");
    let listed = app.send(&owner, Method::GET, "/v1/dashboard/team/invitations", None).await;
    assert_eq!(listed.data(), &Value::Array(vec![]), "expired invitations are not pending");
    // An expired one no longer blocks a new invitation.
    assert_eq!(invite(&app, &owner, "late@example.com", "member").await.status, 201);
}

#[actix_web::test]
async fn another_application_cannot_use_an_invitation() {
    let app = spawn_app().await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@example.com", "owner").await;
    assert_eq!(invite(&app, &owner, "ada@example.com", "member").await.status, 201);
    let code = code_sent_to(&app, "ada@example.com").await;
    let other = app.other_account().await;
    let ada_elsewhere = sign_up(&app, &other, "ada@example.com").await;
    let ada_caller = as_user(&other, ada_elsewhere["access_token"].as_str().unwrap());
    assert_eq!(accept(&app, &ada_caller, &code).await.error_code(), "invalid_grant");
    let listed = app.send(&owner, Method::GET, "/v1/dashboard/team/invitations", None).await;
    let id = listed.data()[0]["id"].as_str().unwrap();
    let foreign =
        app.send(&ada_caller, Method::POST, &format!("/v1/dashboard/team/invitations/{id}/revoke"), None).await;
    assert_eq!(foreign.status, 403, "no active organization there");
    // Two invitations of one email at once: one is made.
    let (a, b) = tokio::join!(
        invite(&app, &owner, "zed@example.com", "member"),
        invite(&app, &owner, "zed@example.com", "member")
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [201, 409], "{:?} {:?}", a.body, b.body);
}

#[actix_web::test]
async fn an_invitation_takes_only_an_email_a_user_could_sign_up_with() {
    let app = spawn_app().await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, _) = member(&app, &org, "owner@example.com", "owner").await;
    let too_long = format!("a@{}.example", "b".repeat(250));
    for bad in ["not-an-email", too_long.as_str()] {
        let refused = invite(&app, &owner, bad, "member").await;
        assert_eq!(
            (refused.status, refused.body["error"]["details"][0]["field"].as_str()),
            (422, Some("email")),
            "{bad}"
        );
    }
}

/// An invitation grants on its inviter's authority, checked again at
/// acceptance: an owner's invitation of an admin, the owner demoted since,
/// is refused 403 and stays pending.
#[actix_web::test]
async fn an_invitation_whose_inviter_may_no_longer_grant_its_role_is_refused_at_acceptance() {
    let app = spawn_app().await;
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let (owner, owner_id) = member(&app, &org, "owner@example.com", "owner").await;
    member(&app, &org, "second@example.com", "owner").await;
    assert_eq!(invite(&app, &owner, "ada@example.com", "admin").await.status, 201);
    assert_eq!(invite(&app, &owner, "bob@example.com", "member").await.status, 201);
    let (ada_code, bob_code) =
        (code_sent_to(&app, "ada@example.com").await, code_sent_to(&app, "bob@example.com").await);
    let demoted =
        app.patch(&format!("/v1/organizations/{org}/memberships/{owner_id}"), &json!({"role": "admin"})).await;
    assert_eq!(demoted.status, 200, "{:?}", demoted.body);

    let ada = sign_up(&app, &app.caller, "ada@example.com").await;
    let ada = as_user(&app.caller, ada["access_token"].as_str().unwrap());
    let refused = accept(&app, &ada, &ada_code).await;
    assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"), "{:?}", refused.body);
    let bob = sign_up(&app, &app.caller, "bob@example.com").await;
    let bob = as_user(&app.caller, bob["access_token"].as_str().unwrap());
    let joined = accept(&app, &bob, &bob_code).await;
    assert_eq!((joined.status, joined.data()["role"].as_str()), (200, Some("member")), "an admin may grant it");
    let pending = app.send(&owner, Method::GET, "/v1/dashboard/team/invitations", None).await;
    let emails: Vec<_> = pending.data().as_array().unwrap().iter().map(|i| i["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["ada@example.com"], "the refused one stays pending");
}
