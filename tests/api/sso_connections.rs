//! Enterprise SSO through an organization's OpenID Provider (the certified
//! `oidc-provider` package on loopback): the connection made from the
//! issuer's discovery document, home realm discovery from an address, the
//! sign-in with the organization's membership, `org` and `amr` in the
//! tokens, `sso_required` refusing passwords, and the refusals: an address
//! outside the organization's verified domains, another connection's
//! `state`, an issuer whose document names another.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use reqwest::Method;
use sea_orm::EntityTrait;
use serde_json::{json, Value};
use url::Url;
use uuid::Uuid;

use crate::{
    helpers::{first_shard, spawn_app, spawn_with, TestApp},
    oidc::{free_port, Browser, OidcProvider, APP_ORIGIN},
};

const CLIENT_ID: &str = "acme-gatehouse";
const CLIENT_SECRET: &str = "acme-client-secret-0123456789abcdef";

/// A node with a public URL the provider can call back, allowing [`APP_ORIGIN`].
pub async fn node() -> TestApp {
    let port = free_port();
    let app = spawn_with(|settings| {
        settings.server.listen = format!("127.0.0.1:{port}");
        settings.server.public_url = Some(format!("http://127.0.0.1:{port}"));
    })
    .await;
    let id = app.caller.application_id.clone();
    let patched = app.patch(&format!("/v1/applications/{id}"), &json!({"allowed_origins": [APP_ORIGIN]})).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    app
}

pub async fn organization(app: &TestApp, name: &str) -> String {
    let made = app.post("/v1/organizations", &json!({"name": name})).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    made.data()["id"].as_str().unwrap().to_string()
}

/// The organization has verified `domain` (as its DNS check would).
pub async fn verified_domain(app: &TestApp, organization_id: &str, domain: &str) {
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let now = chrono::Utc::now();
    let row = entity::sso_domain::Model {
        id: Uuid::now_v7(),
        application_id: app.caller.application_id.parse().unwrap(),
        organization_id: organization_id.parse().unwrap(),
        domain: domain.into(),
        verification_token: "t".into(),
        status: "verified".into(),
        auto_join_role: None,
        claimed_by: None,
        created_at: now,
        verified_at: Some(now),
    };
    entity::sso_domain::Entity::insert(entity::sso_domain::ActiveModel::from(row)).exec(shard).await.unwrap();
}

pub fn redirect_uri() -> String {
    format!("{APP_ORIGIN}/signed-in")
}

pub async fn public_post(app: &TestApp, path: &str, body: &Value) -> crate::helpers::Reply {
    crate::end_users::public_post(app, &app.caller, path, body).await
}

/// Home realm discovery for `email`, with the PKCE challenge of `verifier`.
async fn start(app: &TestApp, email: &str, verifier: &str) -> crate::helpers::Reply {
    let body = json!({"email": email, "redirect_uri": redirect_uri(), "state": "app-state",
        "code_challenge": gatehouse::oauth::pkce_challenge(verifier), "code_challenge_method": "S256"});
    public_post(app, "/v1/auth/sso/start", &body).await
}

