//! Email verification: the code sent at sign-up (read from the development
//! outbox), proving it, the `email_verified` claim, single use, five tries,
//! the resend throttle, and `require_verified_email` at sign-in.
use std::time::Duration;

use base64::Engine;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, IntoActiveModel};
use serde_json::{json, Value};

use crate::{
    end_users::{public_post, sign_up, PASSWORD},
    helpers::{first_shard, spawn_app, Reply, TestApp},
};

pub async fn codes_sent_to(app: &TestApp, to: &str) -> Vec<String> {
    let path = format!("/v1/applications/{}/providers/messaging/outbox", app.caller.application_id);
    let messages = app.get(&path).await.data().as_array().unwrap().clone();
    messages
        .iter()
        .filter(|m| m["recipient"] == to && m["subject"].as_str().unwrap().starts_with("Verify your email"))
        .map(|m| m["body"].as_str().unwrap().split("\n\n").nth(1).unwrap().trim().to_string())
        .collect()
}

/// The newest code sent to `to`, once there are `count`.
pub async fn code_number(app: &TestApp, to: &str, count: usize) -> String {
    crate::wait::until_some(&format!("verification code {count} to {to}"), || async {
        let codes = codes_sent_to(app, to).await;
        (codes.len() >= count).then(|| codes[0].clone())
    })
    .await
}

async fn verify(app: &TestApp, email: &str, code: &str) -> Reply {
    public_post(app, &app.caller, "/v1/auth/email/verify", &json!({"email": email, "code": code})).await
}

fn claims_of(token: &Value) -> Value {
    let payload = token.as_str().unwrap().split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

fn other_code(code: &str) -> String {
    format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000)
}

#[actix_web::test]
async fn the_code_sent_at_sign_up_verifies_the_email_once_and_tokens_say_so() {
    let app = spawn_app().await;
    let signed_up = sign_up(&app, &app.caller, "ada@example.com").await;
    assert_eq!(claims_of(&signed_up["access_token"])["email_verified"], false);
    let code = code_number(&app, "ada@example.com", 1).await;
    assert_eq!(code.len(), 6, "{code}");
    let wrong = verify(&app, "ada@example.com", &other_code(&code)).await;
    assert_eq!((wrong.status, wrong.error_code()), (400, "invalid_grant"));
    assert_eq!(verify(&app, "nobody@example.com", &code).await.error_code(), "invalid_grant");
    assert_eq!(verify(&app, "ada@example.com", "12ab56").await.status, 422);
    let verified = verify(&app, "ada@example.com", &code).await;
    assert_eq!(verified.status, 200, "{:?}", verified.body);
    assert!(verified.data()["email_verified_at"].is_string());
    assert_eq!(verify(&app, "ada@example.com", &code).await.error_code(), "invalid_grant", "used once");
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": signed_up["refresh_token"]})).await;
    assert_eq!(claims_of(&refreshed.data()["access_token"])["email_verified"], true, "the open session says so too");
    let signed_in =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": "ada@example.com", "password": PASSWORD}))
            .await;
    assert_eq!(claims_of(&signed_in.data()["access_token"])["email_verified"], true);
    // A verified user is sent nothing on a resend.
    let resent = public_post(&app, &app.caller, "/v1/auth/email/resend", &json!({"email": "ada@example.com"})).await;
    assert_eq!(resent.status, 202);
    let types = app.audit_types().await;
    for expected in ["user.email_verification_sent", "user.email_verification_failed", "user.email_verified"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
    let export = app.get("/v1/audit-logs/export?type=user&limit=1000").await;
    assert!(!export.body.to_string().contains(&code), "no code in the audit log");
}

/// Lets a new code go out now (the throttle allows one a minute).
async fn age_codes(app: &TestApp) {
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    for row in entity::email_verification::Entity::find().all(shard).await.unwrap() {
        let mut aged = row.into_active_model();
        aged.created_at = Set(gatehouse::clock::now() - chrono::Duration::seconds(61));
        aged.update(shard).await.unwrap();
    }
}

#[actix_web::test]
async fn five_wrong_tries_use_a_code_up_and_a_resend_supersedes_it_at_most_once_a_minute() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "bo@example.com").await;
    let first = code_number(&app, "bo@example.com", 1).await;
    let tries: Vec<_> = (0..5).map(|_| verify(&app, "bo@example.com", "000000")).collect();
    for reply in futures_util::future::join_all(tries).await {
        assert_eq!(reply.error_code(), "invalid_grant");
    }
    let too_late = verify(&app, "bo@example.com", &first).await;
    assert_eq!(too_late.error_code(), "invalid_grant", "five tries, even at once, use the code up");
    // Within the minute a resend sends nothing; after it, a new code that supersedes the old ones.
    let resend = json!({"email": "bo@example.com"});
    assert_eq!(public_post(&app, &app.caller, "/v1/auth/email/resend", &resend).await.status, 202);
    // An absence: the resend decides after its answer, and a decision to send nothing leaves no trace.
    crate::wait::stays("a resend within the minute sends nothing", Duration::from_millis(200), || async {
        codes_sent_to(&app, "bo@example.com").await.len() == 1
    })
    .await;
    age_codes(&app).await;
    public_post(&app, &app.caller, "/v1/auth/email/resend", &resend).await;
    let second = code_number(&app, "bo@example.com", 2).await;
    age_codes(&app).await;
    public_post(&app, &app.caller, "/v1/auth/email/resend", &resend).await;
    let third = code_number(&app, "bo@example.com", 3).await;
    if second != third {
        assert_eq!(verify(&app, "bo@example.com", &second).await.error_code(), "invalid_grant", "superseded");
    }
    assert_eq!(verify(&app, "bo@example.com", &third).await.status, 200);
    let unknown = public_post(&app, &app.caller, "/v1/auth/email/resend", &json!({"email": "who@example.com"})).await;
    assert_eq!(unknown.status, 202, "the same answer for an unknown email");
}

