//! The application as an OpenID Provider: its OAuth clients (registered
//! with a secret key), and userinfo, introspection and revocation under
//! its issuer, in their standards' formats.
use reqwest::Method;
use serde_json::{json, Value};

use crate::{
    end_users::{as_user, sign_up},
    helpers::{spawn_app, spawn_with, Reply, TestApp},
};

const CALLBACK: &str = "https://app.example.com/callback";

/// Registers a client; the 201's data.
async fn client(app: &TestApp, body: Value) -> Value {
    let created = app.post("/v1/oauth-clients", &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.data().clone()
}

fn issuer_url(app: &TestApp, endpoint: &str) -> String {
    app.url(&format!("/v1/applications/{}/{endpoint}", app.caller.application_id))
}

/// A form post to one of the issuer's OAuth endpoints, with HTTP Basic when given.
async fn form(app: &TestApp, endpoint: &str, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> Reply {
    let mut request = app.client.post(issuer_url(app, endpoint)).form(form);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    app.raw(request).await
}

async fn userinfo(app: &TestApp, token: Option<&str>) -> Reply {
    let mut request = app.client.get(issuer_url(app, "oauth/userinfo"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    app.raw(request).await
}

/// A code exchanged by a confidential client, with the verifier of [`authorize_url`]'s challenge.
async fn exchange_code(app: &TestApp, code: &str, (id, secret): (&str, &str)) -> Reply {
    let fields =
        [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK), ("code_verifier", VERIFIER)];
    form(app, "oauth/token", &fields, Some((id, secret))).await
}

fn credentials(client: &Value) -> (String, String) {
    (client["client_id"].as_str().unwrap().to_string(), client["client_secret"].as_str().unwrap().to_string())
}

#[actix_web::test]
async fn a_confidential_client_is_registered_with_a_secret_shown_once_and_managed() {
    let app = spawn_app().await;
    let created = client(&app, json!({"name": "Grafana", "redirect_uris": [CALLBACK]})).await;
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["client_id"], created["id"]);
    assert_eq!(created["type"], "confidential");
    assert_eq!(created["grant_types"], json!(["authorization_code", "refresh_token"]), "the defaults");
    assert_eq!(created["scopes"], json!(["openid", "profile", "email", "offline_access"]));
    assert_eq!(created["first_party"], false);
    assert_eq!(created["id_token_signed_response_alg"], "EdDSA");
    assert_eq!(created["token_endpoint_auth_method"], "client_secret_basic");
    let secret = created["client_secret"].as_str().unwrap();
    assert!(secret.starts_with("ocs_test_"), "{secret}");
    assert_eq!(created["secret_prefix"], &secret[..12]);

    let found = app.get(&format!("/v1/oauth-clients/{id}")).await;
    assert_eq!(found.status, 200);
    assert!(found.data().get("client_secret").is_none(), "shown once");
    let listed = app.get("/v1/oauth-clients").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert!(!listed.body.to_string().contains(secret));

    let patched = app
        .patch(
            &format!("/v1/oauth-clients/{id}"),
            &json!({"name": "Grafana (prod)", "scopes": ["openid", "email"], "id_token_signed_response_alg": "EdDSA",
                    "post_logout_redirect_uris": ["https://app.example.com/"]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["name"], "Grafana (prod)");
    assert_eq!(patched.data()["scopes"], json!(["openid", "email"]));
    assert_eq!(patched.data()["redirect_uris"], json!([CALLBACK]), "untouched");

    let rotated = app.send(&app.caller, Method::POST, &format!("/v1/oauth-clients/{id}/rotate-secret"), None).await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let new_secret = rotated.data()["client_secret"].as_str().unwrap();
    assert_ne!(new_secret, secret);
    // The old secret stops authenticating at once; the new one works.
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let token = user["access_token"].as_str().unwrap();
    let old = form(&app, "oauth/introspect", &[("token", token)], Some((&id, secret))).await;
    assert_eq!(old.status, 401, "{:?}", old.body);
    assert_eq!(old.body["error"], "invalid_client");
    let new = form(&app, "oauth/introspect", &[("token", token)], Some((&id, new_secret))).await;
    assert_eq!((new.status, &new.body["active"]), (200, &json!(true)), "{:?}", new.body);

    let deleted = app.send(&app.caller, Method::DELETE, &format!("/v1/oauth-clients/{id}"), None).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(app.get(&format!("/v1/oauth-clients/{id}")).await.status, 404);
    let gone = form(&app, "oauth/introspect", &[("token", token)], Some((&id, new_secret))).await;
    assert_eq!(gone.status, 401, "a deleted client's secret is refused");

    let types = app.audit_types().await;
    for expected in
        ["oauth_client.created", "oauth_client.updated", "oauth_client.secret_rotated", "oauth_client.deleted"]
    {
        assert!(types.iter().any(|t| t == expected), "{expected} in {types:?}");
    }
    let audit = app.get("/v1/audit-logs?limit=100").await;
    assert!(!audit.body.to_string().contains(secret) && !audit.body.to_string().contains(new_secret));
}

#[actix_web::test]
async fn redirect_uris_are_exact_and_safe_and_bad_clients_are_422_storing_nothing() {
    let app = spawn_app().await;
    let public = client(
        &app,
        json!({"name": "CLI", "type": "public", "redirect_uris": ["http://127.0.0.1:8765/cb", "com.example.cli:/oauth"]}),
    )
    .await;
    assert_eq!(public["client_secret"], Value::Null, "a public client has no secret");
    assert_eq!(public["token_endpoint_auth_method"], "none");
    let id = public["id"].as_str().unwrap();
    let rotate = app.send(&app.caller, Method::POST, &format!("/v1/oauth-clients/{id}/rotate-secret"), None).await;
    assert_eq!((rotate.status, rotate.error_code()), (409, "conflict"));
    // Changed to something its type may not have: the whole client is checked.
    let patched = app.patch(&format!("/v1/oauth-clients/{id}"), &json!({"redirect_uris": []})).await;
    assert_eq!(patched.status, 422, "authorization_code needs a redirect URI: {:?}", patched.body);

    for body in [
        json!({"name": "x", "redirect_uris": ["https://*.example.com/cb"]}),
        json!({"name": "x", "redirect_uris": ["https://app.example.com/cb#frag"]}),
        json!({"name": "x", "redirect_uris": ["http://app.example.com/cb"]}),
        json!({"name": "x", "redirect_uris": ["https://user:pw@app.example.com/cb"]}),
        json!({"name": "x", "redirect_uris": ["HTTPS://App.Example.com/cb"]}),
        json!({"name": "x", "redirect_uris": ["javascript:alert(1)"]}),
        json!({"name": "x", "redirect_uris": ["com.example.app:/cb"]}),
        json!({"name": "x", "redirect_uris": []}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "grant_types": ["refresh_token"]}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "grant_types": ["password"]}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "scopes": ["email"]}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "id_token_signed_response_alg": "none"}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "id_token_signed_response_alg": "HS256"}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "type": "other"}),
        json!({"name": "", "redirect_uris": [CALLBACK]}),
        json!({"name": "x", "redirect_uris": [CALLBACK], "client_secret": "mine"}),
    ] {
        let reply = app.post("/v1/oauth-clients", &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    assert_eq!(app.get("/v1/oauth-clients").await.data().as_array().unwrap().len(), 1, "nothing stored");
}

#[actix_web::test]
async fn clients_need_their_scopes_and_another_applications_client_is_404() {
    let app = spawn_app().await;
    let created = client(&app, json!({"name": "x", "redirect_uris": [CALLBACK]})).await;
    let id = created["id"].as_str().unwrap();
    let reader = app.key_with_scopes(json!(["oauth_clients:read"])).await;
    assert_eq!(app.send(&reader, Method::GET, &format!("/v1/oauth-clients/{id}"), None).await.status, 200);
    let body = json!({"name": "y", "redirect_uris": [CALLBACK]});
    let write = app.send(&reader, Method::POST, "/v1/oauth-clients", Some(&body)).await;
    assert_eq!(write.error_code(), "insufficient_scope");
    let rotate = app.send(&reader, Method::POST, &format!("/v1/oauth-clients/{id}/rotate-secret"), None).await;
    assert_eq!(rotate.error_code(), "insufficient_scope");
    let other = app.other_account().await;
    assert_eq!(app.send(&other, Method::GET, &format!("/v1/oauth-clients/{id}"), None).await.status, 404);
    assert_eq!(app.send(&other, Method::DELETE, &format!("/v1/oauth-clients/{id}"), None).await.status, 404);
}

#[actix_web::test]
async fn userinfo_answers_the_users_claims_for_a_bearer_token_and_refuses_an_ended_session() {
    let app = spawn_app().await;
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let token = user["access_token"].as_str().unwrap();
    let id = user["user"]["id"].as_str().unwrap();
    app.patch(&format!("/v1/users/{id}"), &json!({"profile": {}})).await;

    let info = userinfo(&app, Some(token)).await;
    assert_eq!(info.status, 200, "{:?}", info.body);
    assert_eq!(info.header("cache-control"), Some("no-store"));
    assert!(info.body.get("data").is_none(), "plain JSON, not the envelope");
    assert_eq!(info.body["sub"], id);
    assert_eq!(info.body["email"], "ada@example.com");
    assert_eq!(info.body["email_verified"], false);
    assert!(info.body["updated_at"].is_i64());
    let by_post = app.raw(app.client.post(issuer_url(&app, "oauth/userinfo")).bearer_auth(token)).await;
    assert_eq!((by_post.status, &by_post.body["sub"]), (200, &json!(id)));
    let in_body = app.raw(app.client.post(issuer_url(&app, "oauth/userinfo")).form(&[("access_token", token)])).await;
    assert_eq!((in_body.status, &in_body.body["sub"]), (200, &json!(id)), "RFC 6750 section 2.2");
    let both = app
        .raw(app.client.post(issuer_url(&app, "oauth/userinfo")).bearer_auth(token).form(&[("access_token", token)]));
    assert_eq!(both.await.status, 400, "one way only");

    let missing = userinfo(&app, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.header("www-authenticate"), Some("Bearer realm=\"gatehouse\""));
    let forged = userinfo(&app, Some("eyJhbGciOiJub25lIn0.e30.")).await;
    assert_eq!(forged.status, 401);
    assert_eq!(forged.header("www-authenticate"), Some("Bearer realm=\"gatehouse\", error=\"invalid_token\""));
    // Another application's token is no token here.
    let other = app.other_account().await;
    let stranger = sign_up(&app, &other, "eve@example.com").await;
    assert_eq!(userinfo(&app, stranger["access_token"].as_str()).await.status, 401);

    let signed_out = app.send(&as_user(&app.caller, token), Method::POST, "/v1/auth/sign-out", None).await;
    assert_eq!(signed_out.status, 200, "{:?}", signed_out.body);
    assert_eq!(userinfo(&app, Some(token)).await.status, 401, "the session ended: refused at once");
}

#[actix_web::test]
async fn introspection_tells_a_confidential_client_whether_a_token_is_active() {
    let app = spawn_app().await;
    let resource = client(&app, json!({"name": "API", "redirect_uris": [CALLBACK]})).await;
    let (id, secret) = credentials(&resource);
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let access = user["access_token"].as_str().unwrap();
    let refresh = user["refresh_token"].as_str().unwrap();

    let active = form(&app, "oauth/introspect", &[("token", access)], Some((&id, &secret))).await;
    assert_eq!(active.status, 200, "{:?}", active.body);
    assert_eq!(active.header("cache-control"), Some("no-store"));
    assert_eq!(active.body["active"], true);
    assert_eq!(active.body["token_type"], "Bearer");
    assert_eq!(active.body["sub"], user["user"]["id"]);
    assert_eq!(active.body["sid"], user["session"]["id"]);
    assert_eq!(active.body["aud"], app.caller.application_id.as_str());
    // client_secret_post, and a refresh token.
    let by_post =
        form(&app, "oauth/introspect", &[("token", refresh), ("client_id", &id), ("client_secret", &secret)], None)
            .await;
    assert_eq!(by_post.body["active"], true, "{:?}", by_post.body);
    assert_eq!(by_post.body["token_type"], "refresh_token");
    assert_eq!(by_post.body["sid"], user["session"]["id"]);

    for token in ["rt_unknown", "not-a-token", "eyJhbGciOiJub25lIn0.e30."] {
        let inactive = form(&app, "oauth/introspect", &[("token", token)], Some((&id, &secret))).await;
        assert_eq!((inactive.status, inactive.body.clone()), (200, json!({"active": false})));
    }
    // A public client cannot introspect; a wrong secret is invalid_client.
    let public = client(&app, json!({"name": "SPA", "type": "public", "redirect_uris": [CALLBACK]})).await;
    let public_id = public["id"].as_str().unwrap();
    let refused = form(&app, "oauth/introspect", &[("token", access), ("client_id", public_id)], None).await;
    assert_eq!((refused.status, &refused.body["error"]), (400, &json!("unauthorized_client")), "{:?}", refused.body);
    let wrong = form(&app, "oauth/introspect", &[("token", access)], Some((&id, "ocs_test_wrong"))).await;
    assert_eq!((wrong.status, &wrong.body["error"]), (401, &json!("invalid_client")));
    assert!(wrong.header("www-authenticate").unwrap().starts_with("Basic"));
    let no_token = form(&app, "oauth/introspect", &[], Some((&id, &secret))).await;
    assert_eq!((no_token.status, &no_token.body["error"]), (400, &json!("invalid_request")));
    let both = app
        .raw(
            app.client
                .post(issuer_url(&app, "oauth/introspect"))
                .basic_auth(&id, Some(&secret))
                .form(&[("token", access), ("client_id", &id)]),
        )
        .await;
    assert_eq!((both.status, &both.body["error"]), (400, &json!("invalid_request")));
    let json_body = app
        .raw(app.client.post(issuer_url(&app, "oauth/introspect")).basic_auth(&id, Some(&secret)).json(&json!({})))
        .await;
    assert_eq!((json_body.status, &json_body.body["error"]), (400, &json!("invalid_request")));
}

#[actix_web::test]
async fn a_first_party_client_revokes_a_token_and_its_session_ends_everywhere() {
    let app = spawn_app().await;
    let first = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&first);
    let third = client(&app, json!({"name": "Partner", "redirect_uris": [CALLBACK]})).await;
    let (third_id, third_secret) = credentials(&third);
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let access = user["access_token"].as_str().unwrap();
    let refresh = user["refresh_token"].as_str().unwrap();

    // A third-party client may not revoke the application's own tokens.
    let refused = form(&app, "oauth/revoke", &[("token", refresh)], Some((&third_id, &third_secret))).await;
    assert_eq!((refused.status, &refused.body["error"]), (400, &json!("unauthorized_client")));
    assert_eq!(userinfo(&app, Some(access)).await.status, 200, "nothing was revoked");

    let revoked =
        form(&app, "oauth/revoke", &[("token", refresh), ("token_type_hint", "refresh_token")], Some((&id, &secret)))
            .await;
    assert_eq!(revoked.status, 200, "{:?}", revoked.body);
    // The session ended: its access token, its refresh token.
    assert_eq!(userinfo(&app, Some(access)).await.status, 401);
    let introspected = form(&app, "oauth/introspect", &[("token", access)], Some((&id, &secret))).await;
    assert_eq!(introspected.body, json!({"active": false}));
    let body = json!({"refresh_token": refresh});
    let refreshed = crate::end_users::public_post(&app, &app.caller, "/v1/auth/token", &body).await;
    assert_eq!(refreshed.status, 401);
    // Revoking again, or an unknown token, is 200 with nothing to do.
    assert_eq!(form(&app, "oauth/revoke", &[("token", refresh)], Some((&id, &secret))).await.status, 200);
    assert_eq!(form(&app, "oauth/revoke", &[("token", "rt_nothing")], Some((&id, &secret))).await.status, 200);
    let audit = app.get("/v1/audit-logs?type=session.revoked").await;
    let row = &audit.data()[0];
    assert_eq!(row["actor_kind"], "oauth_client", "{row}");
    assert_eq!(row["actor_id"], id.as_str());
    assert_eq!(row["data"]["reason"], "token_revocation");

    // A public first-party client revokes with its client_id alone.
    let spa =
        client(&app, json!({"name": "SPA", "type": "public", "first_party": true, "redirect_uris": [CALLBACK]})).await;
    let second = sign_up(&app, &app.caller, "bob@example.com").await;
    let spa_id = spa["id"].as_str().unwrap();
    let by_public =
        form(&app, "oauth/revoke", &[("token", second["access_token"].as_str().unwrap()), ("client_id", spa_id)], None)
            .await;
    assert_eq!(by_public.status, 200, "{:?}", by_public.body);
    assert_eq!(userinfo(&app, second["access_token"].as_str()).await.status, 401);
    let unknown = form(&app, "oauth/revoke", &[("token", "x"), ("client_id", "nobody")], None).await;
    assert_eq!((unknown.status, &unknown.body["error"]), (401, &json!("invalid_client")));
}

