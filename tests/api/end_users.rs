//! End users (contract §4, §5): sign-up, sign-in, refresh rotation, sign-out,
//! access tokens and their verification, management with a secret key.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use hmac::{Hmac, Mac};
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{json, Value};
use sha2::Sha256;
use uuid::Uuid;

use crate::helpers::{first_shard, spawn_app, spawn_with, Caller, Reply, TestApp};

pub const PASSWORD: &str = "correct horse battery";

/// Signs up `email` in the caller's application; the 201's data.
pub async fn sign_up(app: &TestApp, caller: &Caller, email: &str) -> Value {
    let reply = public_post(app, caller, "/v1/auth/sign-up", &json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    reply.data().clone()
}

/// A request with `x-application-id` and no credential.
pub async fn public_post(app: &TestApp, caller: &Caller, path: &str, body: &Value) -> Reply {
    app.raw(app.client.post(app.url(path)).header("x-application-id", &caller.application_id).json(body)).await
}

/// The end user behind an access token, as a caller.
pub fn as_user(caller: &Caller, access_token: &str) -> Caller {
    Caller { application_id: caller.application_id.clone(), key: access_token.to_string() }
}

fn token_of(data: &Value) -> String {
    data["access_token"].as_str().unwrap().to_string()
}

pub fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[actix_web::test]
async fn sign_up_answers_a_user_a_session_and_a_token_with_exactly_the_contract_claims() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "Ada@Example.com").await;
    assert_eq!(data["user"]["email"], "ada@example.com", "stored lowercased");
    assert!(data["refresh_token"].as_str().unwrap().starts_with("rt_"));
    let token = token_of(&data);
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(header["typ"], "JWT");
    let claims = claims_of(&token);
    let mut names: Vec<&str> = claims.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["aal", "aud", "email_verified", "exp", "iat", "iss", "jti", "nbf", "sid", "sub"]);
    assert_eq!(claims["email_verified"], false, "a new email is not proven yet");
    assert_eq!(claims["iss"], format!("{}/v1/applications/{}", app.address, app.caller.application_id));
    assert_eq!(claims["aud"], app.caller.application_id.as_str());
    assert_eq!(claims["sub"], data["user"]["id"]);
    assert_eq!(claims["sid"], data["session"]["id"]);
    assert_eq!(claims["aal"], "aal1");
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 300);

    let me = app.send(&as_user(&app.caller, &token), Method::GET, "/v1/auth/me", None).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["user"]["id"], data["user"]["id"]);

    let jwks = app
        .raw(app.client.get(app.url(&format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id))))
        .await;
    assert_eq!(jwks.status, 200);
    assert_eq!(jwks.header("cache-control"), Some("public, max-age=300"));
    // Answered by the region router before routing: the same headers as every public document.
    assert_eq!(jwks.header("access-control-allow-origin"), Some("*"));
    assert_eq!(jwks.header("content-type"), Some("application/json"));
    assert!(jwks.header("x-request-id").is_some());
    assert_eq!(jwks.body["keys"][0]["kid"], header["kid"]);
    assert_eq!(jwks.body["keys"][0]["crv"], "Ed25519");

    let types = app.audit_types().await;
    for expected in ["user.created", "session.created"] {
        assert!(types.iter().any(|t| t == expected), "{expected} in {types:?}");
    }
}

#[actix_web::test]
async fn a_duplicate_email_is_409_and_bad_sign_ups_are_422_storing_nothing() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "ada@example.com").await;
    let again =
        public_post(&app, &app.caller, "/v1/auth/sign-up", &json!({"email": "ADA@example.com", "password": PASSWORD}))
            .await;
    assert_eq!(again.status, 409, "{:?}", again.body);
    for body in [
        json!({"email": "not-an-email", "password": PASSWORD}),
        json!({"email": "b@example.com", "password": "short"}),
        json!({"email": "b@example.com", "password": PASSWORD, "profile": {"unknown": 1}}),
        json!({"email": "b@example.com"}),
    ] {
        let reply = public_post(&app, &app.caller, "/v1/auth/sign-up", &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    let users = app.get("/v1/users").await;
    assert_eq!(users.data().as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn a_wrong_password_and_an_unknown_email_get_the_same_401() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "ada@example.com").await;
    let wrong = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "ada@example.com", "password": "nope nope nope"}),
    )
    .await;
    let unknown = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "bob@example.com", "password": "nope nope nope"}),
    )
    .await;
    assert_eq!((wrong.status, unknown.status), (401, 401));
    assert_eq!(wrong.body["error"], unknown.body["error"]);
    assert_eq!(wrong.error_code(), "invalid_credentials");
    let ok =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": "ADA@example.com", "password": PASSWORD}))
            .await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    assert!(ok.data()["user"]["last_sign_in_at"].is_string());
    let types = app.audit_types().await;
    assert_eq!(types.iter().filter(|t| *t == "sign_in.failed").count(), 2);
    assert_eq!(types.iter().filter(|t| *t == "sign_in.succeeded").count(), 1);
}

