//! TOTP second factors (issue 16): every code here comes from `pyotp`, an
//! independent implementation, reading the `otpauth://` URI we answer.
use std::process::Command;

use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::{as_user, claims_of, public_post, sign_up, PASSWORD},
    helpers::{spawn_app, Caller, TestApp},
};

/// pyotp's code for the URI at now + `offset` seconds; `None` (the test
/// skips) without pyotp, unless `GATEHOUSE_TEST_REQUIRE_TOTP` is set.
pub fn pyotp(uri: &str, offset: i64) -> Option<String> {
    let script = "import pyotp, sys, time; print(pyotp.parse_uri(sys.argv[1]).at(time.time() + int(sys.argv[2])))";
    let out = Command::new("python3").args(["-c", script, uri, &offset.to_string()]).output();
    match out {
        Ok(out) if out.status.success() => Some(String::from_utf8(out.stdout).unwrap().trim().to_string()),
        _ if std::env::var("GATEHOUSE_TEST_REQUIRE_TOTP").is_ok() => panic!("pyotp is required (pip install pyotp)"),
        _ => {
            eprintln!("skipped: pyotp is not installed (pip install pyotp)");
            None
        }
    }
}

/// Whether pyotp runs here.
pub fn pyotp_available() -> bool {
    Command::new("python3").args(["-c", "import pyotp"]).output().is_ok_and(|o| o.status.success())
}

pub struct Enrolled {
    pub user: Caller,
    pub uri: String,
    pub recovery_codes: Vec<String>,
}

pub async fn enrol(app: &TestApp, email: &str) -> Option<Enrolled> {
    let signed_up = sign_up(app, &app.caller, email).await;
    let user = as_user(&app.caller, signed_up["access_token"].as_str().unwrap());
    let started = app.send(&user, Method::POST, "/v1/auth/me/mfa/totp", None).await;
    assert_eq!(started.status, 201, "{:?}", started.body);
    let uri = started.data()["otpauth_uri"].as_str().unwrap().to_string();
    let code = pyotp(&uri, 0)?;
    let confirmed = app.send(&user, Method::POST, "/v1/auth/me/mfa/totp/confirm", Some(&json!({"code": code}))).await;
    assert_eq!(confirmed.status, 200, "{:?}", confirmed.body);
    let recovery_codes = confirmed.data()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    Some(Enrolled { user, uri, recovery_codes })
}