#[actix_web::test]
async fn discovery_names_the_providers_endpoints_and_only_what_exists() {
    let app = spawn_app().await;
    let document = app.raw(app.client.get(issuer_url(&app, ".well-known/openid-configuration"))).await;
    assert_eq!(document.status, 200);
    let issuer = format!("{}/v1/applications/{}", app.address, app.caller.application_id);
    let d = &document.body;
    assert_eq!(d["issuer"], issuer);
    assert_eq!(d["userinfo_endpoint"], format!("{issuer}/oauth/userinfo"));
    assert_eq!(d["introspection_endpoint"], format!("{issuer}/oauth/introspect"));
    assert_eq!(d["revocation_endpoint"], format!("{issuer}/oauth/revoke"));
    assert_eq!(d["authorization_endpoint"], format!("{issuer}/oauth/authorize"));
    assert_eq!(d["response_types_supported"], json!(["code"]), "no implicit flow is advertised");
    assert_eq!(d["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(d["grant_types_supported"], json!(["authorization_code", "refresh_token", "client_credentials"]));
    assert!(d["scopes_supported"].as_array().unwrap().contains(&json!("openid")));
    // RFC 8414's place for the same document: between the host and the issuer's path.
    let rfc8414 = format!("/.well-known/oauth-authorization-server/v1/applications/{}", app.caller.application_id);
    let same = app.raw(app.client.get(app.url(&rfc8414))).await;
    assert_eq!((same.status, &same.body), (200, d));
}

/// A browser for the hosted pages: no redirects followed, cookies kept by hand.
struct Browser {
    client: reqwest::Client,
    cookies: std::collections::BTreeMap<String, String>,
}

impl Browser {
    fn new() -> Browser {
        Browser { client: crate::oidc::no_redirects(), cookies: Default::default() }
    }

    fn keep_cookies(&mut self, reply: &reqwest::Response) {
        for set in reply.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.insert(name.to_string(), value.to_string());
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    /// Status, `Location`, the page's text.
    async fn get(&mut self, url: &str) -> (u16, Option<String>, String) {
        let reply = crate::examples::send(self.client.get(url).header("cookie", self.cookie_header())).await;
        self.answer(reply).await
    }

    async fn post(&mut self, url: &str, form: &[(String, String)]) -> (u16, Option<String>, String) {
        let reply =
            crate::examples::send(self.client.post(url).header("cookie", self.cookie_header()).form(form)).await;
        self.answer(reply).await
    }

    async fn answer(&mut self, reply: reqwest::Response) -> (u16, Option<String>, String) {
        self.keep_cookies(&reply);
        let status = reply.status().as_u16();
        let location = reply.headers().get("location").map(|v| v.to_str().unwrap().to_string());
        (status, location, reply.text().await.unwrap())
    }
}

/// The hidden fields of the page's first form, as its browser would send them.
fn form_fields(page: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let first_form = page.split("</form>").next().unwrap_or(page);
    for input in first_form.split("<input").skip(1) {
        let attribute = |name: &str| {
            let start = input.find(&format!("{name}=\""))? + name.len() + 2;
            let end = input[start..].find('"')? + start;
            Some(input[start..end].replace("&amp;", "&").replace("&quot;", "\"").replace("&#x27;", "'"))
        };
        if attribute("type").as_deref() != Some("hidden") {
            continue;
        }
        if let (Some(name), Some(value)) = (attribute("name"), attribute("value")) {
            fields.push((name, value));
        }
    }
    fields
}

fn query_of(location: &str) -> std::collections::BTreeMap<String, String> {
    url::Url::parse(location).unwrap().query_pairs().into_owned().collect()
}

const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

fn challenge(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// An authorization request of `client_id`; `extra` adds parameters or
/// replaces the usual ones.
fn authorize_url(app: &TestApp, client_id: &str, extra: &[(&str, &str)]) -> String {
    let challenge = challenge(VERIFIER);
    let mut parameters = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", CALLBACK),
        ("scope", "openid email offline_access"),
        ("state", "st-1"),
        ("nonce", "n-1"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ];
    for (name, value) in extra {
        parameters.retain(|(usual, _)| usual != name);
        parameters.push((name, value));
    }
    let mut url = url::Url::parse(&issuer_url(app, "oauth/authorize")).unwrap();
    url.query_pairs_mut().extend_pairs(parameters);
    url.to_string()
}

/// Signs in on the hosted page; answers the redirect's query.
async fn sign_in_on_page(
    app: &TestApp,
    browser: &mut Browser,
    url: &str,
    email: &str,
) -> std::collections::BTreeMap<String, String> {
    let (status, _, page) = browser.get(url).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<form method=\"post\""), "{page}");
    assert!(!page.contains("single sign-on"), "no organization has SSO: {page}");
    let mut fields = form_fields(&page);
    fields.push(("email".into(), email.into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, page) = browser.post(&issuer_url(app, "oauth/authorize"), &fields).await;
    assert_eq!(status, 303, "{page}");
    query_of(&location.unwrap())
}

/// The hosted sign-in counts attempts per address as the API does: past the
/// limit the page says so (429), even to the right password.
#[actix_web::test]
async fn the_hosted_sign_in_is_rate_limited_per_address_like_the_api() {
    let app = spawn_with(|s| s.rate_limits.sign_in_per_email_per_minute = 2).await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, _) = credentials(&web);
    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    let url = authorize_url(&app, &id, &[]);
    for _ in 0..2 {
        assert_eq!(attempt_on_page(&app, &mut browser, &url, "not the password").await.0, 401);
    }
    let (status, page) = attempt_on_page(&app, &mut browser, &url, crate::end_users::PASSWORD).await;
    assert_eq!(status, 429, "{page}");
    assert!(page.contains("Too many attempts"), "{page}");
}

/// Ada's address and `password` on the sign-in page of `url`: the status and page.
async fn attempt_on_page(app: &TestApp, browser: &mut Browser, url: &str, password: &str) -> (u16, String) {
    let (_, _, page) = browser.get(url).await;
    let mut fields = form_fields(&page);
    fields.extend([("email".into(), "ada@example.com".into()), ("password".into(), password.into())]);
    let (status, _, page) = browser.post(&issuer_url(app, "oauth/authorize"), &fields).await;
    (status, page)
}

#[actix_web::test]
async fn a_client_signs_a_user_in_with_a_code_and_pkce_and_gets_an_id_token() {
    let app = spawn_app().await;
    let issuer = format!("{}/v1/applications/{}", app.address, app.caller.application_id);
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();

    let answer = sign_in_on_page(&app, &mut browser, &authorize_url(&app, &id, &[]), "ada@example.com").await;
    assert_eq!(answer["state"], "st-1");
    assert_eq!(answer["iss"], issuer, "RFC 9207");
    assert!(browser.cookies.contains_key("gh_login"));
    let code = answer["code"].clone();

    let exchange = |code: String, verifier: &'static str| {
        let (app, id, secret) = (&app, id.clone(), secret.clone());
        async move {
            let form = [
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", CALLBACK),
                ("code_verifier", verifier),
            ];
            self::form(app, "oauth/token", &form, Some((&id, &secret))).await
        }
    };
    // A wrong verifier is refused and does not spend the code.
    let wrong = exchange(code.clone(), "another-verifier-of-at-least-forty-three-characters-000").await;
    assert_eq!((wrong.status, &wrong.body["error"]), (400, &json!("invalid_grant")));
    let tokens = exchange(code.clone(), VERIFIER).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    assert_eq!(tokens.header("cache-control"), Some("no-store"));
    assert_eq!(tokens.body["scope"], "openid email offline_access");
    let access = tokens.body["access_token"].as_str().unwrap();
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(id_token["iss"], issuer);
    assert_eq!(id_token["aud"], id.as_str());
    assert_eq!(id_token["azp"], id.as_str());
    assert_eq!(id_token["sub"], user["user"]["id"]);
    assert_eq!(id_token["nonce"], "n-1");
    assert_eq!(id_token["email"], "ada@example.com");
    assert_eq!(id_token["acr"], "aal1");
    assert_eq!(id_token["amr"], json!(["pwd"]));
    assert_eq!(
        id_token["at_hash"],
        gatehouse::tokens::jwt::at_hash(gatehouse::tokens::algorithms::Algorithm::EdDSA, access)
    );
    assert!(id_token["auth_time"].as_i64().unwrap() <= id_token["iat"].as_i64().unwrap());
    let info = userinfo(&app, Some(access)).await;
    assert_eq!((info.status, &info.body["sub"]), (200, &user["user"]["id"]));
    // RFC 9068: the client's own access token, which the end user's own API refuses.
    let access_claims = crate::end_users::claims_of(access);
    assert_eq!(
        (&access_claims["client_id"], &access_claims["scope"]),
        (&json!(id), &json!("openid email offline_access"))
    );
    let header = access.split('.').next().unwrap();
    let header: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, header).unwrap(),
    )
    .unwrap();
    assert_eq!(header["typ"], "at+jwt");
    let me = app.send(&as_user(&app.caller, access), Method::GET, "/v1/auth/me", None).await;
    assert_eq!(me.status, 401, "a client's token cannot act on the user's account");
    let introspected = form(&app, "oauth/introspect", &[("token", access)], Some((&id, &secret))).await;
    assert_eq!(introspected.body["client_id"], id.as_str());
    assert_eq!(introspected.body["scope"], "openid email offline_access");

    // The refresh token is the client's: refreshed here with its secret, never through the API's own refresh.
    let refresh = tokens.body["refresh_token"].as_str().unwrap();
    let body = json!({"refresh_token": refresh});
    let through_api = crate::end_users::public_post(&app, &app.caller, "/v1/auth/token", &body).await;
    assert_eq!(through_api.status, 401);
    let refreshed =
        form(&app, "oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", refresh)], Some((&id, &secret)))
            .await;
    assert_eq!(refreshed.status, 200, "{:?}", refreshed.body);
    assert_ne!(refreshed.body["refresh_token"], tokens.body["refresh_token"], "rotated");

    // The code again: refused, and what it issued is revoked.
    let replay = exchange(code, VERIFIER).await;
    assert_eq!((replay.status, &replay.body["error"]), (400, &json!("invalid_grant")));
    assert_eq!(userinfo(&app, refreshed.body["access_token"].as_str()).await.status, 401);

    // Single sign-on: another client of the application, public, gets a code with no prompt.
    let spa =
        client(&app, json!({"name": "SPA", "type": "public", "first_party": true, "redirect_uris": [CALLBACK]})).await;
    let spa_id = spa["id"].as_str().unwrap();
    let (status, location, _) = browser.get(&authorize_url(&app, spa_id, &[("prompt", "none")])).await;
    assert_eq!(status, 303);
    let answer = query_of(&location.unwrap());
    let form_fields = [
        ("grant_type", "authorization_code"),
        ("code", answer["code"].as_str()),
        ("redirect_uri", CALLBACK),
        ("code_verifier", VERIFIER),
        ("client_id", spa_id),
    ];
    let public = form(&app, "oauth/token", &form_fields, None).await;
    assert_eq!(public.status, 200, "{:?}", public.body);
    // `prompt=login` asks again even so.
    let (status, _, page) = browser.get(&authorize_url(&app, spa_id, &[("prompt", "login")])).await;
    assert_eq!(status, 200);
    assert!(page.contains("name=\"password\""));
}