#[actix_web::test]
async fn sign_ins_are_limited_per_email_with_retry_after() {
    let app = spawn_with(|s| s.rate_limits.sign_in_per_email_per_minute = 2).await;
    let body = json!({"email": "ada@example.com", "password": "nope nope nope"});
    for _ in 0..2 {
        assert_eq!(public_post(&app, &app.caller, "/v1/auth/sign-in", &body).await.status, 401);
    }
    let limited = public_post(&app, &app.caller, "/v1/auth/sign-in", &body).await;
    assert_eq!(limited.status, 429, "{:?}", limited.body);
    assert!(limited.header("retry-after").is_some());
    let other = json!({"email": "bob@example.com", "password": "nope nope nope"});
    assert_eq!(
        public_post(&app, &app.caller, "/v1/auth/sign-in", &other).await.status,
        401,
        "another email is not limited"
    );
}

#[actix_web::test]
async fn a_refresh_token_rotates_and_presenting_a_rotated_one_revokes_the_session() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let first = data["refresh_token"].as_str().unwrap();
    let refreshed = public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": first})).await;
    assert_eq!(refreshed.status, 200, "{:?}", refreshed.body);
    let second = refreshed.data()["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    let access = token_of(refreshed.data());
    assert_eq!(app.send(&as_user(&app.caller, &access), Method::GET, "/v1/auth/me", None).await.status, 200);

    let reused = public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": first})).await;
    assert_eq!(reused.status, 401);
    let after = public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": second})).await;
    assert_eq!(after.status, 401, "the whole session is revoked");
    assert_eq!(app.send(&as_user(&app.caller, &access), Method::GET, "/v1/auth/me", None).await.status, 401);
    let types = app.audit_types().await;
    assert!(types.iter().any(|t| t == "session.refreshed"));
    assert!(types.iter().any(|t| t == "session.revoked"));
}

#[actix_web::test]
async fn concurrent_refreshes_of_one_token_rotate_it_once() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let token = data["refresh_token"].as_str().unwrap();
    let body = json!({"refresh_token": token});
    let replies =
        futures_util::future::join_all((0..8).map(|_| public_post(&app, &app.caller, "/v1/auth/token", &body))).await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, 1, "{:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(replies.iter().all(|r| r.status == 200 || r.status == 401));
}

#[actix_web::test]
async fn two_tabs_refreshing_within_the_reuse_interval_keep_the_session() {
    // Arrange
    let app = spawn_app().await;
    let path = format!("/v1/applications/{}", app.caller.application_id);
    for bad in [json!(61), json!(-1), json!("10")] {
        let refused = app.patch(&path, &json!({"refresh_reuse_interval_seconds": bad})).await;
        assert_eq!(refused.status, 422, "{bad}");
    }
    let set = app.patch(&path, &json!({"refresh_reuse_interval_seconds": 2})).await;
    assert_eq!(set.data()["refresh_reuse_interval_seconds"], 2, "{:?}", set.body);
    let data = sign_up(&app, &app.caller, "tabs@example.com").await;
    let first = data["refresh_token"].as_str().unwrap().to_string();
    let app = &app;
    let refresh = |token: String| async move {
        public_post(app, &app.caller, "/v1/auth/token", &json!({"refresh_token": token})).await
    };

    // Act: two tabs present the same token at once.
    let (a, b) = futures_util::join!(refresh(first.clone()), refresh(first.clone()));

    // Assert: both get a pair of the same session, and both pairs work on.
    assert_eq!((a.status, b.status), (200, 200), "{:?} {:?}", a.body, b.body);
    assert_eq!(a.data()["session"]["id"], b.data()["session"]["id"]);
    let (a_token, b_token) = (
        a.data()["refresh_token"].as_str().unwrap().to_string(),
        b.data()["refresh_token"].as_str().unwrap().to_string(),
    );
    assert_ne!(a_token, b_token);
    let a_next = refresh(a_token).await;
    let b_next = refresh(b_token).await;
    assert_eq!((a_next.status, b_next.status), (200, 200));
    let rows = app.get("/v1/audit-logs/export?limit=1000").await;
    assert!(rows.data().as_array().unwrap().iter().any(|r| r["data"]["reused_within_interval"] == true));

    // A rotated token is reissued once: a third presentation, even within
    // the interval, is reuse and ends the session.
    let stale = refresh(first).await;
    assert_eq!(stale.status, 401);
    let after = refresh(a_next.data()["refresh_token"].as_str().unwrap().to_string()).await;
    assert_eq!(after.status, 401, "the whole session is revoked");
}

