//! Sign-in with an identity provider: the start's refusals, the single-use
//! `state`, the one-time code, and the whole browser flow against a real
//! OpenID provider (the certified `oidc-provider` package, started on
//! loopback as the `google` provider's endpoints).
use std::collections::BTreeMap;

use chrono::Duration;
use entity::oauth_flow;
use gatehouse::config::EndpointOverrides;
use reqwest::{Method, StatusCode};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, EntityTrait, IntoActiveModel};
use serde_json::{json, Value};
use url::Url;

use crate::{
    helpers::{first_shard, spawn_with, Caller, Reply, TestApp},
    oidc::{free_port, no_redirects, Browser, OidcProvider, APP_ORIGIN, OTHER_CLIENT},
};

pub const CLIENT_ID: &str = "gatehouse-google";
pub const CLIENT_SECRET: &str = "provider-client-secret-0123456789abcdef";

fn redirect_uri() -> String {
    format!("{APP_ORIGIN}/signed-in")
}

/// A node whose `google` endpoints are at `issuer`, with a public URL the
/// provider can call back; the application allows [`APP_ORIGIN`] and has
/// `google` enabled with its own credentials.
pub async fn node_with_google(issuer: &str) -> TestApp {
    let port = free_port();
    let issuer = issuer.to_string();
    let app = spawn_with(|settings| {
        settings.server.listen = format!("127.0.0.1:{port}");
        settings.server.public_url = Some(format!("http://127.0.0.1:{port}"));
        settings.oauth.endpoints.insert(
            "google".into(),
            EndpointOverrides {
                authorization_url: Some(format!("{issuer}/auth")),
                token_url: Some(format!("{issuer}/token")),
                userinfo_url: Some(format!("{issuer}/me")),
                jwks_url: Some(format!("{issuer}/jwks")),
                issuer: Some(issuer.clone()),
            },
        );
    })
    .await;
    let id = app.caller.application_id.clone();
    let patched = app.patch(&format!("/v1/applications/{id}"), &json!({"allowed_origins": [APP_ORIGIN]})).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    let google = json!({"provider": "google", "enabled": true, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET});
    let put =
        app.send(&app.caller, Method::PUT, &format!("/v1/applications/{id}/providers/oauth"), Some(&google)).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    app
}

fn start_path(caller: &Caller, extra: &[(&str, &str)]) -> String {
    let mut url = Url::parse("http://x/v1/auth/oauth/google/start").unwrap();
    url.query_pairs_mut()
        .append_pair("application_id", &caller.application_id)
        .append_pair("redirect_uri", &redirect_uri())
        .extend_pairs(extra);
    format!("{}?{}", url.path(), url.query().unwrap())
}

/// GET without following a redirect: the status and `Location`.
async fn navigate(url: &str) -> (StatusCode, Option<String>, String) {
    let response = no_redirects().get(url).send().await.unwrap();
    let location = response.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    (response.status(), location, response.text().await.unwrap_or_default())
}