async fn password_sign_in(app: &TestApp, email: &str) -> Value {
    let reply = public_post(app, &app.caller, "/v1/auth/sign-in", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    reply.data().clone()
}

async fn second_step(app: &TestApp, challenge: &Value, code: &str) -> crate::helpers::Reply {
    public_post(app, &app.caller, "/v1/auth/sign-in/mfa", &json!({"challenge": challenge, "code": code})).await
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_totp),
    ignore = "needs pyotp: pip3 install pyotp==2.9.0, then GATEHOUSE_TEST_REQUIRE_TOTP=1 cargo test"
)]
async fn a_user_with_totp_signs_in_in_two_steps_and_gets_aal2_and_a_code_works_once() {
    let app = spawn_app().await;
    let Some(enrolled) = enrol(&app, "ada@example.com").await else { return };
    assert!(enrolled.uri.starts_with("otpauth://totp/"), "{}", enrolled.uri);
    assert!(enrolled.uri.contains("issuer=Test"), "{}", enrolled.uri);
    assert_eq!(enrolled.recovery_codes.len(), 10);
    let factors = app.send(&enrolled.user, Method::GET, "/v1/auth/me/mfa", None).await;
    assert_eq!(factors.data()["totp"]["status"], "active");
    assert_eq!(factors.data()["recovery_codes_remaining"], 10);

    // Act: the password alone is no longer enough.
    let first = password_sign_in(&app, "ada@example.com").await;
    let next_code = pyotp(&enrolled.uri, 30).unwrap();
    let completed = second_step(&app, &first["challenge"], &next_code).await;
    let again = password_sign_in(&app, "ada@example.com").await;
    let replayed = second_step(&app, &again["challenge"], &next_code).await;

    // Assert
    assert_eq!(first["mfa_required"], true);
    assert!(first.get("access_token").is_none(), "no tokens before the second factor: {first}");
    assert_eq!(completed.status, 200, "{:?}", completed.body);
    let claims = claims_of(completed.data()["access_token"].as_str().unwrap());
    assert_eq!(claims["aal"], "aal2");
    assert_eq!(completed.data()["session"]["aal"], "aal2");
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": completed.data()["refresh_token"]}))
            .await;
    assert_eq!(claims_of(refreshed.data()["access_token"].as_str().unwrap())["aal"], "aal2", "a refresh keeps aal2");
    assert_eq!((replayed.status, replayed.error_code()), (401, "invalid_credentials"), "a code is accepted once");
    let reused = second_step(&app, &first["challenge"], &pyotp(&enrolled.uri, 0).unwrap()).await;
    assert_eq!((reused.status, reused.error_code()), (400, "invalid_grant"), "a challenge is used once");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_totp),
    ignore = "needs pyotp: pip3 install pyotp==2.9.0, then GATEHOUSE_TEST_REQUIRE_TOTP=1 cargo test"
)]
async fn recovery_codes_are_single_use_and_removal_needs_a_fresh_aal2_session() {
    let app = spawn_app().await;
    let Some(enrolled) = enrol(&app, "grace@example.com").await else { return };
    let code = enrolled.recovery_codes[3].to_uppercase();

    let first = password_sign_in(&app, "grace@example.com").await;
    let recovered = second_step(&app, &first["challenge"], &code).await;
    let second = password_sign_in(&app, "grace@example.com").await;
    let reused = second_step(&app, &second["challenge"], &code).await;
    let from_aal1 = app.send(&enrolled.user, Method::DELETE, "/v1/auth/me/mfa/totp", None).await;
    let aal2 = as_user(&app.caller, recovered.data()["access_token"].as_str().unwrap());
    let removed = app.send(&aal2, Method::DELETE, "/v1/auth/me/mfa/totp", None).await;
    let after = password_sign_in(&app, "grace@example.com").await;

    assert_eq!(recovered.status, 200, "{:?}", recovered.body);
    assert_eq!(claims_of(recovered.data()["access_token"].as_str().unwrap())["aal"], "aal2");
    assert_eq!((reused.status, reused.error_code()), (401, "invalid_credentials"));
    assert_eq!((from_aal1.status, from_aal1.error_code()), (403, "aal2_required"));
    assert_eq!(removed.status, 200, "{:?}", removed.body);
    assert!(after["access_token"].is_string(), "without a factor the password is enough again: {after}");
    assert_eq!(claims_of(after["access_token"].as_str().unwrap())["aal"], "aal1");
    // Every change is audited, and no secret, code or challenge is in any row.
    let export = app.get("/v1/audit-logs/export?limit=1000").await;
    let types: Vec<&str> = export.data().as_array().unwrap().iter().map(|r| r["type"].as_str().unwrap()).collect();
    for expected in
        ["mfa.enrollment_started", "mfa.enrolled", "sign_in.challenged", "mfa.challenge_failed", "mfa.removed"]
    {
        assert!(types.contains(&expected), "{expected} in {types:?}");
    }
    let text = export.body.to_string();
    let secret = enrolled.uri.split("secret=").nth(1).unwrap().split('&').next().unwrap();
    for hidden in
        [secret, first["challenge"].as_str().unwrap(), &enrolled.recovery_codes[3], &enrolled.recovery_codes[0]]
    {
        assert!(!text.contains(hidden), "{hidden} leaked into the audit log");
    }
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_totp),
    ignore = "needs pyotp: pip3 install pyotp==2.9.0, then GATEHOUSE_TEST_REQUIRE_TOTP=1 cargo test"
)]
async fn a_challenge_takes_five_tries_and_another_application_cannot_use_it() {
    let app = spawn_app().await;
    let Some(enrolled) = enrol(&app, "alan@example.com").await else { return };
    let challenge = password_sign_in(&app, "alan@example.com").await["challenge"].clone();
    let other = app.other_account().await;
    let foreign =
        public_post(&app, &other, "/v1/auth/sign-in/mfa", &json!({"challenge": challenge, "code": "123456"})).await;
    assert_eq!((foreign.status, foreign.error_code()), (400, "invalid_grant"));

    let mut wrong = Vec::new();
    for _ in 0..5 {
        wrong.push(second_step(&app, &challenge, "zzzzz-zzzzz").await.status);
    }
    let right_too_late = second_step(&app, &challenge, &pyotp(&enrolled.uri, 30).unwrap()).await;

    assert_eq!(wrong, vec![401; 5]);
    assert_eq!((right_too_late.status, right_too_late.error_code()), (400, "invalid_grant"));
    let bad_confirm =
        app.send(&enrolled.user, Method::POST, "/v1/auth/me/mfa/totp/confirm", Some(&json!({"code": "12345"}))).await;
    assert_eq!(bad_confirm.status, 404, "nothing is pending: {:?}", bad_confirm.body);
    let restart = app.send(&enrolled.user, Method::POST, "/v1/auth/me/mfa/totp", None).await;
    assert_eq!((restart.status, restart.error_code()), (409, "conflict"), "an active factor is removed first");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_totp),
    ignore = "needs pyotp: pip3 install pyotp==2.9.0, then GATEHOUSE_TEST_REQUIRE_TOTP=1 cargo test"
)]
async fn a_session_steps_up_to_aal2_and_require_aal2_for_guards_personal_keys() {
    let app = spawn_app().await;
    let Some(enrolled) = enrol(&app, "edsger@example.com").await else { return };
    let settings = format!("/v1/applications/{}", app.caller.application_id);
    let unknown = app.patch(&settings, &json!({"require_aal2_for": ["fly"]})).await;
    let patched = app.patch(&settings, &json!({"require_aal2_for": ["create_personal_key"]})).await;
    assert_eq!((unknown.status, unknown.error_code()), (422, "validation_failed"));
    assert_eq!(patched.data()["require_aal2_for"], json!(["create_personal_key"]), "{:?}", patched.body);
    let aal1_sid = claims_of(&enrolled.user.key)["sid"].clone();

    let refused = app.send(&enrolled.user, Method::POST, "/v1/auth/me/api-keys", Some(&json!({"name": "k"}))).await;
    let wrong =
        app.send(&enrolled.user, Method::POST, "/v1/auth/mfa/step-up", Some(&json!({"code": "zzzzz-zzzzz"}))).await;
    let code = pyotp(&enrolled.uri, 30).unwrap();
    let stepped = app.send(&enrolled.user, Method::POST, "/v1/auth/mfa/step-up", Some(&json!({"code": code}))).await;
    let replayed = app.send(&enrolled.user, Method::POST, "/v1/auth/mfa/step-up", Some(&json!({"code": code}))).await;

    assert_eq!((refused.status, refused.error_code()), (403, "aal2_required"));
    assert_eq!((wrong.status, wrong.error_code()), (401, "invalid_credentials"));
    assert_eq!(stepped.status, 200, "{:?}", stepped.body);
    assert_eq!((replayed.status, replayed.error_code()), (401, "invalid_credentials"), "a code is accepted once");
    let claims = claims_of(stepped.data()["access_token"].as_str().unwrap());
    assert_eq!((claims["aal"].clone(), claims["sid"].clone()), (json!("aal2"), aal1_sid), "the same session, at aal2");
    assert_eq!(stepped.data()["session"]["aal"], "aal2");
    let aal2 = as_user(&app.caller, stepped.data()["access_token"].as_str().unwrap());
    let created = app.send(&aal2, Method::POST, "/v1/auth/me/api-keys", Some(&json!({"name": "k"}))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let old_token = app.send(&enrolled.user, Method::POST, "/v1/auth/me/api-keys", Some(&json!({"name": "k2"}))).await;
    assert_eq!(old_token.status, 403, "a token issued before the step-up still says aal1");
    let removed = app.send(&aal2, Method::DELETE, "/v1/auth/me/mfa/totp", None).await;
    assert_eq!(removed.status, 200, "a stepped-up session is fresh: {:?}", removed.body);
    let types = app.audit_types().await;
    assert!(types.iter().any(|t| t == "session.stepped_up"), "{types:?}");
}