#[actix_web::test]
async fn the_authorization_endpoint_refuses_by_the_rules_and_never_redirects_to_the_unknown() {
    let app = spawn_app().await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let id = web["id"].as_str().unwrap().to_string();
    let spa = client(&app, json!({"name": "SPA", "type": "public", "redirect_uris": [CALLBACK]})).await;
    let spa_id = spa["id"].as_str().unwrap();
    let mut browser = Browser::new();

    // An unknown client or redirect URI is shown, never redirected to.
    for url in [
        authorize_url(&app, "00000000-0000-0000-0000-000000000000", &[]),
        authorize_url(&app, &id, &[]).replace("callback", "elsewhere"),
    ] {
        let (status, location, page) = browser.get(&url).await;
        assert_eq!((status, location), (400, None), "{url}");
        assert!(page.contains("cannot go on"), "{page}");
    }
    // The client's own mistakes go back to it with `state` and `iss`.
    for (extra, error) in [
        (vec![("prompt", "none")], "login_required"),
        (vec![("request", "eyJhbGciOiJub25lIn0.e30.")], "request_not_supported"),
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("response_type", "token")], "unsupported_response_type"),
        (vec![("prompt", "none login")], "invalid_request"),
    ] {
        let mut url = url::Url::parse(&authorize_url(&app, &id, &[])).unwrap();
        let mut pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        for (name, value) in &extra {
            pairs.retain(|(n, _)| n != name);
            pairs.push((name.to_string(), value.to_string()));
        }
        url.query_pairs_mut().clear().extend_pairs(pairs);
        let (status, location, _) = browser.get(url.as_str()).await;
        assert_eq!(status, 303, "{extra:?}");
        let answer = query_of(&location.unwrap());
        assert_eq!(answer["error"], error, "{extra:?}");
        assert_eq!(answer["state"], "st-1");
        assert!(answer.contains_key("iss"));
    }
    // A scope the client did not register is left out, not refused (OIDC
    // Core 3.1.2.1), in any order, an unknown parameter is ignored, and the
    // request may come by POST as well as GET.
    let narrowed = authorize_url(&app, &id, &[("unknown_parameter", "1")])
        .replace("scope=openid+email+offline_access", "scope=email+admin+openid");
    assert!(narrowed.contains("scope=email+admin+openid"), "{narrowed}");
    let (status, _, page) = browser.get(&narrowed).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("name=\"password\""));
    let by_post: Vec<(String, String)> =
        url::Url::parse(&authorize_url(&app, &id, &[])).unwrap().query_pairs().into_owned().collect();
    let (status, _, page) = Browser::new().post(&issuer_url(&app, "oauth/authorize"), &by_post).await;
    assert_eq!(status, 200, "an authorization request by POST: {page}");
    assert!(page.contains("name=\"password\""));
    // A public client must use PKCE.
    let without = authorize_url(&app, spa_id, &[]).replace("&code_challenge_method=S256", "");
    let without = url::Url::parse(&without).unwrap();
    let pairs: Vec<(String, String)> =
        without.query_pairs().into_owned().filter(|(n, _)| n != "code_challenge").collect();
    let mut url = without.clone();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let (_, location, _) = browser.get(url.as_str()).await;
    assert_eq!(query_of(&location.unwrap())["error"], "invalid_request");

    // The page is locked down: a strict policy, no framing.
    let reply = app.raw(app.client.get(authorize_url(&app, &id, &[]))).await;
    let csp = reply.header("content-security-policy").unwrap().to_string();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("form-action 'self' https://app.example.com"), "{csp}");
    assert_eq!(reply.header("x-frame-options"), Some("DENY"));

    // A form without this browser's CSRF cookie is refused; a wrong password shows the page again.
    sign_up(&app, &app.caller, "ada@example.com").await;
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[])).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "ada@example.com".into()));
    fields.push(("password".into(), "wrong password!".into()));
    let mut stranger = Browser::new();
    let (status, _, _) = stranger.post(&issuer_url(&app, "oauth/authorize"), &fields).await;
    assert_eq!(status, 403, "another browser's form");
    let (status, location, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &fields).await;
    assert_eq!((status, location), (401, None));
    assert!(page.contains("The email or password is wrong."), "{page}");
}

