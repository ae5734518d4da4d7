//! Passkeys (issue 16 item 4), with a software authenticator that can
//! send what a browser would not; headless Chromium's virtual
//! authenticator does the same ceremonies in `tests/interop/browser.test.mjs`.
use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    authenticator::SoftPasskey,
    end_users::{as_user, claims_of, public_post, sign_up, PASSWORD},
    helpers::{spawn_app, Caller, Reply, TestApp},
};

const ORIGIN: &str = "https://app.example.com";

async fn turn_on_passkeys(app: &TestApp, caller: &Caller) {
    let settings = format!("/v1/applications/{}", caller.application_id);
    let body = json!({"passkey_rp_id": "example.com", "allowed_origins": [ORIGIN]});
    let patched = app.send(caller, Method::PATCH, &settings, Some(&body)).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["passkey_rp_id"], "example.com");
}

/// Signs up `email` and registers a passkey for them.
pub async fn user_with_passkey(app: &TestApp, caller: &Caller, email: &str) -> (Caller, SoftPasskey) {
    let signed_up = sign_up(app, caller, email).await;
    let user = as_user(caller, signed_up["access_token"].as_str().unwrap());
    let options = app.send(&user, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    assert_eq!(options.status, 200, "{:?}", options.body);
    let (passkey, credential) = SoftPasskey::create(&options.data()["options"], ORIGIN);
    let body = json!({"ceremony": options.data()["ceremony"], "credential": credential, "name": "laptop"});
    let registered = app.send(&user, Method::POST, "/v1/auth/me/passkeys", Some(&body)).await;
    assert_eq!(registered.status, 201, "{:?}", registered.body);
    (user, passkey)
}

async fn sign_in_options(app: &TestApp, caller: &Caller) -> Value {
    let options = public_post(app, caller, "/v1/auth/passkeys/options", &json!({})).await;
    assert_eq!(options.status, 200, "{:?}", options.body);
    options.data().clone()
}

async fn passkey_sign_in(app: &TestApp, caller: &Caller, ceremony: &Value, credential: &Value) -> Reply {
    public_post(
        app,
        caller,
        "/v1/auth/sign-in/passkey",
        &json!({"ceremony": ceremony["ceremony"], "credential": credential}),
    )
    .await
}

async fn failure_reasons(app: &TestApp) -> Vec<Value> {
    let rows = app.get("/v1/audit-logs/export?type=sign_in.failed").await;
    rows.data().as_array().unwrap().iter().map(|r| r["data"]["reason"].clone()).collect()
}

#[actix_web::test]
async fn passkeys_need_a_relying_party_id_with_an_allowed_origin_on_it() {
    let app = spawn_app().await;
    let signed_up = sign_up(&app, &app.caller, "ada@example.com").await;
    let user = as_user(&app.caller, signed_up["access_token"].as_str().unwrap());
    let settings = format!("/v1/applications/{}", app.caller.application_id);

    let off = app.send(&user, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    let address = app.patch(&settings, &json!({"passkey_rp_id": "127.0.0.1"})).await;
    let upper = app.patch(&settings, &json!({"passkey_rp_id": "Example.com"})).await;
    let no_origin = app.patch(&settings, &json!({"passkey_rp_id": "example.com"})).await;
    let still_off = app.send(&user, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    let elsewhere = app.patch(&settings, &json!({"allowed_origins": ["https://example.org"]})).await;
    let no_origin_on_it = public_post(&app, &app.caller, "/v1/auth/passkeys/options", &json!({})).await;
    turn_on_passkeys(&app, &app.caller).await;
    let on = app.send(&user, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    let cleared = app.patch(&settings, &json!({"passkey_rp_id": null})).await;
    let off_again = public_post(&app, &app.caller, "/v1/auth/passkeys/options", &json!({})).await;

    assert_eq!((off.status, off.error_code()), (409, "passkeys_not_configured"));
    assert_eq!((address.status, upper.status), (422, 422));
    assert_eq!(no_origin.status, 200);
    assert_eq!((still_off.status, still_off.error_code()), (409, "passkeys_not_configured"));
    assert_eq!(elsewhere.status, 200);
    assert_eq!((no_origin_on_it.status, no_origin_on_it.error_code()), (409, "passkeys_not_configured"));
    assert_eq!(on.status, 200, "{:?}", on.body);
    let public_key = &on.data()["options"]["publicKey"];
    assert_eq!(public_key["rp"]["id"], "example.com");
    assert_eq!(public_key["authenticatorSelection"]["residentKey"], "required");
    assert_eq!(public_key["authenticatorSelection"]["userVerification"], "required");
    assert!(on.data()["ceremony"].as_str().unwrap().starts_with("pkc_"));
    assert_eq!(cleared.data()["passkey_rp_id"], Value::Null);
    assert_eq!((off_again.status, off_again.error_code()), (409, "passkeys_not_configured"));
}

#[actix_web::test]
async fn a_passkey_signs_in_alone_at_aal2_once_per_ceremony_and_with_a_counter_that_moves_forward() {
    let app = spawn_app().await;
    turn_on_passkeys(&app, &app.caller).await;
    let (user, mut passkey) = user_with_passkey(&app, &app.caller, "grace@example.com").await;
    let listed = app.send(&user, Method::GET, "/v1/auth/me/passkeys", None).await;
    let factors = app.send(&user, Method::GET, "/v1/auth/me/mfa", None).await;

    let ceremony = sign_in_options(&app, &app.caller).await;
    assert_eq!(ceremony["options"]["publicKey"]["allowCredentials"], json!([]), "discoverable: none named");
    let assertion = passkey.get(&ceremony["options"], ORIGIN);
    let signed_in = passkey_sign_in(&app, &app.caller, &ceremony, &assertion).await;
    let replayed = passkey_sign_in(&app, &app.caller, &ceremony, &assertion).await;
    // The same assertion against a new ceremony: its challenge is not this one's.
    let fresh = sign_in_options(&app, &app.caller).await;
    let other_challenge = passkey_sign_in(&app, &app.caller, &fresh, &assertion).await;
    // A cloned authenticator: its counter behind the one stored.
    passkey.counter = 1;
    let behind = sign_in_options(&app, &app.caller).await;
    let cloned = passkey_sign_in(&app, &app.caller, &behind, &passkey.get(&behind["options"], ORIGIN)).await;
    passkey.counter = 10;
    let phishing = sign_in_options(&app, &app.caller).await;
    let from_elsewhere =
        passkey_sign_in(&app, &app.caller, &phishing, &passkey.get(&phishing["options"], "https://app.example.net"))
            .await;
    let again = sign_in_options(&app, &app.caller).await;
    let forward = passkey_sign_in(&app, &app.caller, &again, &passkey.get(&again["options"], ORIGIN)).await;

    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert_eq!(listed.data()[0]["name"], "laptop");
    assert_eq!(factors.data()["passkeys"], 1);
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    assert_eq!(signed_in.data()["user"]["email"], "grace@example.com");
    assert_eq!(claims_of(signed_in.data()["access_token"].as_str().unwrap())["aal"], "aal2");
    assert_eq!((replayed.status, replayed.error_code()), (400, "invalid_grant"));
    assert_eq!((other_challenge.status, other_challenge.error_code()), (401, "invalid_credentials"));
    assert_eq!((cloned.status, cloned.error_code()), (401, "invalid_credentials"));
    assert_eq!((from_elsewhere.status, from_elsewhere.error_code()), (401, "invalid_credentials"));
    assert_eq!(forward.status, 200, "{:?}", forward.body);
    let reasons = failure_reasons(&app).await;
    for reason in ["challenge_mismatch", "counter_not_increased", "origin_not_allowed"] {
        assert!(reasons.contains(&json!(reason)), "{reason} in {reasons:?}");
    }
    let used = app.send(&user, Method::GET, "/v1/auth/me/passkeys", None).await;
    assert!(used.data()[0]["last_used_at"].is_string());
}

#[actix_web::test]
async fn a_password_sign_in_of_a_user_with_a_passkey_completes_with_it_and_a_session_steps_up_with_it() {
    let app = spawn_app().await;
    turn_on_passkeys(&app, &app.caller).await;
    let (aal1_user, mut passkey) = user_with_passkey(&app, &app.caller, "edsger@example.com").await;

    let removal_at_aal1 = app.send(&aal1_user, Method::GET, "/v1/auth/me/passkeys", None).await;
    let passkey_id = removal_at_aal1.data()[0]["id"].as_str().unwrap().to_string();
    let refused = app.send(&aal1_user, Method::DELETE, &format!("/v1/auth/me/passkeys/{passkey_id}"), None).await;
    assert_eq!((refused.status, refused.error_code()), (403, "aal2_required"));

    let credentials = json!({"email": "edsger@example.com", "password": PASSWORD});
    let first = public_post(&app, &app.caller, "/v1/auth/sign-in", &credentials).await;
    assert_eq!(first.data()["mfa_required"], true, "{:?}", first.body);
    assert_eq!(first.data()["factors"], json!(["passkey"]));
    let challenge = json!({"challenge": first.data()["challenge"]});
    let options = public_post(&app, &app.caller, "/v1/auth/sign-in/mfa/passkey", &challenge).await;
    assert_eq!(options.status, 200, "{:?}", options.body);
    let allowed = &options.data()["options"]["publicKey"]["allowCredentials"];
    assert_eq!(allowed.as_array().unwrap().len(), 1, "the user's own passkey is named");
    let assertion = passkey.get(&options.data()["options"], ORIGIN);
    let both = json!({"challenge": first.data()["challenge"], "code": "123456", "ceremony": options.data()["ceremony"], "credential": assertion});
    let ambiguous = public_post(&app, &app.caller, "/v1/auth/sign-in/mfa", &both).await;
    let body = json!({"challenge": first.data()["challenge"], "ceremony": options.data()["ceremony"], "credential": assertion});
    let completed = public_post(&app, &app.caller, "/v1/auth/sign-in/mfa", &body).await;
    assert_eq!((ambiguous.status, ambiguous.error_code()), (422, "validation_failed"));
    assert_eq!(completed.status, 200, "{:?}", completed.body);
    assert_eq!(claims_of(completed.data()["access_token"].as_str().unwrap())["aal"], "aal2");

    // The sign-up's session (aal1) steps up with the passkey.
    let step_options = app.send(&aal1_user, Method::POST, "/v1/auth/mfa/step-up/passkey", None).await;
    assert_eq!(step_options.status, 200, "{:?}", step_options.body);
    let assertion = passkey.get(&step_options.data()["options"], ORIGIN);
    let body = json!({"ceremony": step_options.data()["ceremony"], "credential": assertion});
    let stepped = app.send(&aal1_user, Method::POST, "/v1/auth/mfa/step-up", Some(&body)).await;
    assert_eq!(stepped.status, 200, "{:?}", stepped.body);
    let aal2_user = as_user(&app.caller, stepped.data()["access_token"].as_str().unwrap());
    let removed = app.send(&aal2_user, Method::DELETE, &format!("/v1/auth/me/passkeys/{passkey_id}"), None).await;
    assert_eq!(removed.status, 200, "{:?}", removed.body);
    let plain = public_post(&app, &app.caller, "/v1/auth/sign-in", &credentials).await;
    assert!(plain.data()["access_token"].is_string(), "no factor left: {:?}", plain.body);

    let export = app.get("/v1/audit-logs/export?limit=1000").await;
    let text = export.body.to_string();
    for secret in [&options.data()["ceremony"], &step_options.data()["ceremony"], &first.data()["challenge"]] {
        assert!(!text.contains(secret.as_str().unwrap()), "the audit holds no ceremony or challenge");
    }
    let types = app.audit_types().await;
    for event in ["passkey.registered", "sign_in.challenged", "session.stepped_up", "passkey.removed"] {
        assert!(types.iter().any(|t| t == event), "{event} in {types:?}");
    }
}

#[actix_web::test]
async fn a_passkey_of_one_application_or_user_is_refused_by_another() {
    let app = spawn_app().await;
    turn_on_passkeys(&app, &app.caller).await;
    let other = app.create_application(json!({"name": "Other", "environment": "development"})).await;
    turn_on_passkeys(&app, &other).await;
    let (_, mut passkey) = user_with_passkey(&app, &app.caller, "ada@example.com").await;
    let (mallory, _) = user_with_passkey(&app, &app.caller, "mallory@example.com").await;

    // Another application, the same relying-party id: not its passkey.
    let ceremony = sign_in_options(&app, &other).await;
    let elsewhere = passkey_sign_in(&app, &other, &ceremony, &passkey.get(&ceremony["options"], ORIGIN)).await;
    // Another user's step-up ceremony cannot take Ada's passkey.
    let options = app.send(&mallory, Method::POST, "/v1/auth/mfa/step-up/passkey", None).await;
    let body =
        json!({"ceremony": options.data()["ceremony"], "credential": passkey.get(&options.data()["options"], ORIGIN)});
    let stolen = app.send(&mallory, Method::POST, "/v1/auth/mfa/step-up", Some(&body)).await;
    // A registration ceremony is its user's: another user cannot finish it.
    let ada = sign_up(&app, &app.caller, "ada2@example.com").await;
    let ada = as_user(&app.caller, ada["access_token"].as_str().unwrap());
    let begun = app.send(&ada, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    let (_, credential) = SoftPasskey::create(&begun.data()["options"], ORIGIN);
    let body = json!({"ceremony": begun.data()["ceremony"], "credential": credential});
    let hijacked = app.send(&mallory, Method::POST, "/v1/auth/me/passkeys", Some(&body)).await;
    let finished = app.send(&ada, Method::POST, "/v1/auth/me/passkeys", Some(&body)).await;

    assert_eq!((elsewhere.status, elsewhere.error_code()), (401, "invalid_credentials"));
    assert_eq!((stolen.status, stolen.error_code()), (401, "invalid_credentials"));
    assert_eq!((hijacked.status, hijacked.error_code()), (400, "invalid_grant"));
    assert_eq!(finished.status, 201, "the ceremony was not spent by the other user: {:?}", finished.body);
    let other_failures = app.send(&other, Method::GET, "/v1/audit-logs/export?type=sign_in.failed", None).await;
    assert_eq!(other_failures.data()[0]["data"]["reason"], "unknown_passkey");
    let step_up_failures = app.get("/v1/audit-logs/export?type=mfa.challenge_failed").await;
    assert_eq!(step_up_failures.data()[0]["data"]["reason"], "unknown_passkey", "why the passkey was refused");
}

#[actix_web::test]
async fn deleting_a_user_deletes_their_passkeys() {
    let app = spawn_app().await;
    turn_on_passkeys(&app, &app.caller).await;
    let signed_up = sign_up(&app, &app.caller, "gone@example.com").await;
    let user = as_user(&app.caller, signed_up["access_token"].as_str().unwrap());
    let options = app.send(&user, Method::POST, "/v1/auth/me/passkeys/options", None).await;
    let (mut passkey, credential) = SoftPasskey::create(&options.data()["options"], ORIGIN);
    let body = json!({"ceremony": options.data()["ceremony"], "credential": credential});
    assert_eq!(app.send(&user, Method::POST, "/v1/auth/me/passkeys", Some(&body)).await.status, 201);

    let deleted = app
        .send(&app.caller, Method::DELETE, &format!("/v1/users/{}", signed_up["user"]["id"].as_str().unwrap()), None)
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    let ceremony = sign_in_options(&app, &app.caller).await;
    let refused = passkey_sign_in(&app, &app.caller, &ceremony, &passkey.get(&ceremony["options"], ORIGIN)).await;

    assert_eq!((refused.status, refused.error_code()), (401, "invalid_credentials"));
    assert_eq!(failure_reasons(&app).await, vec![json!("unknown_passkey")], "the passkey went with the user");
}