fn query_of(url: &str) -> BTreeMap<String, String> {
    Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

fn with_query(url: &str, name: &str, value: &str) -> String {
    let mut parsed = Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .into_owned()
        .map(|(k, v)| if k == name { (k, value.to_string()) } else { (k, v) })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.into()
}

async fn exchange(app: &TestApp, caller: &Caller, body: Value) -> Reply {
    let request = app
        .client
        .post(app.url("/v1/auth/oauth/exchange"))
        .header("x-application-id", &caller.application_id)
        .json(&body);
    app.raw(request).await
}

#[actix_web::test]
async fn the_start_sends_the_browser_to_the_provider_with_state_pkce_and_nonce() {
    let app = node_with_google("https://idp.example").await;
    let (status, location, _) = navigate(&app.url(&start_path(&app.caller, &[("state", "app-state")]))).await;
    assert_eq!(status, StatusCode::FOUND);
    let location = location.unwrap();
    assert!(location.starts_with("https://idp.example/auth?"), "{location}");
    let query = query_of(&location);
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], CLIENT_ID);
    assert_eq!(query["redirect_uri"], app.url("/v1/auth/oauth/google/callback"));
    assert_eq!(query["scope"], "openid email profile");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["code_challenge"].len(), 43);
    assert!(query["nonce"].len() >= 22);
    assert!(query["state"].starts_with(&app.caller.application_id.replace('-', "")));
    assert_ne!(query["state"], "app-state", "the application's state is kept, not sent");
    // Stored: the state hashed, the verifier sealed.
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let flows = oauth_flow::Entity::find().all(shard).await.unwrap();
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].state_hash, gatehouse::crypto::sha256(&query["state"]).to_vec());
    assert_eq!(flows[0].client_state.as_deref(), Some("app-state"));
    // The verifier is sealed to this flow: it opens there, to the challenge sent.
    let context = format!("{}/oauth_flow/{}/code_verifier", flows[0].application_id, flows[0].id);
    let opened =
        gatehouse::crypto::seal::open(&app.state.master_key, &context, &flows[0].code_verifier_sealed).unwrap();
    let verifier = String::from_utf8(opened).unwrap();
    assert_eq!(gatehouse::oauth::pkce_challenge(&verifier), query["code_challenge"]);
    assert!(!flows[0].code_verifier_sealed.windows(verifier.len()).any(|w| w == verifier.as_bytes()));
    let elsewhere = format!("{}/oauth_flow/{}/code_verifier", flows[0].application_id, uuid::Uuid::now_v7());
    assert!(gatehouse::crypto::seal::open(&app.state.master_key, &elsewhere, &flows[0].code_verifier_sealed).is_err());
}

#[actix_web::test]
async fn a_start_that_cannot_be_honoured_is_refused_and_stores_nothing() {
    let app = node_with_google("https://idp.example").await;
    let caller = app.caller.clone();
    let app = &app;
    let refused = |path: String| async move {
        let reply = app.raw(app.client.get(app.url(&path))).await;
        (reply.status, reply.error_code().to_string())
    };
    // Not on the allowed origins (another host, another port, a look-alike).
    for uri in ["https://evil.example/cb", "http://127.0.0.1:4000/cb", "http://127.0.0.1:3999@evil.example/", "/cb"] {
        let path = start_path(&caller, &[]).replace(
            &url::form_urlencoded::byte_serialize(redirect_uri().as_bytes()).collect::<String>(),
            &url::form_urlencoded::byte_serialize(uri.as_bytes()).collect::<String>(),
        );
        assert_eq!(refused(path).await, (422, "invalid_url".into()), "{uri}");
    }
    // A provider the application has not enabled, or Gatehouse does not know.
    let github = start_path(&caller, &[]).replace("/google/", "/github/");
    assert_eq!(refused(github).await, (404, "not_found".into()));
    assert_eq!(refused(start_path(&caller, &[]).replace("/google/", "/myspace/")).await, (404, "not_found".into()));
    // A PKCE method other than S256, a malformed challenge, an unknown parameter.
    let plain = start_path(&caller, &[("code_challenge", &"a".repeat(43)), ("code_challenge_method", "plain")]);
    assert_eq!(refused(plain).await, (422, "validation_failed".into()));
    assert_eq!(refused(start_path(&caller, &[("code_challenge", "short")])).await, (422, "validation_failed".into()));
    assert_eq!(refused(start_path(&caller, &[("prompt", "none")])).await, (422, "validation_failed".into()));
    // No application.
    let anonymous = format!("/v1/auth/oauth/google/start?redirect_uri={}", redirect_uri());
    assert_eq!(refused(anonymous).await, (401, "unauthenticated".into()));
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    assert!(oauth_flow::Entity::find().all(shard).await.unwrap().is_empty());
}