#[actix_web::test]
async fn a_third_party_client_gets_a_code_only_after_the_user_consents() {
    let app = spawn_app().await;
    let partner = client(&app, json!({"name": "Partner <App>", "redirect_uris": [CALLBACK]})).await;
    let id = partner["id"].as_str().unwrap().to_string();
    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    let url = authorize_url(&app, &id, &[]);

    let (_, _, page) = browser.get(&url).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "ada@example.com".into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &fields).await;
    assert_eq!((status, location), (200, None), "signed in, but no code before consent");
    assert!(page.contains("Allow Partner &lt;App&gt;?"), "escaped: {page}");
    assert!(page.contains("See your email address") && page.contains("Keep access while you are away"), "{page}");
    assert!(browser.cookies.contains_key("gh_login"));

    let mut deny = form_fields(&page);
    deny.push(("consent".into(), "deny".into()));
    let (status, location, _) = browser.post(&issuer_url(&app, "oauth/authorize"), &deny).await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "access_denied");

    // Signed in already: the consent page again, and this time allowed.
    let (status, _, page) = browser.get(&url).await;
    assert_eq!(status, 200);
    let mut allow = form_fields(&page);
    allow.push(("consent".into(), "allow".into()));
    let (status, location, _) = browser.post(&issuer_url(&app, "oauth/authorize"), &allow).await;
    assert_eq!(status, 303);
    assert!(query_of(&location.unwrap()).contains_key("code"));
    // Consent from a browser that is not signed in is refused.
    let mut stranger = Browser::new();
    let (_, _, page) = stranger.get(&url).await;
    let mut forged = form_fields(&page);
    forged.push(("consent".into(), "allow".into()));
    let (status, location, _) = stranger.post(&issuer_url(&app, "oauth/authorize"), &forged).await;
    assert_eq!((status, location), (403, None));
}

#[actix_web::test]
async fn rp_initiated_logout_ends_the_hosted_sign_in_and_goes_back_only_to_a_registered_uri() {
    let app = spawn_app().await;
    let body = json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true,
                      "post_logout_redirect_uris": ["https://app.example.com/bye"]});
    let web = client(&app, body).await;
    let (id, secret) = credentials(&web);
    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    let answer = sign_in_on_page(&app, &mut browser, &authorize_url(&app, &id, &[]), "ada@example.com").await;
    let tokens = exchange_code(&app, &answer["code"], (&id, &secret)).await;
    let id_token = tokens.body["id_token"].as_str().unwrap().to_string();
    let logout = |query: &[(&str, &str)]| {
        let mut url = url::Url::parse(&issuer_url(&app, "oauth/logout")).unwrap();
        url.query_pairs_mut().extend_pairs(query);
        url.to_string()
    };

    // An address the client did not register is shown, never followed.
    let (status, location, _) = browser
        .get(&logout(&[("id_token_hint", &id_token), ("post_logout_redirect_uri", "https://evil.example/")]))
        .await;
    assert_eq!((status, location), (400, None));
    // Without a hint the user is asked; nothing ends yet.
    let (status, _, page) = browser.get(&logout(&[])).await;
    assert_eq!(status, 200);
    assert!(page.contains("Sign out of"), "{page}");
    let (status, _, _) = browser.get(&authorize_url(&app, &id, &[("prompt", "none")])).await;
    assert_eq!(status, 303, "still signed in");

    // With the ID token as the hint: signed out at once, and back with `state`.
    let (status, location, _) = browser
        .get(&logout(&[
            ("id_token_hint", &id_token),
            ("post_logout_redirect_uri", "https://app.example.com/bye"),
            ("state", "s-9"),
        ]))
        .await;
    assert_eq!(status, 303);
    assert_eq!(location.as_deref(), Some("https://app.example.com/bye?state=s-9"));
    let (status, location, _) = browser.get(&authorize_url(&app, &id, &[("prompt", "none")])).await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "login_required", "the hosted sign-in ended");

    // Asked without a hint, the user confirms on the page: an address the
    // client did not register is refused there too, and the page's own
    // form signs out.
    sign_in_on_page(&app, &mut browser, &authorize_url(&app, &id, &[]), "ada@example.com").await;
    let (_, _, page) = browser.get(&logout(&[])).await;
    let confirm = form_fields(&page);
    let mut elsewhere = confirm.clone();
    elsewhere.extend([
        ("client_id".into(), id.clone()),
        ("post_logout_redirect_uri".into(), "https://evil.example/".into()),
    ]);
    let (status, location, _) = browser.post(&logout(&[]), &elsewhere).await;
    assert_eq!((status, location), (400, None));
    let (status, _, page) = browser.post(&logout(&[]), &confirm).await;
    assert_eq!(status, 200, "{page}");
    let (_, location, _) = browser.get(&authorize_url(&app, &id, &[("prompt", "none")])).await;
    assert_eq!(query_of(&location.unwrap())["error"], "login_required", "signed out from the page");
    let types = app.audit_types().await;
    assert!(types.iter().filter(|t| *t == "session.revoked").count() >= 2, "{types:?}");
}