#[actix_web::test]
async fn sign_out_and_revocation_end_access_at_once() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let user = as_user(&app.caller, &token_of(&data));
    let out = app.send(&user, Method::POST, "/v1/auth/sign-out", None).await;
    assert_eq!(out.status, 200, "{:?}", out.body);
    assert_eq!(out.data()["active"], false);
    assert_eq!(app.send(&user, Method::GET, "/v1/auth/me", None).await.status, 401);

    let data =
        public_post(&app, &app.caller, "/v1/auth/sign-in", &json!({"email": "ada@example.com", "password": PASSWORD}))
            .await;
    let user = as_user(&app.caller, &token_of(data.data()));
    let session = data.data()["session"]["id"].as_str().unwrap();
    let revoked = app.post(&format!("/v1/sessions/{session}/revoke"), &json!({})).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    assert_eq!(app.send(&user, Method::GET, "/v1/auth/me", None).await.status, 401);
    let refresh =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": data.data()["refresh_token"]})).await;
    assert_eq!(refresh.status, 401);
}

fn forged(header: Value, claims: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// Signs `claims` with the application's real current key.
async fn signed_by_app(app: &TestApp, claims: &Value) -> String {
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let scope = gatehouse::auth::public_scope(&app.state, tenant).unwrap();
    let (kid, key) = app.state.tenants.current_signing_key(&scope).await.unwrap();
    let claims: gatehouse::tokens::jwt::Claims = serde_json::from_value(claims.clone()).unwrap();
    gatehouse::tokens::jwt::sign(&claims, kid, &key)
}

#[actix_web::test]
async fn tampered_foreign_expired_and_confused_tokens_are_all_401() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let token = token_of(&data);
    let user = |t: &str| as_user(&app.caller, t);
    assert_eq!(app.send(&user(&token), Method::GET, "/v1/auth/me", None).await.status, 200);

    let parts: Vec<&str> = token.split('.').collect();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    let claims = claims_of(&token);
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    let kid = header["kid"].clone();
    let jwks = app
        .raw(app.client.get(app.url(&format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id))))
        .await;
    let public_key = URL_SAFE_NO_PAD.decode(jwks.body["keys"][0]["x"].as_str().unwrap()).unwrap();

    let mut bad: Vec<(String, String)> = Vec::new();
    for alg in ["none", "None", "NONE", "nOnE"] {
        let h = json!({"alg": alg, "typ": "JWT", "kid": kid});
        bad.push((format!("alg {alg}"), forged(h.clone(), &claims, b"")));
        bad.push((format!("alg {alg}, no signature"), forged(h, &claims, b"").trim_end_matches('.').to_string()));
    }
    let hs_header = json!({"alg": "HS256", "typ": "JWT", "kid": kid});
    let signing_input =
        format!("{}.{}", URL_SAFE_NO_PAD.encode(hs_header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
    let mut mac = Hmac::<Sha256>::new_from_slice(&public_key).unwrap();
    mac.update(signing_input.as_bytes());
    bad.push((
        "HS256 with the public key".into(),
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())),
    ));
    let mut flipped = signature.clone();
    flipped[10] ^= 1;
    bad.push((
        "flipped signature bit".into(),
        format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(&flipped)),
    ));
    bad.push((
        "truncated signature".into(),
        format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(&signature[..32])),
    ));
    let mut changed = claims.clone();
    changed["sub"] = json!(Uuid::now_v7());
    bad.push(("changed claim".into(), forged(header.clone(), &changed, &signature)));
    bad.push((
        "unknown kid".into(),
        forged(json!({"alg": "EdDSA", "typ": "JWT", "kid": Uuid::now_v7()}), &claims, &signature),
    ));
    bad.push((
        "jku header".into(),
        forged(json!({"alg": "EdDSA", "typ": "JWT", "kid": kid, "jku": "http://127.0.0.1:1/"}), &claims, &signature),
    ));
    bad.push(("padding".into(), format!("{token}==")));
    bad.push(("four segments".into(), format!("{token}.x")));
    bad.push(("empty".into(), String::new()));
    let now = chrono::Utc::now().timestamp();
    let mut expired = claims.clone();
    (expired["iat"], expired["nbf"], expired["exp"]) = (json!(now - 400), json!(now - 400), json!(now - 31));
    bad.push(("expired past the leeway".into(), signed_by_app(&app, &expired).await));
    let mut future = claims.clone();
    future["nbf"] = json!(now + 120);
    bad.push(("not yet valid".into(), signed_by_app(&app, &future).await));
    let mut wrong_aud = claims.clone();
    wrong_aud["aud"] = json!(Uuid::now_v7().to_string());
    bad.push(("wrong aud".into(), signed_by_app(&app, &wrong_aud).await));
    let mut wrong_iss = claims.clone();
    wrong_iss["iss"] = json!("http://evil.example/v1/applications/x");
    bad.push(("wrong iss".into(), signed_by_app(&app, &wrong_iss).await));

    let other = app.create_application(json!({"name": "Other"})).await;
    let foreign = sign_up(&app, &other, "ada@example.com").await;
    bad.push(("another application's token".into(), token_of(&foreign)));

    for (what, token) in bad {
        let reply = app.send(&user(&token), Method::GET, "/v1/auth/me", None).await;
        assert_eq!(reply.status, 401, "{what}: {:?}", reply.body);
        assert_eq!(reply.error_code(), "unauthenticated", "{what}");
    }
    let mut inside = claims.clone();
    (inside["iat"], inside["nbf"], inside["exp"]) = (json!(now - 400), json!(now - 400), json!(now - 20));
    let reply = app.send(&user(&signed_by_app(&app, &inside).await), Method::GET, "/v1/auth/me", None).await;
    assert_eq!(reply.status, 200, "expired 20 s ago is inside the 30 s leeway");
}