#[actix_web::test]
async fn an_application_that_requires_a_verified_email_refuses_sign_in_until_it_is() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "cy@example.com").await;
    let first = code_number(&app, "cy@example.com", 1).await;
    let settings = format!("/v1/applications/{}", app.caller.application_id);
    let required = app.patch(&settings, &json!({"require_verified_email": true})).await;
    assert_eq!((required.status, required.data()["require_verified_email"].as_bool()), (200, Some(true)));
    let credentials = json!({"email": "cy@example.com", "password": PASSWORD});
    let wrong = json!({"email": "cy@example.com", "password": "not the password at all"});
    assert_eq!(
        public_post(&app, &app.caller, "/v1/auth/sign-in", &wrong).await.status,
        401,
        "a guesser learns nothing"
    );
    age_codes(&app).await;
    let refused = public_post(&app, &app.caller, "/v1/auth/sign-in", &credentials).await;
    assert_eq!((refused.status, refused.error_code()), (403, "email_not_verified"), "{:?}", refused.body);
    let fresh = code_number(&app, "cy@example.com", 2).await;
    if fresh != first {
        assert_eq!(verify(&app, "cy@example.com", &first).await.error_code(), "invalid_grant");
    }
    assert_eq!(verify(&app, "cy@example.com", &fresh).await.status, 200);
    let signed_in = public_post(&app, &app.caller, "/v1/auth/sign-in", &credentials).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    let export = app.get("/v1/audit-logs/export?type=sign_in.failed&limit=100").await;
    let reasons: Vec<_> = export.data().as_array().unwrap().iter().map(|r| r["data"]["reason"].clone()).collect();
    assert!(reasons.contains(&json!("email_not_verified")), "{reasons:?}");
}

#[actix_web::test]
async fn a_changed_email_is_unverified_until_its_own_code_proves_it() {
    let app = spawn_app().await;
    let signed_up = sign_up(&app, &app.caller, "dee@example.com").await;
    let first = code_number(&app, "dee@example.com", 1).await;
    assert_eq!(verify(&app, "dee@example.com", &first).await.status, 200);
    let user_id = signed_up["user"]["id"].as_str().unwrap();
    let changed = app.patch(&format!("/v1/users/{user_id}"), &json!({"email": "dee@new.example"})).await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": signed_up["refresh_token"]})).await;
    assert_eq!(claims_of(&refreshed.data()["access_token"])["email_verified"], false, "the new address is not proven");
    let code = code_number(&app, "dee@new.example", 1).await;
    assert_eq!(verify(&app, "dee@new.example", &code).await.status, 200);
}