/// A first-party confidential client's credentials, and a code it got for
/// a user who signed in on the hosted page in `browser`.
async fn code_of_a_signed_in_user(app: &TestApp, browser: &mut Browser) -> ((String, String), String) {
    let web = client(app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    sign_up(app, &app.caller, "ada@example.com").await;
    let answer = sign_in_on_page(app, browser, &authorize_url(app, &id, &[]), "ada@example.com").await;
    ((id, secret), answer["code"].clone())
}

#[actix_web::test]
async fn a_code_exchanged_by_several_requests_at_once_is_spent_once_and_what_it_opened_ends() {
    let app = spawn_app().await;
    let mut browser = Browser::new();
    let ((id, secret), code) = code_of_a_signed_in_user(&app, &mut browser).await;

    let attempts = (0..8).map(|_| exchange_code(&app, &code, (&id, &secret)));
    let replies = futures_util::future::join_all(attempts).await;

    let issued: Vec<&Reply> = replies.iter().filter(|reply| reply.status == 200).collect();
    assert_eq!(issued.len(), 1, "{:?}", replies.iter().map(|reply| reply.status).collect::<Vec<_>>());
    assert!(replies.iter().all(|reply| reply.status == 200 || reply.body["error"] == "invalid_grant"));
    // RFC 6749 section 4.1.2: the code was replayed, so the session it opened ends.
    assert_eq!(userinfo(&app, issued[0].body["access_token"].as_str()).await.status, 401);
}

#[actix_web::test]
async fn a_code_whose_hosted_sign_in_has_ended_is_refused_and_opens_nothing() {
    let app = spawn_app().await;
    let mut browser = Browser::new();
    let ((id, secret), code) = code_of_a_signed_in_user(&app, &mut browser).await;
    let logout = issuer_url(&app, "oauth/logout");
    let (_, _, page) = browser.get(&logout).await;
    let (status, _, _) = browser.post(&logout, &form_fields(&page)).await;
    assert_eq!(status, 200, "signed out on the hosted page");

    let refused = exchange_code(&app, &code, (&id, &secret)).await;

    assert_eq!((refused.status, &refused.body["error"]), (400, &json!("invalid_grant")));
    assert!(refused.body["error_description"].as_str().unwrap().contains("sign-in"), "{:?}", refused.body);
    let session_created = app.audit_types().await.iter().filter(|t| *t == "session.created").count();
    assert_eq!(session_created, 2, "the sign-up's and the hosted sign-in's sessions, none for the code");
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_totp),
    ignore = "needs pyotp: pip3 install pyotp==2.9.0, then GATEHOUSE_TEST_REQUIRE_TOTP=1 cargo test"
)]
async fn a_user_with_a_second_factor_proves_it_on_the_hosted_page_when_the_client_asks_for_aal2() {
    let app = spawn_app().await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    let Some(enrolled) = crate::second_factors::enrol(&app, "ada@example.com").await else { return };
    let mut browser = Browser::new();

    let url = authorize_url(&app, &id, &[("acr_values", "aal2")]);
    let (_, _, page) = browser.get(&url).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "ada@example.com".into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &fields).await;
    assert_eq!((status, location), (200, None), "the second step, no code yet");
    assert!(page.contains("name=\"mfa_challenge\"") && page.contains("autocomplete=\"one-time-code\""), "{page}");

    let step = form_fields(&page);
    let mut wrong = step.clone();
    wrong.push(("code".into(), "000000".into()));
    let (status, _, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &wrong).await;
    assert_eq!(status, 401);
    assert!(page.contains("The code is wrong"), "{page}");
    let mut right = form_fields(&page);
    right.push(("code".into(), enrolled.recovery_codes[0].clone()));
    let (status, location, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &right).await;
    assert_eq!(status, 303, "{page}");
    let answer = query_of(&location.unwrap());
    let tokens = exchange_code(&app, &answer["code"], (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(id_token["acr"], "aal2");
    assert_eq!(id_token["amr"], json!(["pwd", "otp", "mfa"]));
    // Signed in at aal2: the next client asking for it gets a code with no prompt.
    let (status, location, _) =
        browser.get(&authorize_url(&app, &id, &[("acr_values", "aal2"), ("prompt", "none")])).await;
    assert_eq!(status, 303);
    assert!(query_of(&location.unwrap()).contains_key("code"));
}

#[actix_web::test]
async fn a_sign_in_without_a_second_factor_is_asked_again_when_a_client_wants_aal2() {
    let app = spawn_app().await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let id = web["id"].as_str().unwrap().to_string();
    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    sign_in_on_page(&app, &mut browser, &authorize_url(&app, &id, &[]), "ada@example.com").await;
    let (status, _, page) = browser.get(&authorize_url(&app, &id, &[("acr_values", "aal2")])).await;
    assert_eq!(status, 200, "an aal1 sign-in does not answer aal2");
    assert!(page.contains("name=\"password\""));
    let (status, location, _) =
        browser.get(&authorize_url(&app, &id, &[("acr_values", "aal2"), ("prompt", "none")])).await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "login_required");
}

/// The application's JWKS, its keys.
async fn jwks_keys(app: &TestApp) -> Vec<Value> {
    let path = format!("/v1/applications/{}/.well-known/jwks.json", app.caller.application_id);
    app.raw(app.client.get(app.url(&path))).await.body["keys"].as_array().unwrap().clone()
}

fn of_kind<'a>(keys: &'a [Value], kty: &str) -> Vec<&'a Value> {
    keys.iter().filter(|k| k["kty"] == kty).collect()
}

#[actix_web::test]
async fn an_rs256_client_gets_id_tokens_of_an_rsa_key_published_at_its_registration_and_rotated_with_the_rest() {
    use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
    let app = spawn_app().await;
    let body = json!({"name": "Legacy", "redirect_uris": [CALLBACK], "first_party": true,
                      "post_logout_redirect_uris": ["https://app.example.com/bye"], "id_token_signed_response_alg": "RS256"});
    let legacy = client(&app, body).await;
    assert_eq!(legacy["id_token_signed_response_alg"], "RS256");
    let (id, secret) = credentials(&legacy);
    let keys = jwks_keys(&app).await;
    let rsa = of_kind(&keys, "RSA");
    assert_eq!(rsa.len(), 1, "published when the client is registered: {keys:?}");
    assert_eq!((&rsa[0]["alg"], &rsa[0]["use"], &rsa[0]["e"]), (&json!("RS256"), &json!("sig"), &json!("AQAB")));
    assert_eq!(URL_SAFE_NO_PAD.decode(rsa[0]["n"].as_str().unwrap()).unwrap().len(), 256, "2048 bits");
    let rsa_kid = rsa[0]["kid"].as_str().unwrap().to_string();

    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    let answer = sign_in_on_page(&app, &mut browser, &authorize_url(&app, &id, &[]), "ada@example.com").await;
    let tokens = exchange_code(&app, &answer["code"], (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let id_token = tokens.body["id_token"].as_str().unwrap().to_string();
    let parts: Vec<&str> = id_token.split('.').collect();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header, json!({"alg": "RS256", "typ": "JWT", "kid": rsa_kid}));
    let (n, e) =
        (URL_SAFE_NO_PAD.decode(rsa[0]["n"].as_str().unwrap()).unwrap(), URL_SAFE_NO_PAD.decode("AQAB").unwrap());
    let signed = format!("{}.{}", parts[0], parts[1]);
    ring::signature::RsaPublicKeyComponents { n: &n, e: &e }
        .verify(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            signed.as_bytes(),
            &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
        )
        .expect("the ID token verifies with the published RSA key");
    let access = tokens.body["access_token"].as_str().unwrap();
    let claims = crate::end_users::claims_of(&id_token);
    use gatehouse::tokens::{algorithms::Algorithm, jwt::at_hash};
    assert_eq!(claims["at_hash"], at_hash(Algorithm::RS256, access), "SHA-256's left half");
    assert_eq!(userinfo(&app, Some(access)).await.status, 200, "the access token is the application's EdDSA one");
    assert_eq!(userinfo(&app, Some(&id_token)).await.status, 401, "an RS256 token is never an access token");
    // An RS256 ID token is a good logout hint.
    let mut url = url::Url::parse(&issuer_url(&app, "oauth/logout")).unwrap();
    url.query_pairs_mut()
        .append_pair("id_token_hint", &id_token)
        .append_pair("post_logout_redirect_uri", "https://app.example.com/bye");
    let (status, location, _) = browser.get(url.as_str()).await;
    assert_eq!((status, location.as_deref()), (303, Some("https://app.example.com/bye")));

    // A scheduled rotation publishes the next key of each algorithm; an immediate one replaces both.
    let path = format!("/v1/applications/{}/signing-keys/rotate", app.caller.application_id);
    assert_eq!(app.post(&path, &json!({})).await.status, 200);
    let keys = jwks_keys(&app).await;
    assert_eq!((of_kind(&keys, "RSA").len(), of_kind(&keys, "OKP").len()), (2, 2), "{keys:?}");
    let rotated = app.post(&path, &json!({"immediate": true})).await;
    assert_eq!(rotated.status, 200);
    let keys = jwks_keys(&app).await;
    assert_eq!((of_kind(&keys, "RSA").len(), of_kind(&keys, "OKP").len()), (1, 1), "{keys:?}");
    assert_eq!(of_kind(&keys, "OKP")[0]["kid"], rotated.data()["kid"], "the answer names the Ed25519 key");
    assert_ne!(of_kind(&keys, "RSA")[0]["kid"], rsa_kid.as_str());
}

#[actix_web::test]
async fn a_new_user_signs_up_on_the_hosted_page_with_the_profile_schema_and_goes_back_with_a_code() {
    let app = spawn_app().await;
    let field = json!({"key": "company", "label": "Company", "field_type": "text", "required": true});
    assert_eq!(app.post("/v1/profile-fields", &field).await.status, 201);
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    let mut browser = Browser::new();
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[])).await;
    assert!(page.contains("prompt=create"), "the sign-in page links to sign-up: {page}");

    let (status, _, page) = browser.get(&authorize_url(&app, &id, &[("prompt", "create")])).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("name=\"profile.company\""), "{page}");
    let submit = |page: &str, extra: &[(&str, &str)]| {
        let mut fields = form_fields(page);
        fields.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        fields
    };
    let endpoint = issuer_url(&app, "oauth/authorize");
    let typed = [("email", "new@example.com"), ("password", crate::end_users::PASSWORD)];
    let (status, location, page) = browser.post(&endpoint, &submit(&page, &typed)).await;
    assert_eq!((status, location), (422, None), "the required field is missing: nothing made");
    assert!(page.contains("Company is required"), "{page}");
    assert!(page.contains("value=\"new@example.com\""), "what was typed stays");
    let all = [typed[0], typed[1], ("profile.company", "Acme")];
    let (status, location, _) = browser.post(&endpoint, &submit(&page, &all)).await;
    assert_eq!(status, 303);
    let answer = query_of(&location.unwrap());
    let tokens = exchange_code(&app, &answer["code"], (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let claims = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(claims["email"], "new@example.com");
    let user = app.get(&format!("/v1/users/{}", claims["sub"].as_str().unwrap())).await;
    assert_eq!(user.data()["profile"], json!({"company": "Acme"}));

    // The same email again, from another browser: the form says so.
    let mut other = Browser::new();
    let (_, _, page) = other.get(&authorize_url(&app, &id, &[("prompt", "create")])).await;
    let (status, location, page) = other.post(&endpoint, &submit(&page, &all)).await;
    assert_eq!((status, location), (409, None));
    assert!(page.contains("already exists"), "{page}");
}

#[actix_web::test]
async fn a_sign_up_where_a_verified_email_is_required_asks_for_the_emailed_code_then_a_sign_in() {
    let app = spawn_app().await;
    let settings = format!("/v1/applications/{}", app.caller.application_id);
    assert_eq!(app.patch(&settings, &json!({"require_verified_email": true})).await.status, 200);
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, _) = credentials(&web);
    let mut browser = Browser::new();
    let endpoint = issuer_url(&app, "oauth/authorize");
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[("prompt", "create")])).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "grace@example.com".into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, page) = browser.post(&endpoint, &fields).await;
    assert_eq!((status, location), (200, None));
    assert!(page.contains("Verify your email"), "{page}");
    let code = crate::email_verification::code_number(&app, "grace@example.com", 1).await;

    let mut wrong = form_fields(&page);
    wrong.push(("email_code".into(), format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000)));
    let (status, _, page) = browser.post(&endpoint, &wrong).await;
    assert_eq!(status, 401, "{page}");
    let mut right = form_fields(&page);
    right.push(("email_code".into(), code));
    let (status, _, page) = browser.post(&endpoint, &right).await;
    assert_eq!(status, 200);
    assert!(page.contains("Your email is verified"), "{page}");
    let mut sign_in = form_fields(&page);
    sign_in.push(("email".into(), "grace@example.com".into()));
    sign_in.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, _) = browser.post(&endpoint, &sign_in).await;
    assert_eq!(status, 303);
    assert!(query_of(&location.unwrap()).contains_key("code"));
}