#[actix_web::test]
async fn a_state_is_taken_once_and_not_after_ten_minutes() {
    let app = node_with_google("https://idp.example").await;
    let (_, location, _) = navigate(&app.url(&start_path(&app.caller, &[("state", "s-1")]))).await;
    let state = query_of(&location.unwrap())["state"].clone();
    let callback = |state: &str| {
        let mut url = Url::parse(&app.url("/v1/auth/oauth/google/callback")).unwrap();
        url.query_pairs_mut().append_pair("state", state).append_pair("error", "access_denied");
        url.to_string()
    };
    // The user said no at the provider: back to the application, with its state.
    let (status, back, _) = navigate(&callback(&state)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let back = back.unwrap();
    assert!(back.starts_with(&redirect_uri()), "{back}");
    assert_eq!(query_of(&back)["error"], "access_denied");
    assert_eq!(query_of(&back)["state"], "s-1");
    // The same state again, a forged one, none: nowhere to go back to.
    for url in [
        callback(&state),
        callback(&format!("{}.{}", state.split('.').next().unwrap(), "x".repeat(43))),
        app.url("/v1/auth/oauth/google/callback"),
    ] {
        let reply = app.raw(app.client.get(url)).await;
        assert_eq!((reply.status, reply.error_code()), (400, "invalid_state"), "{:?}", reply.body);
    }
    // Another provider's callback does not take this provider's state.
    let (_, location, _) = navigate(&app.url(&start_path(&app.caller, &[]))).await;
    let fresh = query_of(&location.unwrap())["state"].clone();
    let elsewhere = callback(&fresh).replace("/google/", "/github/");
    assert_eq!(app.raw(app.client.get(elsewhere)).await.error_code(), "invalid_state");
    // Ten minutes later it is refused.
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let hash = gatehouse::crypto::sha256(&fresh).to_vec();
    let flow = oauth_flow::Entity::find().all(shard).await.unwrap().into_iter().find(|f| f.state_hash == hash).unwrap();
    let mut aged = flow.into_active_model();
    aged.expires_at = Set(gatehouse::clock::now() - Duration::seconds(1));
    aged.update(shard).await.unwrap();
    assert_eq!(app.raw(app.client.get(callback(&fresh))).await.error_code(), "invalid_state");
    // The refusal at the provider is audited as a failed sign-in.
    let failed = app.get("/v1/audit-logs/export?type=sign_in.failed").await;
    let rows = failed.data().as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["data"]["method"], "oauth");
    assert_eq!(rows[0]["data"]["reason"], "provider_said_access_denied");
}

