//! Machine tokens: `client_credentials` at the issuer's token endpoint for
//! service accounts (RFC 6749 section 4.4, tokens in RFC 9068's profile),
//! its refusals in RFC 6749's format, and the walls between machine and
//! end-user tokens.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, Caller, Reply, TestApp};

struct Account {
    id: String,
    secret: String,
}

async fn account(app: &TestApp, caller: &Caller, scopes: Value) -> Account {
    let created =
        app.send(caller, Method::POST, "/v1/service-accounts", Some(&json!({"name": "robot", "scopes": scopes}))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.data()["id"].as_str().unwrap().to_string();
    let key =
        app.send(caller, Method::POST, &format!("/v1/service-accounts/{id}/keys"), Some(&json!({"name": "k"}))).await;
    assert_eq!(key.status, 201, "{:?}", key.body);
    Account { id, secret: key.data()["secret"].as_str().unwrap().to_string() }
}

fn endpoint(app: &TestApp, application: &str) -> String {
    app.url(&format!("/v1/applications/{application}/oauth/token"))
}

/// A form post to the token endpoint, with HTTP Basic when `basic` is given.
async fn token(app: &TestApp, application: &str, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> Reply {
    let mut request = app.client.post(endpoint(app, application)).form(form);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    app.raw(request).await
}

fn claims(token: &str) -> (Value, Value) {
    let mut parts = token.split('.').map(|p| serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(p).unwrap()));
    (parts.next().unwrap().unwrap(), parts.next().unwrap().unwrap())
}

#[actix_web::test]
async fn a_service_account_gets_a_machine_token_with_its_scopes_or_fewer() {
    let app = spawn_app().await;
    let application = app.caller.application_id.clone();
    let robot = account(&app, &app.caller, json!(["orders:write", "orders:read"])).await;
    let grant = [("grant_type", "client_credentials")];

    let issued = token(&app, &application, &grant, Some((&robot.id, &robot.secret))).await;
    assert_eq!(issued.status, 200, "{:?}", issued.body);
    assert_eq!(issued.header("cache-control"), Some("no-store"));
    assert_eq!(issued.body["token_type"], "Bearer");
    assert_eq!(issued.body["scope"], "orders:read orders:write");
    assert!(issued.body["expires_in"].as_i64().unwrap() > 0);
    assert!(issued.body.get("data").is_none(), "the standard's format, not the envelope");
    let (header, payload) = claims(issued.body["access_token"].as_str().unwrap());
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(payload["sub"], robot.id.as_str());
    assert_eq!(payload["client_id"], robot.id.as_str());
    assert_eq!(payload["aud"], application.as_str());
    assert_eq!(payload["iss"], format!("{}/v1/applications/{application}", app.state.settings.public_url()));
    assert_eq!(payload["scope"], "orders:read orders:write");

    // client_secret_post, and a narrower scope.
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", &robot.id),
        ("client_secret", &robot.secret),
        ("scope", "orders:read"),
    ];
    let narrowed = token(&app, &application, &form, None).await;
    assert_eq!(narrowed.status, 200, "{:?}", narrowed.body);
    assert_eq!(narrowed.body["scope"], "orders:read");
    assert_eq!(claims(narrowed.body["access_token"].as_str().unwrap()).1["scope"], "orders:read");
    // Never wider.
    let widened = [("grant_type", "client_credentials"), ("scope", "orders:read admin")];
    let refused = token(&app, &application, &widened, Some((&robot.id, &robot.secret))).await;
    assert_eq!((refused.status, refused.body["error"].as_str()), (400, Some("invalid_scope")));

    // Named in the discovery document.
    let discovery = app
        .raw(app.client.get(app.url(&format!("/v1/applications/{application}/.well-known/openid-configuration"))))
        .await;
    assert_eq!(
        discovery.body["token_endpoint"],
        endpoint(&app, &application).replace(&app.address, &app.state.settings.public_url())
    );
    assert!(discovery.body["grant_types_supported"].as_array().unwrap().contains(&json!("client_credentials")));
    // Issuing writes no audit row.
    assert!(!app.audit_types().await.iter().any(|t| t.starts_with("api_key.use")));
}

#[actix_web::test]
async fn malformed_requests_get_the_standards_errors_and_nothing_is_issued() {
    let app = spawn_app().await;
    let application = app.caller.application_id.clone();
    let robot = account(&app, &app.caller, json!(["a"])).await;
    let basic = Some((robot.id.as_str(), robot.secret.as_str()));
    let error = |reply: &Reply| (reply.status, reply.body["error"].as_str().unwrap_or_default().to_string());

    assert_eq!(error(&token(&app, &application, &[], basic).await), (400, "invalid_request".into()));
    let password = [("grant_type", "password")];
    assert_eq!(error(&token(&app, &application, &password, basic).await), (400, "unsupported_grant_type".into()));
    // Credentials sent two ways, a parameter twice, JSON instead of a form.
    let both = [("grant_type", "client_credentials"), ("client_id", robot.id.as_str())];
    assert_eq!(error(&token(&app, &application, &both, basic).await), (400, "invalid_request".into()));
    let twice = [("grant_type", "client_credentials"), ("grant_type", "client_credentials")];
    assert_eq!(error(&token(&app, &application, &twice, basic).await), (400, "invalid_request".into()));
    let json = app
        .client
        .post(endpoint(&app, &application))
        .basic_auth(&robot.id, Some(&robot.secret))
        .json(&json!({"grant_type": "client_credentials"}));
    assert_eq!(error(&app.raw(json).await), (400, "invalid_request".into()));
    // An application that does not exist.
    let unknown = token(&app, &uuid::Uuid::now_v7().to_string(), &[("grant_type", "client_credentials")], basic).await;
    assert_eq!(unknown.status, 404);
}