/// The page's words before its first form (its heading and what it says).
fn said(page: &str) -> &str {
    let main = page.split("<main>").nth(1).unwrap_or(page);
    main.split("<form").next().unwrap_or(main)
}

#[actix_web::test]
async fn a_forgotten_password_is_reset_on_the_hosted_pages_without_telling_who_has_an_account() {
    let app = spawn_app().await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, _) = credentials(&web);
    sign_up(&app, &app.caller, "ada@example.com").await;
    let mut browser = Browser::new();
    let endpoint = issuer_url(&app, "oauth/authorize");
    let url = authorize_url(&app, &id, &[("login_hint", "ada@example.com")]);
    let ask = |page: &str| {
        let mut fields = form_fields(page);
        fields.push(("forgot_password".into(), "ask".into()));
        fields
    };
    let (_, _, page) = browser.get(&url).await;
    assert!(page.contains("Forgot your password?"), "{page}");
    let (status, _, page) = browser.post(&endpoint, &ask(&page)).await;
    assert_eq!(status, 200, "{page}");
    assert!(said(&page).contains("Reset your password") && page.contains("value=\"ada@example.com\""), "{page}");

    let send = |page: &str, email: &str| {
        let mut fields = form_fields(page);
        fields.push(("email".into(), email.into()));
        fields
    };
    let (status, _, not_an_email) = browser.post(&endpoint, &send(&page, "not an email")).await;
    assert_eq!(status, 422, "{not_an_email}");
    // An email with no account gets the same page as a user's.
    let (unknown_status, _, unknown) = browser.post(&endpoint, &send(&not_an_email, "nobody@example.com")).await;
    let (_, _, page) = browser.get(&url).await;
    let (_, _, page) = browser.post(&endpoint, &ask(&page)).await;
    let (status, _, page) = browser.post(&endpoint, &send(&page, "ada@example.com")).await;
    assert_eq!((unknown_status, status), (200, 200), "{page}");
    assert_eq!(said(&unknown).replace("nobody@", "ada@"), said(&page));
    let (_, code) = crate::password_reset::token_sent(&app, 0).await;

    let reset = |page: &str, code: &str, password: &str| {
        let mut fields = form_fields(page);
        fields.push(("reset_code".into(), code.into()));
        fields.push(("password".into(), password.into()));
        fields
    };
    let (status, _, page) = browser.post(&endpoint, &reset(&page, "a-wrong-code", "a new good password")).await;
    assert_eq!(status, 401, "{page}");
    let (status, _, page) = browser.post(&endpoint, &reset(&page, &code, "short")).await;
    assert_eq!(status, 422, "{page}");
    assert!(page.contains("The new password must be"), "{page}");
    let (status, _, page) = browser.post(&endpoint, &reset(&page, &code, "a new good password")).await;
    assert_eq!(status, 200, "{page}");
    assert!(said(&page).contains("Your password is changed"), "{page}");

    // The old password no longer signs in; the new one does.
    let mut old = form_fields(&page);
    old.push(("email".into(), "ada@example.com".into()));
    old.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, _, page) = browser.post(&endpoint, &old).await;
    assert_eq!(status, 401, "{page}");
    let mut new = form_fields(&page);
    new.push(("email".into(), "ada@example.com".into()));
    new.push(("password".into(), "a new good password".into()));
    let (status, location, _) = browser.post(&endpoint, &new).await;
    assert_eq!(status, 303);
    assert!(query_of(&location.unwrap()).contains_key("code"));
}

#[actix_web::test]
async fn a_user_in_several_organizations_chooses_one_and_the_clients_tokens_carry_it() {
    let app = spawn_app().await;
    let scopes = json!(["openid", "email", "offline_access", "organization"]);
    let web =
        client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true, "scopes": scopes})).await;
    let (id, secret) = credentials(&web);
    let user = sign_up(&app, &app.caller, "ada@example.com").await;
    let user_id = user["user"]["id"].as_str().unwrap();
    let mut organizations = Vec::new();
    for (name, role) in [("Acme", "admin"), ("Globex", "member")] {
        let org =
            app.post("/v1/organizations", &json!({"name": name})).await.data()["id"].as_str().unwrap().to_string();
        let members = format!("/v1/organizations/{org}/memberships");
        assert_eq!(app.post(&members, &json!({"user_id": user_id, "role": role})).await.status, 201);
        organizations.push(org);
    }
    let stranger = app.post("/v1/organizations", &json!({"name": "Initech"})).await.data()["id"].clone();
    let url = authorize_url(&app, &id, &[("scope", "openid email offline_access organization")]);
    let mut browser = Browser::new();
    let endpoint = issuer_url(&app, "oauth/authorize");

    // Signed in, the user is asked which organization.
    let (_, _, page) = browser.get(&url).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "ada@example.com".into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (status, location, page) = browser.post(&endpoint, &fields).await;
    assert_eq!((status, location), (200, None), "{page}");
    assert!(said(&page).contains("Choose an organization") && page.contains("Globex"), "{page}");
    let mut chosen = form_fields(&page);
    chosen.push(("organization".into(), organizations[1].clone()));
    let (status, location, page) = browser.post(&endpoint, &chosen).await;
    assert_eq!(status, 303, "{page}");
    let code = query_of(&location.unwrap())["code"].clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let access = crate::end_users::claims_of(tokens.body["access_token"].as_str().unwrap());
    assert_eq!((&access["org"], &access["org_role"]), (&json!(organizations[1]), &json!("member")));
    assert_eq!(crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap())["org"], organizations[1]);
    let info = userinfo(&app, tokens.body["access_token"].as_str()).await;
    assert_eq!(info.body["org"], organizations[1]);
    let refresh = tokens.body["refresh_token"].as_str().unwrap();
    let refreshed =
        form(&app, "oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", refresh)], Some((&id, &secret)))
            .await;
    let access = crate::end_users::claims_of(refreshed.body["access_token"].as_str().unwrap());
    assert_eq!(access["org"], organizations[1], "a refresh keeps the organization");

    // A request that names one of the user's organizations skips the question.
    let named = format!("{url}&organization={}", organizations[0]);
    let (status, location, page) = browser.get(&named).await;
    assert_eq!(status, 303, "{page}");
    let code = query_of(&location.unwrap())["code"].clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    assert_eq!(crate::end_users::claims_of(tokens.body["access_token"].as_str().unwrap())["org_role"], "admin");
    // One the user is not in goes back to the client as `access_denied`; a chosen one the user is not in likewise.
    let (status, location, _) = browser.get(&format!("{url}&organization={}", stranger.as_str().unwrap())).await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "access_denied");
    let (_, _, page) = browser.get(&format!("{url}&prompt=login")).await;
    let mut fields = form_fields(&page);
    fields.push(("email".into(), "ada@example.com".into()));
    fields.push(("password".into(), crate::end_users::PASSWORD.into()));
    let (_, _, page) = browser.post(&endpoint, &fields).await;
    let mut forged = form_fields(&page);
    forged.push(("organization".into(), stranger.as_str().unwrap().into()));
    let (status, location, _) = browser.post(&endpoint, &forged).await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "access_denied");

    // Without the `organization` scope, no question and no organization.
    let (status, location, _) = browser.get(&authorize_url(&app, &id, &[])).await;
    assert_eq!(status, 303);
    let code = query_of(&location.unwrap())["code"].clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    assert!(crate::end_users::claims_of(tokens.body["access_token"].as_str().unwrap())["org"].is_null());
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_oidc),
    ignore = "needs node and oidc-provider: npm ci --prefix tests/interop, then GATEHOUSE_TEST_REQUIRE_OIDC=1 cargo test"
)]
async fn a_providers_button_signs_in_on_the_hosted_page_and_a_return_started_in_another_browser_is_refused() {
    use crate::{oidc, provider_sign_in};
    let provider_port = oidc::free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let app = provider_sign_in::node_with_google(&issuer).await;
    let provider_callback = app.url("/v1/auth/oauth/google/callback");
    let clients = [provider_sign_in::CLIENT_ID, oidc::OTHER_CLIENT];
    let Some(_provider) =
        oidc::OidcProvider::start(provider_port, &clients, provider_sign_in::CLIENT_SECRET, &provider_callback, None)
    else {
        return;
    };
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    let endpoint = issuer_url(&app, "oauth/authorize");
    let page = app.raw(app.client.get(authorize_url(&app, &id, &[]))).await;
    let policy = page.header("content-security-policy").unwrap_or_default().to_string();
    assert!(policy.contains(&format!("form-action 'self' https://app.example.com {issuer}")), "{policy}");

    // The button: to the provider, and back through the API's own provider sign-in, then to the client.
    async fn leave(app: &TestApp, client_id: &str, browser: &mut Browser) -> String {
        let (_, _, page) = browser.get(&authorize_url(app, client_id, &[])).await;
        assert!(page.contains("Continue with Google"), "{page}");
        let mut fields = form_fields(&page);
        fields.push(("sign_in_with".into(), "google".into()));
        let (status, location, page) = browser.post(&issuer_url(app, "oauth/authorize"), &fields).await;
        assert_eq!(status, 303, "{page}");
        location.unwrap()
    }
    let mut carol = Browser::new();
    let at_provider = leave(&app, &id, &mut carol).await;
    assert!(at_provider.starts_with(&issuer), "{at_provider}");
    let back = oidc::Browser::new("carol").with_cookies(&carol.cookies).until(at_provider, CALLBACK).await;
    let code = query_of(&back).get("code").unwrap_or_else(|| panic!("no code: {back}")).clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(id_token["email"], "carol@example.com");
    assert_eq!(id_token["amr"], json!(["fed"]), "an identity provider's sign-in");

    // Mallory stops at the return and sends its URL to a victim: the victim's
    // browser holds no verifier for it, so nobody is signed in.
    let mut mallory = Browser::new();
    let at_provider = leave(&app, &id, &mut mallory).await;
    let lure = oidc::Browser::new("mallory").with_cookies(&mallory.cookies).until(at_provider, &endpoint).await;
    assert!(lure.contains("from_provider=google") && lure.contains("code="), "{lure}");
    let mut victim = Browser::new();
    let (status, location, page) = victim.get(&lure).await;
    assert_eq!((status, location), (200, None), "{page}");
    assert!(page.contains("did not complete"), "{page}");
    assert!(!victim.cookies.contains_key("gh_login"));
}