#[actix_web::test]
async fn a_secret_key_is_not_an_access_token_and_an_access_token_is_not_a_secret_key() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    assert_eq!(app.get("/v1/auth/me").await.status, 401);
    let user = as_user(&app.caller, &token_of(&data));
    assert_eq!(app.send(&user, Method::GET, "/v1/users", None).await.status, 401);
    assert_eq!(app.send(&user, Method::POST, "/v1/api-keys", Some(&json!({"name": "x"}))).await.status, 401);
}

fn kid_of(token: &str) -> String {
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    header["kid"].as_str().unwrap().to_string()
}

async fn jwks_kids(app: &TestApp) -> Vec<String> {
    let path = format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id);
    let jwks = app.raw(app.client.get(app.url(&path))).await;
    jwks.body["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_string()).collect()
}

#[actix_web::test]
async fn a_scheduled_rotation_publishes_the_next_key_before_it_signs_and_keeps_the_old_one_valid() {
    // A JWKS max-age of 0 leaves the lead at twice this service's own 10 s cache.
    let app = spawn_with(|settings| settings.tokens.jwks_max_age_seconds = 0).await;
    let before = token_of(&sign_up(&app, &app.caller, "ada@example.com").await);
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    let rotated = app
        .raw(
            app.client
                .post(app.url(&path))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&app.caller.key),
        )
        .await;
    assert_eq!(rotated.status, 200, "no body is a scheduled rotation: {:?}", rotated.body);
    let kid = rotated.data()["kid"].as_str().unwrap().to_string();
    let signs_from = chrono::DateTime::parse_from_rfc3339(rotated.data()["signs_from"].as_str().unwrap()).unwrap();
    let lead = signs_from.signed_duration_since(chrono::Utc::now()).num_milliseconds();
    assert!((18_000..=20_000).contains(&lead), "signs in {lead} ms");
    assert_eq!(jwks_kids(&app).await, [kid.clone(), kid_of(&before)], "published at once, beside the current key");
    let again = app.post(&path, &json!({})).await;
    assert_eq!(again.data()["kid"], kid.as_str(), "a rotation already scheduled is answered as it is");

    let during = token_of(&sign_up(&app, &app.caller, "bob@example.com").await);
    assert_eq!(kid_of(&during), kid_of(&before), "the old key signs until the new one's time");
    crate::wait::until("the new key's time to sign", || async { chrono::Utc::now() >= signs_from }).await;
    let after = token_of(&sign_up(&app, &app.caller, "cy@example.com").await);
    assert_eq!(kid_of(&after), kid);
    for token in [&before, &during, &after] {
        assert_eq!(app.send(&as_user(&app.caller, token), Method::GET, "/v1/auth/me", None).await.status, 200);
    }
    assert_eq!(jwks_kids(&app).await.len(), 2, "the old key stays published while its tokens live");
    let plain = app.key_with_scopes(json!(["users:write"])).await;
    assert_eq!(app.send(&plain, Method::POST, &path, Some(&json!({}))).await.status, 403, "needs admin");
}

#[actix_web::test]
async fn a_rotation_before_the_first_key_signs_at_once() {
    let app = spawn_app().await;
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    let rotated = app.post(&path, &json!({})).await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let kid = rotated.data()["kid"].as_str().unwrap().to_string();
    let signed_up = token_of(&sign_up(&app, &app.caller, "ada@example.com").await);
    assert_eq!(kid_of(&signed_up), kid, "no verifier held a key to be broken");
}