pub fn query_of(url: &str) -> std::collections::BTreeMap<String, String> {
    Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

pub fn claims_of(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// A node whose organization Acme has verified example.com and has an SSO
/// connection (`sso_required`) to a real OpenID Provider; `None` when the
/// provider cannot run here (see [`OidcProvider::start`]).
pub struct Connected {
    pub app: TestApp,
    pub organization_id: String,
    pub connection_id: String,
    pub issuer: String,
    pub _provider: OidcProvider,
}

pub async fn connected() -> Option<Connected> {
    let app = node().await;
    let acme = organization(&app, "Acme").await;
    verified_domain(&app, &acme, "example.com").await;
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    // The provider runs before the connection exists (its discovery is read
    // at creation); the client's redirect URI is registered once known.
    let provider = OidcProvider::start(port, &[CLIENT_ID], CLIENT_SECRET, "http://127.0.0.1:9/cb", None)?;
    let path = format!("/v1/organizations/{acme}/sso-connections");
    let body = json!({"protocol": "oidc", "name": "Acme Okta", "issuer": issuer, "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET, "sso_required": true});
    // An issuer spelled otherwise than its document names it is refused.
    let other_spelling = json!({"protocol": "oidc", "name": "x", "issuer": format!("{issuer}/"),
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET});
    let refused = app.post(&path, &other_spelling).await;
    assert_eq!((refused.status, refused.error_code()), (422, "sso_discovery_failed"), "{:?}", refused.body);
    let made = app.post(&path, &body).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let connection = made.data().clone();
    let connection_id = connection["id"].as_str().unwrap().to_string();
    assert_eq!(connection["token_endpoint"], format!("{issuer}/token"));
    assert_eq!(connection["scopes"], json!(["openid", "email", "profile"]));
    assert!(connection.get("client_secret").is_none());
    let callback = connection["redirect_uri"].as_str().unwrap().to_string();
    assert_eq!(callback, app.url(&format!("/v1/auth/sso/{connection_id}/callback")));
    drop(provider);
    let provider = OidcProvider::start(port, &[CLIENT_ID], CLIENT_SECRET, &callback, None).unwrap();
    Some(Connected { app, organization_id: acme, connection_id, issuer, _provider: provider })
}

#[actix_web::test]
async fn an_organizations_people_sign_in_through_its_identity_provider() {
    let Some(connected) = connected().await else { return };
    let Connected { app, organization_id: acme, connection_id, issuer, _provider } = connected;
    let callback = app.url(&format!("/v1/auth/sso/{connection_id}/callback"));

    // Home realm discovery: an address at the verified domain goes to the provider.
    let verifier = gatehouse::oauth::random_token(32);
    let started = start(&app, "Alice@Example.com", &verifier).await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    assert_eq!(started.data()["organization_id"], acme.as_str());
    let authorization_url = started.data()["authorization_url"].as_str().unwrap().to_string();
    assert!(authorization_url.starts_with(&format!("{issuer}/auth?")), "{authorization_url}");
    assert_eq!(query_of(&authorization_url)["login_hint"], "alice@example.com");
    assert_eq!(query_of(&authorization_url)["redirect_uri"], callback);
    let elsewhere = start(&app, "alice@elsewhere.example", &verifier).await;
    assert_eq!((elsewhere.status, elsewhere.error_code()), (404, "not_found"));

    // Alice signs in at her organization's provider: a user, a member, and
    // tokens in the organization that say how she signed in.
    let back = Browser::new("alice").until_application(authorization_url).await;
    let answer = query_of(&back);
    assert_eq!(answer["state"], "app-state");
    let code = answer.get("code").unwrap_or_else(|| panic!("no code: {back}"));
    let signed_in =
        public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    let data = signed_in.data();
    assert_eq!(data["user"]["email"], "alice@example.com");
    let claims = claims_of(data["access_token"].as_str().unwrap());
    assert_eq!(claims["org"], acme.as_str(), "{claims}");
    assert_eq!(claims["org_role"], "member");
    assert!(claims["amr"].as_array().is_some_and(|amr| !amr.is_empty()), "{claims}");
    assert!(claims["email_verified"].as_bool().unwrap());
    // The refreshed token says the same.
    let refreshed = public_post(&app, "/v1/auth/token", &json!({"refresh_token": data["refresh_token"]})).await;
    assert_eq!(claims_of(refreshed.data()["access_token"].as_str().unwrap())["amr"], claims["amr"]);
    let members = app.get(&format!("/v1/organizations/{acme}/memberships")).await;
    let roles: Vec<&str> = members.data().as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["member"]);
    let audit = app.get("/v1/audit-logs/export?type=sign_in.succeeded").await;
    assert_eq!(audit.data()[0]["data"]["method"], "sso", "{:?}", audit.body);

    // The organization requires SSO: a password sign-in at its domain is
    // refused, and one elsewhere is not.
    // Bob's account was made by the application before the rule.
    let bob = json!({"email": "bob@example.com", "password": "correct horse battery"});
    assert_eq!(app.post("/v1/users", &bob).await.status, 201);
    let password = public_post(&app, "/v1/auth/sign-in", &bob).await;
    assert_eq!((password.status, password.error_code()), (403, "sso_required"), "{:?}", password.body);
    let dave = json!({"email": "dave@example.com", "password": "correct horse battery"});
    let signed_up = public_post(&app, "/v1/auth/sign-up", &dave).await;
    assert_eq!((signed_up.status, signed_up.error_code()), (403, "sso_required"), "no password account there either");
    let carol = json!({"email": "carol@elsewhere.example", "password": "correct horse battery"});
    assert_eq!(public_post(&app, "/v1/auth/sign-up", &carol).await.status, 201);
    assert_eq!(public_post(&app, "/v1/auth/sign-in", &carol).await.status, 200);
    // Bob's SSO sign-in links to his account.
    let started = start(&app, "bob@example.com", &verifier).await;
    let back =
        Browser::new("bob").until_application(started.data()["authorization_url"].as_str().unwrap().into()).await;
    let code = query_of(&back)["code"].clone();
    let bob_in = public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(bob_in.data()["user"]["email"], "bob@example.com", "{:?}", bob_in.body);
    // Another account at the provider giving Alice's address (an address
    // edited there) links to nobody; nor does one the provider says it has
    // not verified.
    for (login, error) in [("alice@example.com", "account_linked_elsewhere"), ("unverified-erin", "email_not_verified")]
    {
        let started = start(&app, "alice@example.com", &verifier).await;
        let url = started.data()["authorization_url"].as_str().unwrap().to_string();
        let back = Browser::new(login).until_application(url).await;
        assert_eq!(query_of(&back).get("error").map(String::as_str), Some(error), "{login}: {back}");
    }

    // The provider speaks for the organization's domains only: an address
    // elsewhere neither links to Carol nor makes a user.
    let started = start(&app, "mallory@example.com", &verifier).await;
    let url = started.data()["authorization_url"].as_str().unwrap().to_string();
    let back = Browser::new("carol@elsewhere.example").until_application(url).await;
    assert_eq!(query_of(&back)["error"], "email_domain_not_verified", "{back}");
    let users = app.get("/v1/users?email=carol@elsewhere.example").await;
    assert_eq!(users.data().as_array().unwrap().len(), 1);

    // A state is its connection's only: another connection's callback refuses it.
    let other = organization(&app, "Other").await;
    verified_domain(&app, &other, "other.example").await;
    let second = app
        .post(
            &format!("/v1/organizations/{other}/sso-connections"),
            &json!({"protocol": "oidc",
        "name": "Other", "issuer": issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}),
        )
        .await;
    assert_eq!(second.status, 201, "{:?}", second.body);
    let second_id = second.data()["id"].as_str().unwrap();
    let started = start(&app, "alice@example.com", &verifier).await;
    let state = query_of(started.data()["authorization_url"].as_str().unwrap())["state"].clone();
    let crossed =
        app.raw(app.client.get(app.url(&format!("/v1/auth/sso/{second_id}/callback?state={state}&code=x")))).await;
    assert_eq!((crossed.status, crossed.error_code()), (400, "invalid_state"), "{:?}", crossed.body);

    // Disabled: no discovery, and passwords are taken again.
    let disabled = app
        .patch(&format!("/v1/organizations/{acme}/sso-connections/{connection_id}"), &json!({"enabled": false}))
        .await;
    assert_eq!(disabled.status, 200, "{:?}", disabled.body);
    assert_eq!(start(&app, "alice@example.com", &verifier).await.status, 404);
    assert_eq!(public_post(&app, "/v1/auth/sign-in", &bob).await.status, 200);
    // Any enabled connection of the organization that requires SSO
    // refuses passwords, not only the oldest.
    let path = format!("/v1/organizations/{acme}/sso-connections/{connection_id}");
    let relaxed = app.patch(&path, &json!({"enabled": true, "sso_required": false})).await;
    assert_eq!(relaxed.status, 200, "{:?}", relaxed.body);
    let strict = json!({"protocol": "oidc", "name": "Acme Entra", "issuer": issuer, "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET, "sso_required": true});
    let made = app.post(&format!("/v1/organizations/{acme}/sso-connections"), &strict).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert_eq!(public_post(&app, "/v1/auth/sign-in", &bob).await.error_code(), "sso_required");
    // Deleted, it requires nothing any more.
    let strict_path = format!("/v1/organizations/{acme}/sso-connections/{}", made.data()["id"].as_str().unwrap());
    let deleted = app.send(&app.caller, Method::DELETE, &strict_path, None).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(app.get(&strict_path).await.status, 404);
    assert_eq!(public_post(&app, "/v1/auth/sign-in", &bob).await.status, 200);
}

#[actix_web::test]
async fn a_connection_is_its_organizations_and_bad_requests_change_nothing() {
    let app = spawn_app().await;
    let acme = organization(&app, "Acme").await;
    let other = organization(&app, "Other").await;
    let path = format!("/v1/organizations/{acme}/sso-connections");
    let good = json!({"protocol": "oidc", "name": "Okta", "issuer": "http://127.0.0.1:9", "client_id": "c",
        "client_secret": "s"});
    for (body, code) in [
        (
            json!({"protocol": "saml", "name": "Okta", "issuer": "http://127.0.0.1:9", "client_id": "c", "client_secret": "s"}),
            "validation_failed",
        ),
        (
            json!({"protocol": "oidc", "name": "", "issuer": "http://127.0.0.1:9", "client_id": "c", "client_secret": "s"}),
            "validation_failed",
        ),
        (
            json!({"protocol": "oidc", "name": "Okta", "issuer": "ftp://idp.example", "client_id": "c", "client_secret": "s"}),
            "invalid_url",
        ),
        (
            json!({"protocol": "oidc", "name": "Okta", "issuer": "http://127.0.0.1:9", "client_id": "c", "client_secret": "s", "scopes": ["a b"]}),
            "validation_failed",
        ),
        (
            json!({"protocol": "oidc", "name": "Okta", "issuer": "http://127.0.0.1:9", "client_id": "c", "client_secret": "s", "scopes": ["email", "email"]}),
            "validation_failed",
        ),
        // Nothing answers there: the discovery fails.
        (good.clone(), "sso_discovery_failed"),
    ] {
        let refused = app.post(&path, &body).await;
        assert_eq!((refused.status, refused.error_code()), (422, code), "{body}: {:?}", refused.body);
    }
    let listed = app.get(&path).await;
    assert_eq!(listed.data(), &json!([]));
    // Another organization's connection, or none: 404.
    let missing = Uuid::now_v7();
    for (method, path) in [
        (Method::GET, format!("/v1/organizations/{other}/sso-connections/{missing}")),
        (Method::DELETE, format!("/v1/organizations/{acme}/sso-connections/{missing}")),
        (Method::GET, format!("/v1/organizations/{missing}/sso-connections")),
    ] {
        let reply = app.send(&app.caller, method, &path, None).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
    }
    // Home realm discovery with no connection, or no address.
    let none =
        public_post(&app, "/v1/auth/sso/start", &json!({"email": "a@acme.example", "redirect_uri": redirect_uri()}))
            .await;
    assert_eq!(none.status, 404, "{:?}", none.body);
    let bad =
        public_post(&app, "/v1/auth/sso/start", &json!({"email": "nobody", "redirect_uri": redirect_uri()})).await;
    assert_eq!(bad.status, 422, "{:?}", bad.body);
}

/// Sends `body` to a dashboard route as `caller`.
async fn dashboard(
    app: &TestApp,
    caller: &crate::helpers::Caller,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> crate::helpers::Reply {
    app.send(caller, method, &format!("/v1/dashboard/sso/connections{path}"), body.as_ref()).await
}

/// Alice's SSO sign-in through the connection, to the exchange's answer or
/// the error the browser was sent back with.
async fn sso_sign_in(app: &TestApp, login: &str) -> Result<Value, String> {
    let verifier = gatehouse::oauth::random_token(32);
    let started = start(app, &format!("{login}@example.com"), &verifier).await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    let url = started.data()["authorization_url"].as_str().unwrap().to_string();
    let back = query_of(&Browser::new(login).until_application(url).await);
    if let Some(error) = back.get("error") {
        return Err(error.clone());
    }
    let exchanged =
        public_post(app, "/v1/auth/oauth/exchange", &json!({"code": back["code"], "code_verifier": verifier})).await;
    assert_eq!(exchanged.status, 200, "{:?}", exchanged.body);
    Ok(exchanged.data().clone())
}

#[actix_web::test]
async fn owners_manage_their_organizations_connections_admins_see_them_and_a_role_stays_its_setters_grant() {
    use crate::invitations::member;
    let app = node().await;
    let acme = organization(&app, "Acme").await;
    verified_domain(&app, &acme, "example.com").await;
    let (owner, owner_id) = member(&app, &acme, "owner@acme.test", "owner").await;
    let (second_owner, _) = member(&app, &acme, "second@acme.test", "owner").await;
    let (admin, _) = member(&app, &acme, "admin@acme.test", "admin").await;
    let (plain, _) = member(&app, &acme, "plain@acme.test", "member").await;
    let rival = organization(&app, "Rival").await;
    let (rival_owner, _) = member(&app, &rival, "owner@rival.test", "owner").await;
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let Some(provider) = OidcProvider::start(port, &[CLIENT_ID], CLIENT_SECRET, "http://127.0.0.1:9/cb", None) else {
        return;
    };
    let body = |role: &str| {
        json!({"protocol": "oidc", "name": "Acme Okta", "issuer": issuer, "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET, "default_role": role})
    };

    // Only owners make them: whoever controls the provider signs in as anyone at the domain.
    for caller in [&plain, &admin] {
        let refused = dashboard(&app, caller, Method::POST, "", Some(body("member"))).await;
        assert_eq!((refused.status, refused.error_code()), (403, "insufficient_role"), "{:?}", refused.body);
    }
    let listed = app.get(&format!("/v1/organizations/{acme}/sso-connections")).await;
    assert_eq!(listed.data(), &json!([]), "a refusal made nothing");

    // An owner's connection granting `admin`: the secret key sees it too.
    let made = dashboard(&app, &owner, Method::POST, "", Some(body("admin"))).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let id = made.data()["id"].as_str().unwrap().to_string();
    assert_eq!(made.data()["organization_id"], acme.as_str());
    let by_key = app.get(&format!("/v1/organizations/{acme}/sso-connections/{id}")).await;
    assert_eq!(by_key.data()["default_role"], "admin");
    // An admin sees it, and changes nothing.
    assert_eq!(dashboard(&app, &admin, Method::GET, "", None).await.data().as_array().unwrap().len(), 1);
    assert_eq!(dashboard(&app, &admin, Method::GET, &format!("/{id}"), None).await.status, 200);
    let elsewhere = Some(json!({"issuer": "https://idp.example"}));
    let by_admin = dashboard(&app, &admin, Method::PATCH, &format!("/{id}"), elsewhere).await;
    assert_eq!(by_admin.error_code(), "insufficient_role", "{:?}", by_admin.body);
    assert_eq!(
        dashboard(&app, &admin, Method::DELETE, &format!("/{id}"), None).await.error_code(),
        "insufficient_role"
    );
    let renamed = dashboard(&app, &owner, Method::PATCH, &format!("/{id}"), Some(json!({"name": "Okta"}))).await;
    assert_eq!((renamed.status, renamed.data()["default_role"].as_str()), (200, Some("admin")), "{:?}", renamed.body);

    // Another organization's owner: 404 for each of its routes, and it is left as it was.
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"name": "Taken"}));
        let reply = dashboard(&app, &rival_owner, method.clone(), &format!("/{id}"), body).await;
        assert_eq!(reply.status, 404, "{method}: {:?}", reply.body);
    }
    assert_eq!(dashboard(&app, &rival_owner, Method::GET, "", None).await.data(), &json!([]));
    assert_eq!(dashboard(&app, &owner, Method::GET, &format!("/{id}"), None).await.data()["name"], "Okta");

    // The role stays its owner's grant: with its owner demoted, a first
    // sign-in is refused, and nobody joins.
    drop(provider);
    let callback = app.url(&format!("/v1/auth/sso/{id}/callback"));
    let _provider = OidcProvider::start(port, &[CLIENT_ID], CLIENT_SECRET, &callback, None).unwrap();
    let demoted =
        app.patch(&format!("/v1/organizations/{acme}/memberships/{owner_id}"), &json!({"role": "admin"})).await;
    assert_eq!(demoted.status, 200, "{:?}", demoted.body);
    assert_eq!(sso_sign_in(&app, "alice").await.err().as_deref(), Some("membership_refused"));
    let members = app.get(&format!("/v1/organizations/{acme}/memberships")).await;
    assert_eq!(members.data().as_array().unwrap().len(), 4, "Alice did not join");
    // Set again by an owner, it grants.
    let set =
        dashboard(&app, &second_owner, Method::PATCH, &format!("/{id}"), Some(json!({"default_role": "admin"}))).await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    let alice = sso_sign_in(&app, "alice").await.unwrap();
    assert_eq!(claims_of(alice["access_token"].as_str().unwrap())["org_role"], "admin");

    let deleted = dashboard(&app, &second_owner, Method::DELETE, &format!("/{id}"), None).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(dashboard(&app, &owner, Method::GET, "", None).await.data(), &json!([]));
}

/// The connection's attribute mapping: the address from another claim (as
/// Entra ID gives `preferred_username`), and a new user's profile fields
/// from the provider's claims (here from its user-info endpoint, as
/// oidc-provider keeps the ID token to `sub`), held to the profile schema.
#[actix_web::test]
async fn the_attribute_mapping_names_the_address_and_fills_a_new_users_profile() {
    let Some(connected) = connected().await else { return };
    let Connected { app, organization_id: acme, connection_id, _provider, .. } = connected;
    for field in [
        json!({"key": "department", "label": "Department", "field_type": "text"}),
        json!({"key": "full_name", "label": "Name", "field_type": "text"}),
    ] {
        assert_eq!(app.post("/v1/profile-fields", &field).await.status, 201);
    }
    let path = format!("/v1/organizations/{acme}/sso-connections/{connection_id}");
    for (mapping, place) in [
        (json!({"email": "", "profile": {}}), "attribute_mapping.email"),
        (json!({"profile": {"shoe_size": "shoe"}}), "attribute_mapping.profile.shoe_size"),
        (json!({"profile": {"department": "has space"}}), "attribute_mapping.profile.department"),
    ] {
        let refused = app.patch(&path, &json!({"attribute_mapping": mapping})).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{mapping}: {:?}", refused.body);
        assert!(refused.body.to_string().contains(place), "{place}: {:?}", refused.body);
    }
    let unknown = app.patch(&path, &json!({"attribute_mapping": {"mail": "upn"}})).await;
    assert_eq!(unknown.status, 422, "{:?}", unknown.body);
    assert_eq!(app.get(&path).await.data()["attribute_mapping"], json!({"email": "email", "profile": {}}));

    // Without a mapping, an account with no `email` claim cannot sign in.
    assert_eq!(sso_sign_in(&app, "noemail-dana").await.err().as_deref(), Some("email_required"));
    let mapping = json!({"email": "preferred_username", "profile": {"department": "department", "full_name": "name"}});
    let mapped = app.patch(&path, &json!({"attribute_mapping": mapping})).await;
    assert_eq!((mapped.status, &mapped.data()["attribute_mapping"]), (200, &mapping), "{:?}", mapped.body);
    let dana = sso_sign_in(&app, "noemail-dana").await.unwrap();
    assert_eq!(dana["user"]["email"], "dana@example.com");
    assert_eq!(dana["user"]["profile"], json!({"department": "Research", "full_name": "noemail-dana Example"}));
    // A claim of the wrong type for its field refuses the first sign-in.
    let numbered = json!({"key": "badge", "label": "Badge", "field_type": "number"});
    assert_eq!(app.post("/v1/profile-fields", &numbered).await.status, 201);
    let wrong = json!({"attribute_mapping": {"email": "preferred_username", "profile": {"badge": "department"}}});
    assert_eq!(app.patch(&path, &wrong).await.status, 200);
    assert_eq!(sso_sign_in(&app, "erin").await.err().as_deref(), Some("profile_incomplete"));
    assert_eq!(app.get("/v1/users?email=erin@example.com").await.data(), &json!([]), "nobody made");
    // The field deleted since: left out, and the sign-in goes through.
    let badge =
        app.post("/v1/profile-fields", &json!({"key": "level", "label": "Level", "field_type": "number"})).await;
    let level = json!({"attribute_mapping": {"email": "preferred_username", "profile": {"level": "department"}}});
    assert_eq!(app.patch(&path, &level).await.status, 200);
    let field = badge.data()["id"].as_str().unwrap().to_string();
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/profile-fields/{field}"), None).await.status, 200);
    let erin = sso_sign_in(&app, "erin").await.unwrap();
    assert_eq!(erin["user"]["profile"], json!({}));
}