/// An attribute of the page's element whose `id` is `id`, unescaped.
fn attribute_of(page: &str, id: &str, name: &str) -> String {
    let element = page.split(&format!("id=\"{id}\"")).nth(1).unwrap_or_else(|| panic!("no #{id}: {page}"));
    let element = &element[..element.find('>').unwrap()];
    let start = element.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let value = &element[start..start + element[start..].find('"').unwrap()];
    value.replace("&quot;", "\"").replace("&#x27;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

#[actix_web::test]
async fn a_passkey_signs_in_on_the_hosted_pages_only_where_its_domain_is_the_services() {
    const HOSTED: &str = "https://auth.example.com";
    let app = crate::helpers::spawn_with(|settings| settings.server.public_url = Some(HOSTED.into())).await;
    let settings = format!("/v1/applications/{}", app.caller.application_id);
    let on_app_domain = json!({"passkey_rp_id": "example.com", "allowed_origins": ["https://app.example.com"]});
    assert_eq!(app.patch(&settings, &on_app_domain).await.status, 200);
    let (_, mut passkey) = crate::passkeys::user_with_passkey(&app, &app.caller, "ada@example.com").await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, secret) = credentials(&web);
    let endpoint = issuer_url(&app, "oauth/authorize");
    let mut browser = Browser::new();

    // The service is not on an allowed origin of the passkey domain: no passkey here.
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[])).await;
    assert!(!page.contains("Sign in with a passkey"), "{page}");
    let mut start = form_fields(&page);
    start.push(("passkey".into(), "sign_in".into()));
    assert_eq!(browser.post(&endpoint, &start).await.0, 404);

    // The custom domain: the service's origin is allowed, on the passkey domain.
    let hosted = json!({"allowed_origins": ["https://app.example.com", HOSTED]});
    assert_eq!(app.patch(&settings, &hosted).await.status, 200);
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[])).await;
    assert!(page.contains("Sign in with a passkey"), "{page}");
    let mut start = form_fields(&page);
    start.push(("passkey".into(), "sign_in".into()));
    let reply = app.raw(app.client.post(&endpoint).header("cookie", browser.cookie_header()).form(&start)).await;
    let policy = reply.header("content-security-policy").unwrap().to_string();
    assert!(policy.contains("script-src 'nonce-") && !policy.contains("unsafe"), "{policy}");
    let (status, _, page) = browser.post(&endpoint, &start).await;
    assert_eq!(status, 200, "{page}");
    let options: Value = serde_json::from_str(&attribute_of(&page, "passkey-form", "data-options")).unwrap();
    let mut assert = form_fields(&page);
    let assertion = passkey.get(&options, HOSTED);
    assert.retain(|(name, _)| name != "passkey_credential");
    assert.push(("passkey_credential".into(), assertion.to_string()));
    let (status, location, page) = browser.post(&endpoint, &assert).await;
    assert_eq!(status, 303, "{page}");
    let code = query_of(&location.unwrap())["code"].clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!((&id_token["acr"], &id_token["amr"]), (&json!("aal2"), &json!(["pop", "mfa"])));

    // The same assertion again, its ceremony spent, or against a new
    // ceremony: the sign-in page says so, and nobody is signed in.
    let (status, location, page) = browser.post(&endpoint, &assert).await;
    assert_eq!((status, location), (200, None), "{page}");
    assert!(page.contains("The passkey was not accepted"), "{page}");
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[("prompt", "login")])).await;
    let mut start = form_fields(&page);
    start.push(("passkey".into(), "sign_in".into()));
    let (_, _, page) = browser.post(&endpoint, &start).await;
    let mut replayed = form_fields(&page);
    replayed.retain(|(name, _)| name != "passkey_credential");
    replayed.push(("passkey_credential".into(), assertion.to_string()));
    let (status, location, page) = browser.post(&endpoint, &replayed).await;
    assert_eq!((status, location), (200, None), "{page}");
    assert!(page.contains("The passkey was not accepted"), "{page}");
}