#[actix_web::test]
async fn an_immediate_rotation_retires_every_old_key_at_once() {
    let app = spawn_app().await;
    let before = token_of(&sign_up(&app, &app.caller, "ada@example.com").await);
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    app.post(&path, &json!({})).await; // a scheduled key, not signing yet: it goes too
    let rotated = app.post(&path, &json!({"immediate": true})).await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let kid = rotated.data()["kid"].as_str().unwrap().to_string();
    let after = token_of(&sign_up(&app, &app.caller, "bob@example.com").await);
    assert_eq!(kid_of(&after), kid);
    assert_eq!(jwks_kids(&app).await, [kid]);
    assert_eq!(app.send(&as_user(&app.caller, &before), Method::GET, "/v1/auth/me", None).await.status, 401);
    assert_eq!(app.send(&as_user(&app.caller, &after), Method::GET, "/v1/auth/me", None).await.status, 200);
    let types = app.audit_types().await;
    assert_eq!(types.iter().filter(|t| *t == "signing_key.rotated").count(), 2);
    let unknown = app.post(&path, &json!({"immediate": "yes"})).await;
    assert_eq!(unknown.status, 422, "{:?}", unknown.body);
}

#[actix_web::test]
async fn the_jwks_has_an_etag_and_answers_304_to_a_verifier_that_holds_it() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "ada@example.com").await;
    let url = app.url(&format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id));
    let first = app.raw(app.client.get(&url)).await;
    let etag = first.header("etag").expect("an ETag").to_string();
    assert_eq!(first.header("cache-control"), Some("public, max-age=300"));
    let same = app.raw(app.client.get(&url).header("if-none-match", &etag)).await;
    assert_eq!((same.status, same.header("etag")), (304, Some(etag.as_str())));
    assert_eq!(same.body, Value::String(String::new()));
    let listed = app.raw(app.client.get(&url).header("if-none-match", format!("\"other\", W/{etag}"))).await;
    assert_eq!(listed.status, 304);
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    app.post(&path, &json!({})).await;
    let changed = app.raw(app.client.get(&url).header("if-none-match", &etag)).await;
    assert_eq!(changed.status, 200, "a new key is a new document");
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}