#[actix_web::test]
async fn a_client_that_does_not_authenticate_gets_invalid_client() {
    let app = spawn_app().await;
    let application = app.caller.application_id.clone();
    let grant = [("grant_type", "client_credentials")];
    let robot = account(&app, &app.caller, json!(["a"])).await;
    let other = account(&app, &app.caller, json!(["b"])).await;
    let invalid_client = |reply: Reply| {
        assert_eq!((reply.status, reply.body["error"].as_str()), (401, Some("invalid_client")), "{:?}", reply.body);
        assert_eq!(reply.header("www-authenticate"), Some("Basic realm=\"gatehouse\""));
    };
    invalid_client(token(&app, &application, &grant, None).await);
    invalid_client(token(&app, &application, &grant, Some((&robot.id, "sak_test_wrong"))).await);
    // Another account's key under this account's id.
    invalid_client(token(&app, &application, &grant, Some((&robot.id, &other.secret))).await);
    // The secret key, or an end user's access token, is no client credential.
    let bearer = app.client.post(endpoint(&app, &application)).bearer_auth(&app.caller.key).form(&grant);
    invalid_client(app.raw(bearer).await);
    let user = app.post("/v1/users", &json!({"email": "u@example.com", "password": "correct horse battery"})).await;
    assert_eq!(user.status, 201, "{:?}", user.body);
    let signed_in = app
        .raw(
            app.client
                .post(app.url("/v1/auth/sign-in"))
                .header("x-application-id", &application)
                .json(&json!({"email": "u@example.com", "password": "correct horse battery"})),
        )
        .await;
    let access = signed_in.data()["access_token"].as_str().unwrap().to_string();
    invalid_client(app.raw(app.client.post(endpoint(&app, &application)).bearer_auth(&access).form(&grant)).await);
    // Another application's service account.
    let elsewhere = app.other_account().await;
    let foreign = account(&app, &elsewhere, json!(["a"])).await;
    invalid_client(token(&app, &application, &grant, Some((&foreign.id, &foreign.secret))).await);
    assert_eq!(token(&app, &elsewhere.application_id, &grant, Some((&foreign.id, &foreign.secret))).await.status, 200);

    // Revoked key, disabled account, deleted account: refused at once.
    let keys = app.get(&format!("/v1/service-accounts/{}/keys", robot.id)).await;
    let key_id = keys.data()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(token(&app, &application, &grant, Some((&robot.id, &robot.secret))).await.status, 200);
    let revoked = app.post(&format!("/v1/service-accounts/{}/keys/{key_id}/revoke", robot.id), &json!({})).await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    invalid_client(token(&app, &application, &grant, Some((&robot.id, &robot.secret))).await);
    let disabled = app.patch(&format!("/v1/service-accounts/{}", other.id), &json!({"enabled": false})).await;
    assert_eq!(disabled.status, 200, "{:?}", disabled.body);
    invalid_client(token(&app, &application, &grant, Some((&other.id, &other.secret))).await);
    let third = account(&app, &app.caller, json!(["c"])).await;
    let deleted = app.send(&app.caller, Method::DELETE, &format!("/v1/service-accounts/{}", third.id), None).await;
    assert!(deleted.status == 200 || deleted.status == 204, "{:?}", deleted.body);
    invalid_client(token(&app, &application, &grant, Some((&third.id, &third.secret))).await);
    // A refused known key is audited (after the answer), as refused secret keys are.
    crate::wait::until("both refusals' audit rows", || async {
        let refused = app.get("/v1/audit-logs/export?type=api_key.use_refused").await;
        let reasons: Vec<&str> =
            refused.data().as_array().unwrap().iter().filter_map(|r| r["data"]["reason"].as_str()).collect();
        reasons.contains(&"revoked") && reasons.contains(&"service_account_disabled")
    })
    .await;
}

#[actix_web::test]
async fn machine_and_end_user_tokens_do_not_cross() {
    let app = spawn_app().await;
    let application = app.caller.application_id.clone();
    let robot = account(&app, &app.caller, json!(["a"])).await;
    let issued =
        token(&app, &application, &[("grant_type", "client_credentials")], Some((&robot.id, &robot.secret))).await;
    let machine = issued.body["access_token"].as_str().unwrap();
    for path in ["/v1/auth/me", "/v1/auth/me/api-keys"] {
        let reply =
            app.raw(app.client.get(app.url(path)).header("x-application-id", &application).bearer_auth(machine)).await;
        assert_eq!(reply.status, 401, "{path}: {:?}", reply.body);
    }
    // Nor is it a secret key.
    let reply = app
        .raw(app.client.get(app.url("/v1/users")).header("x-application-id", &application).bearer_auth(machine))
        .await;
    assert_eq!(reply.status, 401);
    let metrics = app.raw(app.client.get(app.url("/metrics"))).await;
    assert!(metrics.body.as_str().unwrap().contains("gatehouse_machine_tokens_total{outcome=\"issued\"}"));
}