#[actix_web::test]
async fn the_hosted_pages_may_be_framed_only_by_the_applications_origins_when_it_says_so() {
    let app = spawn_app().await;
    let web = client(&app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (id, _) = credentials(&web);
    let headers = |reply: &Reply| {
        let policy = reply.header("content-security-policy").unwrap_or_default().to_string();
        let ancestors = policy.split("; ").find(|d| d.starts_with("frame-ancestors")).unwrap_or_default().to_string();
        (ancestors, reply.header("x-frame-options").map(str::to_owned))
    };
    let page = app.raw(app.client.get(authorize_url(&app, &id, &[]))).await;
    assert_eq!(headers(&page), ("frame-ancestors 'none'".into(), Some("DENY".into())));

    let settings = format!("/v1/applications/{}", app.caller.application_id);
    let framed = json!({"allowed_origins": ["https://app.example.com", "https://admin.example.com"], "hosted_pages_in_frames": true});
    let patched = app.patch(&settings, &framed).await;
    assert_eq!((patched.status, &patched.data()["hosted_pages_in_frames"]), (200, &json!(true)));
    let page = app.raw(app.client.get(authorize_url(&app, &id, &[]))).await;
    let expected = "frame-ancestors https://admin.example.com https://app.example.com"; // as stored: sorted
    assert_eq!(headers(&page), (expected.into(), None));
    assert_eq!(app.patch(&settings, &json!({"hosted_pages_in_frames": "yes"})).await.status, 422);
}

#[actix_web::test]
async fn an_organization_that_requires_sso_sends_its_people_to_its_provider_from_the_hosted_page() {
    use crate::{oidc, sso_connections};
    let Some(connected) = sso_connections::connected().await else { return };
    let app = &connected.app;
    let web = client(app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (client_id, secret) = credentials(&web);
    let endpoint = issuer_url(app, "oauth/authorize");

    // "Use single sign-on" with an address elsewhere: no such organization.
    let mut browser = Browser::new();
    let (_, _, page) = browser.get(&authorize_url(app, &client_id, &[])).await;
    assert!(page.contains("Use single sign-on"), "offered where an organization has SSO: {page}");
    let mut fields = form_fields(&page);
    fields.extend([("email".into(), "ada@elsewhere.example".into()), ("sso".into(), "find".into())]);
    let (status, _, page) = browser.post(&endpoint, &fields).await;
    assert_eq!(status, 404, "{page}");
    assert!(!page.contains("Continue with Acme Okta"), "{page}");

    // A password at the organization's domain: the page offers its provider
    // instead, and lets the browser go there.
    let (_, _, page) = browser.get(&authorize_url(app, &client_id, &[])).await;
    let mut fields = form_fields(&page);
    fields.extend([("email".into(), "ada@example.com".into()), ("password".into(), "any password at all".into())]);
    let reply =
        crate::examples::send(browser.client.post(&endpoint).header("cookie", browser.cookie_header()).form(&fields))
            .await;
    let policy = reply.headers()["content-security-policy"].to_str().unwrap().to_string();
    let (status, _, page) = browser.answer(reply).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Your organization signs you in through its identity provider"), "{page}");
    assert!(page.contains("Continue with Acme Okta"), "{page}");
    assert!(policy.contains(&connected.issuer), "{policy}");
    let mut fields = form_fields(&page);
    fields.push(("sign_in_with".into(), format!("sso:{}", connected.connection_id)));
    let (status, location, page) = browser.post(&endpoint, &fields).await;
    assert_eq!(status, 303, "{page}");
    let at_provider = location.unwrap();
    assert!(at_provider.starts_with(&connected.issuer), "{at_provider}");

    // Signed in at the provider: back to the client with a code, and an ID
    // token that says how.
    let back = oidc::Browser::new("ada").with_cookies(&browser.cookies).until(at_provider, CALLBACK).await;
    let code = query_of(&back).get("code").unwrap_or_else(|| panic!("no code: {back}")).clone();
    let tokens = exchange_code(app, &code, (&client_id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(id_token["email"], "ada@example.com");
    assert_eq!(id_token["amr"], json!(["sso"]));
    let members = app.get(&format!("/v1/organizations/{}/memberships", connected.organization_id)).await;
    assert_eq!(members.data().as_array().unwrap().len(), 1, "{:?}", members.body);
}

/// The same from the hosted page through an organization's SAML identity
/// provider (pysaml2): "Use single sign-on" finds it, the browser goes
/// there with the request, its response comes back to our assertion
/// consumer service, and the hosted page goes on to the client.
#[actix_web::test]
async fn the_hosted_page_signs_an_organizations_people_in_through_its_saml_identity_provider() {
    use crate::{saml_connections, sso_connections};
    let Some(idp) = saml_connections::SamlIdp::start(crate::oidc::free_port(), "idp") else { return };
    let app = &sso_connections::node().await;
    let acme = sso_connections::organization(app, "Acme").await;
    sso_connections::verified_domain(app, &acme, "example.com").await;
    let body = json!({"protocol": "saml", "name": "Acme ADFS", "idp_metadata_url": idp.metadata_url()});
    let made = app.post(&format!("/v1/organizations/{acme}/sso-connections"), &body).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let web = client(app, json!({"name": "Web", "redirect_uris": [CALLBACK], "first_party": true})).await;
    let (client_id, secret) = credentials(&web);
    let endpoint = issuer_url(app, "oauth/authorize");

    let mut browser = Browser::new();
    let (_, _, page) = browser.get(&authorize_url(app, &client_id, &[])).await;
    assert!(page.contains("Use single sign-on"), "{page}");
    let mut fields = form_fields(&page);
    fields.extend([("email".into(), "ada@example.com".into()), ("sso".into(), "find".into())]);
    let reply =
        crate::examples::send(browser.client.post(&endpoint).header("cookie", browser.cookie_header()).form(&fields))
            .await;
    let policy = reply.headers()["content-security-policy"].to_str().unwrap().to_string();
    let (status, location, page) = browser.answer(reply).await;
    let at_idp = match status {
        303 => location.unwrap(),
        _ => {
            assert!(page.contains("Continue with Acme ADFS"), "{status}: {page}");
            assert!(policy.contains(idp.metadata_url().trim_end_matches("/metadata")), "{policy}");
            let mut fields = form_fields(&page);
            fields.push(("sign_in_with".into(), format!("sso:{}", made.data()["id"].as_str().unwrap())));
            let (status, location, page) = browser.post(&endpoint, &fields).await;
            assert_eq!(status, 303, "{page}");
            location.unwrap()
        }
    };
    let form = idp.respond(&at_idp, "ada@example.com").await;
    let (status, back) = saml_connections::post_form(&form, None).await;
    assert_eq!(status, 303);
    assert!(back.starts_with(&endpoint), "back to the hosted page: {back}");
    let (status, location, page) = browser.get(&back).await;
    assert_eq!(status, 303, "{page}");
    let location = location.unwrap();
    assert!(location.starts_with(CALLBACK), "{location}");
    let code = query_of(&location).get("code").unwrap_or_else(|| panic!("no code: {location}")).clone();
    let tokens = exchange_code(app, &code, (&client_id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    let id_token = crate::end_users::claims_of(tokens.body["id_token"].as_str().unwrap());
    assert_eq!(id_token["email"], "ada@example.com");
    assert_eq!(id_token["amr"], json!(["sso"]));
}

/// Consent is remembered: the same scopes are not asked again (so
/// `prompt=none` works for a third party), `prompt=consent` or a wider
/// request asks again, and the user sees and withdraws it, which ends the
/// client's sessions; the export holds it, the client's deletion forgets it.
#[actix_web::test]
async fn consent_is_remembered_until_the_user_withdraws_it() {
    let app = spawn_app().await;
    let partner = client(&app, json!({"name": "Partner", "redirect_uris": [CALLBACK]})).await;
    let (id, secret) = credentials(&partner);
    let ada = sign_up(&app, &app.caller, "ada@example.com").await;
    let ada_user = crate::end_users::as_user(&app.caller, ada["access_token"].as_str().unwrap());
    let mut browser = Browser::new();
    let url = authorize_url(&app, &id, &[]);
    let silent = authorize_url(&app, &id, &[("prompt", "none")]);
    let (_, location, _) = browser.get(&silent).await;
    assert_eq!(query_of(&location.unwrap())["error"], "login_required");
    let (_, _, page) = browser.get(&url).await;
    let mut fields = form_fields(&page);
    fields.extend([("email".into(), "ada@example.com".into()), ("password".into(), crate::end_users::PASSWORD.into())]);
    let (_, _, page) = browser.post(&issuer_url(&app, "oauth/authorize"), &fields).await;
    assert!(page.contains("Allow Partner?"), "{page}");
    let (_, location, _) = browser.get(&silent).await;
    assert_eq!(query_of(&location.unwrap())["error"], "consent_required", "not allowed yet, and nothing shown");
    let mut allow = form_fields(&page);
    allow.push(("consent".into(), "allow".into()));
    let (_, location, _) = browser.post(&issuer_url(&app, "oauth/authorize"), &allow).await;
    let code = query_of(&location.unwrap())["code"].clone();
    let tokens = exchange_code(&app, &code, (&id, &secret)).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);

    // Remembered: a code at once, silently too; `prompt=consent` and a wider request ask again.
    for again in [url.clone(), silent.clone()] {
        let (status, location, _) = browser.get(&again).await;
        assert_eq!(status, 303, "{again}");
        assert!(query_of(&location.unwrap()).contains_key("code"), "{again}");
    }
    let (status, _, page) = browser.get(&authorize_url(&app, &id, &[("prompt", "consent")])).await;
    assert_eq!(status, 200);
    assert!(page.contains("Allow Partner?"));
    let (status, _, page) = browser.get(&authorize_url(&app, &id, &[("scope", "openid email profile")])).await;
    assert_eq!(status, 200, "profile was not allowed before");
    assert!(page.contains("Allow Partner?"));
    let (_, location, _) = browser.get(&authorize_url(&app, &id, &[("prompt", "none consent")])).await;
    assert_eq!(query_of(&location.unwrap())["error"], "invalid_request");

    // The user sees it, and the export holds it.
    let listed = app.send(&ada_user, Method::GET, "/v1/auth/me/consents", None).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(listed.data()[0]["client_id"], id.as_str());
    assert_eq!(listed.data()[0]["client_name"], "Partner");
    assert_eq!(listed.data()[0]["scopes"], json!(["openid", "email", "offline_access"]));
    let user_id = ada["user"]["id"].as_str().unwrap();
    let exported = app.get(&format!("/v1/users/{user_id}/export")).await;
    assert_eq!(exported.data()["consents"].as_array().unwrap().len(), 1, "{:?}", exported.body);
    let granted = app.get("/v1/audit-logs/export?type=oauth_consent.granted").await;
    assert_eq!(granted.data().as_array().unwrap().len(), 1, "{:?}", granted.body);

    // Withdrawn: the client's session ends, a code not exchanged yet is
    // spent, and the next request asks again.
    let (_, location, _) = browser.get(&url).await;
    let pending_code = query_of(&location.unwrap())["code"].clone();
    let path = format!("/v1/auth/me/consents/{id}");
    let withdrawn = app.send(&ada_user, Method::DELETE, &path, None).await;
    assert_eq!((withdrawn.status, &withdrawn.data()["sessions_ended"]), (200, &json!(1)), "{:?}", withdrawn.body);
    let refresh = tokens.body["refresh_token"].as_str().unwrap();
    let refreshed =
        form(&app, "oauth/token", &[("grant_type", "refresh_token"), ("refresh_token", refresh)], Some((&id, &secret)))
            .await;
    assert_eq!(refreshed.status, 400, "the client's refresh token ended: {:?}", refreshed.body);
    let late = exchange_code(&app, &pending_code, (&id, &secret)).await;
    assert_eq!(late.status, 400, "the code issued before the withdrawal: {:?}", late.body);
    let (_, location, _) = browser.get(&silent).await;
    assert_eq!(query_of(&location.unwrap())["error"], "consent_required");
    assert_eq!(app.send(&ada_user, Method::DELETE, &path, None).await.status, 404);
    assert_eq!(app.send(&ada_user, Method::GET, "/v1/auth/me/consents", None).await.data(), &json!([]));

    // Allowed again, then the client deleted: nothing of it is left.
    let (_, _, page) = browser.get(&url).await;
    let mut allow = form_fields(&page);
    allow.push(("consent".into(), "allow".into()));
    browser.post(&issuer_url(&app, "oauth/authorize"), &allow).await;
    assert_eq!(
        app.send(&ada_user, Method::GET, "/v1/auth/me/consents", None).await.data().as_array().unwrap().len(),
        1
    );
    // A wider request allowed: the allowance covers both.
    let (_, _, page) = browser.get(&authorize_url(&app, &id, &[("scope", "openid email profile")])).await;
    let mut wider = form_fields(&page);
    wider.push(("consent".into(), "allow".into()));
    browser.post(&issuer_url(&app, "oauth/authorize"), &wider).await;
    let listed = app.send(&ada_user, Method::GET, "/v1/auth/me/consents", None).await;
    assert_eq!(listed.data()[0]["scopes"], json!(["openid", "email", "offline_access", "profile"]));
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/oauth-clients/{id}"), None).await.status, 200);
    assert_eq!(app.send(&ada_user, Method::GET, "/v1/auth/me/consents", None).await.data(), &json!([]));
}