#[actix_web::test]
async fn users_are_managed_with_a_secret_key_and_isolated_per_application() {
    let app = spawn_app().await;
    let created = app.post("/v1/users", &json!({"email": "carol@example.com", "password": PASSWORD})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.data()["id"].as_str().unwrap().to_string();
    assert!(created.data().get("password_hash").is_none());
    let signed_in = public_post(
        &app,
        &app.caller,
        "/v1/auth/sign-in",
        &json!({"email": "carol@example.com", "password": PASSWORD}),
    )
    .await;
    assert_eq!(signed_in.status, 200);
    let patched = app.patch(&format!("/v1/users/{id}"), &json!({"email": "carol2@example.com"})).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["email"], "carol2@example.com");
    let sessions = app.get(&format!("/v1/users/{id}/sessions")).await;
    assert_eq!(sessions.data().as_array().unwrap().len(), 1);
    let found = app.get("/v1/users?email=CAROL2@example.com").await;
    assert_eq!(found.data().as_array().unwrap().len(), 1);

    let other = app.other_account().await;
    for (method, path) in [
        (Method::GET, format!("/v1/users/{id}")),
        (Method::PATCH, format!("/v1/users/{id}")),
        (Method::DELETE, format!("/v1/users/{id}")),
    ] {
        let reply = app.send(&other, method, &path, Some(&json!({}))).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
    }
    let user = as_user(&app.caller, &token_of(signed_in.data()));
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/users/{id}"), None).await.status, 200);
    assert_eq!(app.get(&format!("/v1/users/{id}")).await.status, 404);
    assert_eq!(app.send(&user, Method::GET, "/v1/auth/me", None).await.status, 401, "a deleted user's token is dead");
    let types = app.audit_types().await;
    for expected in ["user.created", "user.updated", "user.deleted", "sign_in.succeeded"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn organizations_memberships_and_activation_put_org_claims_in_the_token() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let user_id = data["user"]["id"].as_str().unwrap();
    let org = app.post("/v1/organizations", &json!({"name": "Acme Inc", "slug": "acme"})).await;
    assert_eq!(org.status, 201, "{:?}", org.body);
    let org_id = org.data()["id"].as_str().unwrap().to_string();
    assert_eq!(app.post("/v1/organizations", &json!({"name": "Acme 2", "slug": "acme"})).await.status, 409);
    let members = format!("/v1/organizations/{org_id}/memberships");
    let added = app.post(&members, &json!({"user_id": user_id, "role": "admin"})).await;
    assert_eq!(added.status, 201, "{:?}", added.body);
    assert_eq!(added.data()["role"], "admin");
    let again = app.post(&members, &json!({"user_id": user_id, "role": "member"})).await;
    assert_eq!((again.status, again.error_code()), (409, "already_member"));

    let user = as_user(&app.caller, &token_of(&data));
    let activated = app.send(&user, Method::POST, &format!("/v1/auth/organizations/{org_id}/activate"), None).await;
    assert_eq!(activated.status, 200, "{:?}", activated.body);
    let claims = claims_of(&token_of(activated.data()));
    assert_eq!(claims["org"], org_id.as_str());
    assert_eq!(claims["org_role"], "admin");
    let refreshed =
        public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": data["refresh_token"]})).await;
    assert_eq!(claims_of(&token_of(refreshed.data()))["org_role"], "admin", "refreshes keep the organization");

    let changed =
        app.send(&app.caller, Method::PATCH, &format!("{members}/{user_id}"), Some(&json!({"role": "owner"}))).await;
    assert_eq!(changed.data()["role"], "owner");
    let me = app.send(&user, Method::GET, "/v1/auth/me", None).await;
    assert_eq!(me.data()["organizations"][0]["role"], "owner");

    let other_org = app.post("/v1/organizations", &json!({"name": "Other"})).await;
    let other_id = other_org.data()["id"].as_str().unwrap();
    let renamed = app.patch(&format!("/v1/organizations/{other_id}"), &json!({"name": "Other Ltd"})).await;
    assert_eq!((renamed.status, renamed.data()["name"].as_str()), (200, Some("Other Ltd")), "{:?}", renamed.body);
    let read = app.get(&format!("/v1/organizations/{other_id}")).await;
    assert_eq!((read.status, read.data()["name"].as_str()), (200, Some("Other Ltd")), "{:?}", read.body);
    let not_member = app.send(&user, Method::POST, &format!("/v1/auth/organizations/{other_id}/activate"), None).await;
    assert_eq!(not_member.status, 404);

    let last_owner = app.send(&app.caller, Method::DELETE, &format!("{members}/{user_id}"), None).await;
    assert_eq!((last_owner.status, last_owner.error_code()), (409, "last_owner"));
    let bob = app.post("/v1/users", &json!({"email": "bob@example.com"})).await;
    let bob_id = bob.data()["id"].as_str().unwrap();
    assert_eq!(app.post(&members, &json!({"user_id": bob_id, "role": "owner"})).await.status, 201);
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("{members}/{user_id}"), None).await.status, 200);
    assert_eq!(app.get(&members).await.data().as_array().unwrap().len(), 1);
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/organizations/{org_id}"), None).await.status, 200);
    let types = app.audit_types().await;
    for expected in [
        "organization.created",
        "organization.membership.created",
        "organization.membership.updated",
        "organization.membership.deleted",
        "organization.deleted",
    ] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn personal_keys_are_issued_listed_revoked_and_verified_by_the_backend() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let user = as_user(&app.caller, &token_of(&data));
    let created =
        app.send(&user, Method::POST, "/v1/auth/me/api-keys", Some(&json!({"name": "cli", "scopes": ["read"]}))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let secret = created.data()["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("uk_test_"));
    let key_id = created.data()["id"].as_str().unwrap().to_string();
    let listed = app.send(&user, Method::GET, "/v1/auth/me/api-keys", None).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert!(listed.data()[0].get("secret").is_none());

    let verified = app.post("/v1/api-keys/verify", &json!({"secret": secret})).await;
    assert_eq!(verified.status, 200, "{:?}", verified.body);
    assert_eq!(verified.data()["valid"], true);
    assert_eq!(verified.data()["kind"], "user");
    assert_eq!(verified.data()["subject_id"], data["user"]["id"]);
    assert_eq!(verified.data()["scopes"], json!(["read"]));
    assert_eq!(verified.data()["key_id"], key_id.as_str());
    crate::wait::until("a verified key to record its use", || async {
        app.send(&user, Method::GET, "/v1/auth/me/api-keys", None).await.data()[0]["last_used_at"].is_string()
    })
    .await;

    let other = app.other_account().await;
    let elsewhere = app.send(&other, Method::POST, "/v1/api-keys/verify", Some(&json!({"secret": secret}))).await;
    assert_eq!(elsewhere.data()["valid"], false, "another application's key");
    let someone = sign_up(&app, &app.caller, "bob@example.com").await;
    let bob = as_user(&app.caller, &token_of(&someone));
    let theirs = app.send(&bob, Method::POST, &format!("/v1/auth/me/api-keys/{key_id}/revoke"), None).await;
    assert_eq!(theirs.status, 404, "another user's key");
    let revoked = app.send(&user, Method::POST, &format!("/v1/auth/me/api-keys/{key_id}/revoke"), None).await;
    assert_eq!(revoked.status, 200);
    assert!(revoked.data()["revoked_at"].is_string());
    for secret in [secret.as_str(), "uk_test_nope", "sk_test_x", ""] {
        let reply = app.post("/v1/api-keys/verify", &json!({"secret": secret})).await;
        assert_eq!((reply.status, reply.data()["valid"].clone()), (200, json!(false)), "{secret}");
    }
}

#[actix_web::test]
async fn cors_follows_the_applications_allowed_origins_on_end_user_routes_only() {
    let app = spawn_app().await;
    let patched = app
        .patch(
            &format!("/v1/applications/{}", app.caller.application_id),
            &json!({"allowed_origins": ["https://app.example.com"]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    let preflight = |origin: &str| {
        app.client
            .request(Method::OPTIONS, app.url("/v1/auth/sign-in"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type, x-application-id")
    };
    let allowed = app.raw(preflight("https://app.example.com")).await;
    assert_eq!(allowed.status, 204, "{:?}", allowed.body);
    assert_eq!(allowed.header("access-control-allow-origin"), Some("https://app.example.com"));
    let refused = app.raw(preflight("https://evil.example.com")).await;
    assert_eq!((refused.status, refused.error_code()), (403, "origin_not_allowed"));
    assert!(refused.header("access-control-allow-origin").is_none());

    let body = json!({"email": "ada@example.com", "password": PASSWORD});
    let sign_up = |origin: &str| {
        app.client
            .post(app.url("/v1/auth/sign-up"))
            .header("origin", origin)
            .header("x-application-id", &app.caller.application_id)
            .json(&body)
    };
    let evil = app.raw(sign_up("https://evil.example.com")).await;
    assert_eq!((evil.status, evil.error_code()), (403, "origin_not_allowed"));
    assert_eq!(app.get("/v1/users").await.data().as_array().unwrap().len(), 0, "refused before anything ran");
    let good = app.raw(sign_up("https://app.example.com")).await;
    assert_eq!(good.status, 201, "{:?}", good.body);
    assert_eq!(good.header("access-control-allow-origin"), Some("https://app.example.com"));

    let management = app
        .raw(
            app.client
                .get(app.url("/v1/users"))
                .header("origin", "https://app.example.com")
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&app.caller.key),
        )
        .await;
    assert_eq!(management.status, 200);
    assert!(management.header("access-control-allow-origin").is_none(), "secret-key routes send no CORS headers");
}

/// A token of arbitrary header and payload text, validly signed with the
/// application's current key.
async fn signed_raw(app: &TestApp, header: &str, payload: &str) -> String {
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let scope = gatehouse::auth::public_scope(&app.state, tenant).unwrap();
    let (_, key) = app.state.tenants.current_signing_key(&scope).await.unwrap();
    let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(payload));
    let signature = key.sign(input.as_bytes(), None);
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}

#[actix_web::test]
async fn ill_typed_claims_abused_kids_foreign_headers_and_other_formats_are_401_never_5xx() {
    let app = spawn_app().await;
    let data = sign_up(&app, &app.caller, "ada@example.com").await;
    let token = token_of(&data);
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    let kid = header["kid"].as_str().unwrap().to_string();
    let claims = claims_of(&token);
    let good_header = json!({"alg": "EdDSA", "typ": "JWT", "kid": kid}).to_string();
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        app.send(
            &as_user(&app.caller, &signed_raw(&app, &good_header, &claims.to_string()).await),
            Method::GET,
            "/v1/auth/me",
            None
        )
        .await
        .status,
        200,
        "the raw signer makes valid tokens"
    );

    let mut cases: Vec<(String, String)> = Vec::new();
    let with = |name: &str, value: Value| {
        let mut c = claims.clone();
        if value.is_null() {
            c.as_object_mut().unwrap().remove(name);
        } else {
            c[name] = value;
        }
        c.to_string()
    };
    for (what, payload) in [
        ("exp missing", with("exp", Value::Null)),
        ("exp as a string", with("exp", json!((now + 300).to_string()))),
        ("exp as a float", with("exp", json!(now as f64 + 300.5))),
        ("exp 1e20", with("exp", json!(1e20))),
        ("iat far in the future", with("iat", json!(now + 86_400))),
        ("aud as an array", with("aud", json!([claims["aud"], "other"]))),
        ("sub missing", with("sub", Value::Null)),
        ("unknown claim", with("admin", json!(true))),
    ] {
        cases.push((what.into(), signed_raw(&app, &good_header, &payload).await));
    }
    let claims_text = claims.to_string();
    let duplicate_sub = format!("{},\"sub\":\"{}\"}}", &claims_text[..claims_text.len() - 1], Uuid::now_v7());
    cases.push(("duplicate sub".into(), signed_raw(&app, &good_header, &duplicate_sub).await));
    for (what, header) in [
        ("typ at+jwt", json!({"alg": "EdDSA", "typ": "at+jwt", "kid": kid})),
        ("typ missing", json!({"alg": "EdDSA", "kid": kid})),
        ("kid missing", json!({"alg": "EdDSA", "typ": "JWT"})),
        ("embedded jwk", json!({"alg": "EdDSA", "typ": "JWT", "kid": kid, "jwk": {"kty": "OKP"}})),
        ("x5u", json!({"alg": "EdDSA", "typ": "JWT", "kid": kid, "x5u": "http://127.0.0.1:1/"})),
        ("crit", json!({"alg": "EdDSA", "typ": "JWT", "kid": kid, "crit": ["exp"]})),
        ("kid injection", json!({"alg": "EdDSA", "typ": "JWT", "kid": "' OR 1=1--"})),
        ("kid path", json!({"alg": "EdDSA", "typ": "JWT", "kid": "../../etc/passwd"})),
        ("kid 10 kB", json!({"alg": "EdDSA", "typ": "JWT", "kid": "k".repeat(10_000)})),
        ("kid NUL", json!({"alg": "EdDSA", "typ": "JWT", "kid": "a\u{0}b"})),
        ("ES256", json!({"alg": "ES256", "typ": "JWT", "kid": kid})),
    ] {
        cases.push((what.into(), signed_raw(&app, &header.to_string(), &claims_text).await));
    }
    cases.push(("a refresh token".into(), data["refresh_token"].as_str().unwrap().to_string()));
    cases.push(("a secret key".into(), app.caller.key.clone()));
    cases.push(("JWS JSON serialization".into(), json!({"payload": "x", "signatures": []}).to_string()));
    cases.push(("header of 100 kB".into(), format!("{}.{}.x", "A".repeat(100_000), "B")));
    cases.push(("whitespace".into(), format!(" {token}")));

    for (what, token) in cases {
        let reply = app.send(&as_user(&app.caller, &token), Method::GET, "/v1/auth/me", None).await;
        assert!(matches!(reply.status, 401 | 400 | 431), "{what}: {} {:?}", reply.status, reply.body);
    }
    let no_application = app.raw(app.client.get(app.url("/v1/auth/me")).bearer_auth(&token)).await;
    assert_eq!(no_application.status, 401, "a token needs its x-application-id");
}

#[actix_web::test]
async fn many_sessions_refreshing_at_once_are_group_committed_and_the_chain_still_verifies() {
    let app = spawn_with(|s| s.rate_limits.sign_up_per_ip_per_minute = 0).await;
    let other = app.create_application(json!({"name": "Other"})).await;
    let mut tokens = Vec::new();
    for i in 0..12 {
        let caller = if i % 2 == 0 { &app.caller } else { &other };
        let data = sign_up(&app, caller, &format!("user{i}@example.com")).await;
        tokens.push((caller.clone(), data["refresh_token"].as_str().unwrap().to_string()));
    }
    for _round in 0..3 {
        let bodies: Vec<Value> = tokens.iter().map(|(_, token)| json!({"refresh_token": token})).collect();
        let replies = futures_util::future::join_all(
            tokens.iter().zip(&bodies).map(|((caller, _), body)| public_post(&app, caller, "/v1/auth/token", body)),
        )
        .await;
        for (slot, reply) in tokens.iter_mut().zip(replies) {
            assert_eq!(reply.status, 200, "{:?}", reply.body);
            slot.1 = reply.data()["refresh_token"].as_str().unwrap().to_string();
        }
    }
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    for caller in [&app.caller, &other] {
        let id: Uuid = caller.application_id.parse().unwrap();
        let rows = gatehouse::audit::query::verify(&shard.conn, id).await.unwrap().expect("the chain verifies");
        assert!(rows >= 6 * 2 + 6 * 3, "{rows} rows");
    }
    let refreshed = app.audit_types().await.into_iter().filter(|t| t == "session.refreshed").count();
    assert_eq!(refreshed, 18, "one row per rotation of this application");
}

#[actix_web::test]
async fn rotations_at_the_same_moment_all_succeed_and_schedule_one_key() {
    let app = spawn_app().await;
    sign_up(&app, &app.caller, "ada@example.com").await;
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    let empty = json!({});
    let rotations = futures_util::future::join_all((0..4).map(|_| app.post(&path, &empty))).await;
    assert!(rotations.iter().all(|r| r.status == 200), "{:?}", rotations.iter().map(|r| &r.body).collect::<Vec<_>>());
    let kids: std::collections::HashSet<_> = rotations.iter().map(|r| r.data()["kid"].clone()).collect();
    assert_eq!(kids.len(), 1, "one scheduled rotation, answered to all four");
    let id: Uuid = app.caller.application_id.parse().unwrap();
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let current = entity::signing_key::Entity::find()
        .filter(entity::signing_key::Column::ApplicationId.eq(id))
        .filter(entity::signing_key::Column::RetiredAt.is_null())
        .all(&shard.conn)
        .await
        .unwrap();
    assert_eq!(current.len(), 1);
    let jwks = app
        .raw(app.client.get(app.url(&format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id))))
        .await;
    assert_eq!(jwks.body["keys"].as_array().unwrap().len(), 2, "the first key and the scheduled one");
}