#[actix_web::test]
async fn an_unknown_code_is_refused_and_a_form_post_callback_comes_back_as_a_get() {
    let app = node_with_google("https://idp.example").await;
    for body in [json!({"code": "nope"}), json!({"code": ""}), json!({"code": "x".repeat(300)})] {
        let reply = exchange(&app, &app.caller, body).await;
        assert_eq!((reply.status, reply.error_code()), (400, "invalid_grant"), "{:?}", reply.body);
    }
    assert_eq!(exchange(&app, &app.caller, json!({"code": 1})).await.status, 422);
    let form = crate::examples::send(
        no_redirects()
            .post(app.url("/v1/auth/oauth/apple/callback"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("state=abc&code=def&user=%7B%7D"),
    )
    .await;
    assert_eq!(form.status(), StatusCode::SEE_OTHER);
    assert_eq!(form.headers()["location"], "/v1/auth/oauth/apple/callback?state=abc&code=def");
}

/// Starts a sign-in for `caller` (with the application's PKCE challenge of
/// `verifier`) and answers the provider's authorization URL.
async fn authorization_url(app: &TestApp, verifier: &str) -> String {
    let challenge = gatehouse::oauth::pkce_challenge(verifier);
    let start = start_path(&app.caller, &[("state", "app-state"), ("code_challenge", &challenge)]);
    let (status, location, body) = navigate(&app.url(&start)).await;
    assert_eq!(status, StatusCode::FOUND, "{body}");
    location.unwrap()
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_oidc),
    ignore = "needs node and oidc-provider: npm ci --prefix tests/interop, then GATEHOUSE_TEST_REQUIRE_OIDC=1 cargo test"
)]
async fn a_user_signs_in_with_a_real_openid_provider() {
    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let app = node_with_google(&issuer).await;
    let callback = app.url("/v1/auth/oauth/google/callback");
    let Some(_provider) =
        OidcProvider::start(provider_port, &[CLIENT_ID, OTHER_CLIENT], CLIENT_SECRET, &callback, None)
    else {
        return;
    };
    let verifier = gatehouse::oauth::random_token(32);

    // Alice is new: a user is created and her identity linked.
    let mut alice = Browser::new("alice");
    let back = alice.until_application(authorization_url(&app, &verifier).await).await;
    let answer = query_of(&back);
    assert!(back.starts_with(&redirect_uri()), "{back}");
    assert_eq!(answer["state"], "app-state");
    let code = answer.get("code").unwrap_or_else(|| panic!("no code: {back}")).clone();
    // A wrong verifier, none, or another application's header: refused, and the code is not spent.
    let other = app.other_account().await;
    for (caller, body) in [
        (&app.caller, json!({"code": code})),
        (&app.caller, json!({"code": code, "code_verifier": gatehouse::oauth::random_token(32)})),
        (&other, json!({"code": code, "code_verifier": verifier})),
    ] {
        let reply = exchange(&app, caller, body).await;
        assert_eq!((reply.status, reply.error_code()), (400, "invalid_grant"), "{:?}", reply.body);
    }
    let signed_in = exchange(&app, &app.caller, json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    let data = signed_in.data();
    assert_eq!(data["user"]["email"], "alice@example.com");
    assert_eq!(data["token_type"], "Bearer");
    let alice_id = data["user"]["id"].as_str().unwrap().to_string();
    let me = app
        .raw(
            app.client
                .get(app.url("/v1/auth/me"))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(data["access_token"].as_str().unwrap()),
        )
        .await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    // Once only.
    let again = exchange(&app, &app.caller, json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!((again.status, again.error_code()), (400, "invalid_grant"));
    // Alice again: the same user, found by her identity.
    let back = alice.until_application(authorization_url(&app, &verifier).await).await;
    let code = query_of(&back)["code"].clone();
    let second = exchange(&app, &app.caller, json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(second.data()["user"]["id"], alice_id.as_str());

    // Bob signed up with a password first: his verified email links.
    let bob = app
        .raw(
            app.client
                .post(app.url("/v1/auth/sign-up"))
                .header("x-application-id", &app.caller.application_id)
                .json(&json!({"email": "bob@example.com", "password": "correct horse battery"})),
        )
        .await;
    assert_eq!(bob.status, 201, "{:?}", bob.body);
    let back = Browser::new("bob").until_application(authorization_url(&app, &verifier).await).await;
    let linked = exchange(&app, &app.caller, json!({"code": query_of(&back)["code"], "code_verifier": verifier})).await;
    assert_eq!(linked.data()["user"]["id"], bob.data()["user"]["id"]);
    // With a second factor, Bob's provider sign-in needs it too, as a password one does.
    let bob_user = Caller {
        application_id: app.caller.application_id.clone(),
        key: bob.data()["access_token"].as_str().unwrap().into(),
    };
    let started = app.send(&bob_user, reqwest::Method::POST, "/v1/auth/me/mfa/totp", None).await;
    let uri = started.data()["otpauth_uri"].as_str().unwrap().to_string();
    if let Some(code) = crate::second_factors::pyotp(&uri, 0) {
        let confirm = json!({"code": code});
        assert_eq!(
            app.send(&bob_user, reqwest::Method::POST, "/v1/auth/me/mfa/totp/confirm", Some(&confirm)).await.status,
            200
        );
        let back = Browser::new("bob").until_application(authorization_url(&app, &verifier).await).await;
        let held =
            exchange(&app, &app.caller, json!({"code": query_of(&back)["code"], "code_verifier": verifier})).await;
        assert_eq!(held.data()["mfa_required"], true, "{:?}", held.body);
        assert!(held.data().get("access_token").is_none());
        let body =
            json!({"challenge": held.data()["challenge"], "code": crate::second_factors::pyotp(&uri, 30).unwrap()});
        let completed = crate::end_users::public_post(&app, &app.caller, "/v1/auth/sign-in/mfa", &body).await;
        assert_eq!(completed.status, 200, "{:?}", completed.body);
        assert_eq!(completed.data()["session"]["aal"], "aal2");
    }

    // An email the provider has not verified neither links nor creates.
    let back = Browser::new("unverified-bob").until_application(authorization_url(&app, &verifier).await).await;
    assert_eq!(query_of(&back)["error"], "email_not_verified", "{back}");
    let back = Browser::new("noemail-dave").until_application(authorization_url(&app, &verifier).await).await;
    assert_eq!(query_of(&back)["error"], "email_required", "{back}");

    // A new user the application's pre_sign_up hook refuses: its message
    // reaches the application as error_description; no user is made.
    let (hook_url, script) = crate::hooks::start_hook_receiver().await;
    let hook = app.post("/v1/hooks", &json!({"point": "pre_sign_up", "url": hook_url, "timeout_ms": 2000})).await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    *script.secret.lock().unwrap() = hook.data()["secret"].as_str().unwrap().to_string();
    *script.mode.lock().unwrap() = "deny".into();
    let back = Browser::new("erin").until_application(authorization_url(&app, &verifier).await).await;
    assert_eq!(query_of(&back)["error"], "sign_up_denied", "{back}");
    assert_eq!(query_of(&back)["error_description"], "Only employees may sign up.");
    let users = app.get("/v1/users?email=erin%40example.com").await;
    assert_eq!(users.data().as_array().unwrap().len(), 0, "{:?}", users.body);
    // A new user whose email's domain the application blocks: refused before the hook is asked.
    let restrictions = "/v1/sign-up-restrictions";
    let blocked = json!({"blocked_email_domains": ["example.com"]});
    assert_eq!(app.send(&app.caller, Method::PUT, restrictions, Some(&blocked)).await.status, 200);
    let asked = script.calls();
    let back = Browser::new("frank").until_application(authorization_url(&app, &verifier).await).await;
    assert_eq!(query_of(&back)["error"], "sign_up_denied", "{back}");
    assert_eq!(script.calls(), asked, "the hook is not asked");
    assert_eq!(app.send(&app.caller, Method::PUT, restrictions, Some(&json!({}))).await.status, 200);
    // Known users are not new: the hook is not asked.
    let back = alice.until_application(authorization_url(&app, &verifier).await).await;
    assert!(query_of(&back).contains_key("code"), "{back}");
    *script.mode.lock().unwrap() = "allow".into();

    // A nonce other than ours in the ID token: refused.
    let forged = with_query(&authorization_url(&app, &verifier).await, "nonce", "someone-elses-nonce");
    let back = Browser::new("alice").until_application(forged).await;
    assert_eq!(query_of(&back)["error"], "invalid_id_token", "{back}");
    // A code issued to another client: the provider refuses our exchange.
    let other_client = with_query(&authorization_url(&app, &verifier).await, "client_id", OTHER_CLIENT);
    let back = Browser::new("alice").until_application(other_client).await;
    assert_eq!(query_of(&back)["error"], "provider_error", "{back}");

    // A real callback replayed: the state is spent.
    let mut carol = Browser::new("carol");
    let seen_callback = carol.until(authorization_url(&app, &verifier).await, &callback).await;
    let first = carol.until_application(seen_callback.clone()).await;
    assert!(query_of(&first).contains_key("code"), "{first}");
    let replayed = app.raw(app.client.get(seen_callback)).await;
    assert_eq!((replayed.status, replayed.error_code()), (400, "invalid_state"));

    // The audit chain tells the story.
    let types = app.audit_types().await;
    for expected in ["user.created", "identity.linked", "sign_in.succeeded", "sign_in.failed"] {
        assert!(types.iter().any(|t| t == expected), "{expected} missing from {types:?}");
    }
    let succeeded = app.get("/v1/audit-logs/export?type=sign_in.succeeded").await;
    let oauth: Vec<&Value> =
        succeeded.data().as_array().unwrap().iter().filter(|r| r["data"]["method"] == "oauth").collect();
    let expected = if crate::second_factors::pyotp_available() { 4 } else { 3 };
    assert_eq!(oauth.len(), expected, "alice twice, bob linked (and bob after his second factor): {oauth:?}");
    assert!(oauth.iter().all(|r| r["data"]["provider"] == "google"));
    let linked = app.get("/v1/audit-logs/export?type=identity.linked").await;
    assert_eq!(linked.data().as_array().unwrap().len(), 3, "alice, bob and carol; not alice twice");
}

#[actix_web::test]
async fn the_start_and_the_callback_reach_the_node_of_the_applications_region() {
    let nodes = crate::helpers::us_node_with_eu_peer().await;
    let (us, eu) = (&nodes.us, &nodes.eu_caller);
    let id = &eu.application_id;
    let patched = us
        .send(eu, Method::PATCH, &format!("/v1/applications/{id}"), Some(&json!({"allowed_origins": [APP_ORIGIN]})))
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    let google = json!({"provider": "google", "enabled": true, "client_id": "c", "client_secret": "s"});
    let put = us.send(eu, Method::PUT, &format!("/v1/applications/{id}/providers/oauth"), Some(&google)).await;
    assert_eq!(put.status, 200, "{:?}", put.body);

    // Started on the us node: the eu node answers, and keeps the flow.
    let started = no_redirects().get(us.url(&start_path(eu, &[("state", "eu-state")]))).send().await.unwrap();
    assert_eq!(started.status(), StatusCode::FOUND);
    assert_eq!(started.headers()["x-gatehouse-region"], "eu");
    let location = started.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("https://accounts.google.com/"), "{location}");
    let eu_shard = &nodes.eu_state.storage.shard(first_shard("eu")).unwrap().conn;
    assert_eq!(oauth_flow::Entity::find().all(eu_shard).await.unwrap().len(), 1);

    // The provider calls back to the us node: the state names the eu application.
    let mut callback = Url::parse(&us.url("/v1/auth/oauth/google/callback")).unwrap();
    callback
        .query_pairs_mut()
        .append_pair("state", &query_of(&location)["state"])
        .append_pair("error", "access_denied");
    let back = no_redirects().get(callback).send().await.unwrap();
    assert_eq!(back.status(), StatusCode::SEE_OTHER);
    assert_eq!(back.headers()["x-gatehouse-region"], "eu");
    let back = back.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(query_of(&back)["error"], "access_denied");
    assert_eq!(query_of(&back)["state"], "eu-state");
}

/// An organization that requires SSO of its domain: its people cannot sign
/// in through another provider (here the application's Google), and
/// people elsewhere still can.
#[actix_web::test]
async fn an_organization_that_requires_sso_is_not_bypassed_through_another_provider() {
    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let app = node_with_google(&issuer).await;
    let callback = app.url("/v1/auth/oauth/google/callback");
    let Some(_provider) = OidcProvider::start(provider_port, &[CLIENT_ID], CLIENT_SECRET, &callback, None) else {
        return;
    };
    let acme = crate::sso_connections::organization(&app, "Acme").await;
    crate::sso_connections::verified_domain(&app, &acme, "example.com").await;
    let connection = json!({"protocol": "oidc", "name": "Acme Okta", "issuer": issuer, "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET, "sso_required": true});
    let made = app.post(&format!("/v1/organizations/{acme}/sso-connections"), &connection).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let verifier = gatehouse::oauth::random_token(32);
    let back = Browser::new("alice").until_application(authorization_url(&app, &verifier).await).await;
    assert_eq!(query_of(&back).get("error").map(String::as_str), Some("sso_required"), "{back}");
    assert_eq!(app.get("/v1/users?email=alice@example.com").await.data(), &json!([]), "nobody made");
    let back = Browser::new("bob@elsewhere.example").until_application(authorization_url(&app, &verifier).await).await;
    assert!(query_of(&back).contains_key("code"), "another domain signs in: {back}");
}
