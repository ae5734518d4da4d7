//! Enterprise SSO through an organization's SAML 2.0 identity provider:
//! pysaml2 (an implementation independent of ours) on loopback,
//! `tests/interop/saml_idp.py`. The connection made from the IdP's
//! metadata URL, home realm discovery sending the browser with an
//! `AuthnRequest`, the response posted to our assertion consumer service,
//! the user joined to the organization with `amr: ["sso"]`; and the
//! refusals: a response replayed (into its flow and into another), an
//! unsigned one, one signed by a key not in the metadata (accepted once the
//! metadata is read again: the IdP rotated), another connection's, an
//! address outside the organization's domains. Then encrypted assertions
//! (AES-256-CBC, RSA-OAEP: xmlsec1 encrypts, we decrypt) and IdP-initiated
//! sign-ins, each assertion used once.
use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
};

use reqwest::redirect::Policy;
use serde_json::{json, Value};

use crate::{
    helpers::TestApp,
    oidc::free_port,
    sso_connections::{claims_of, node, organization, public_post, query_of, redirect_uri, verified_domain},
};

/// The pysaml2 identity provider, or `None` (the test is skipped) when
/// pysaml2 or xmlsec1 is missing and `GATEHOUSE_TEST_REQUIRE_SAML` is unset.
pub struct SamlIdp {
    child: Child,
    port: u16,
}

impl SamlIdp {
    pub fn start(port: u16, key: &str) -> Option<SamlIdp> {
        let available = Path::new("/usr/bin/xmlsec1").exists()
            && Command::new("python3").args(["-c", "import saml2"]).output().is_ok_and(|o| o.status.success());
        if !available {
            assert!(
                std::env::var_os("GATEHOUSE_TEST_REQUIRE_SAML").is_none(),
                "GATEHOUSE_TEST_REQUIRE_SAML is set but pysaml2 or xmlsec1 is missing"
            );
            eprintln!("SKIPPED: the SAML test needs pysaml2 (pip) and xmlsec1 (Debian)");
            return None;
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixture = |file: &str| root.join("tests/fixtures/saml").join(file).to_string_lossy().into_owned();
        let mut child = Command::new("python3")
            .arg(root.join("tests/interop/saml_idp.py"))
            .args([port.to_string(), fixture(&format!("{key}.key")), fixture(&format!("{key}.crt"))])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "listening", "the SAML identity provider did not start");
        Some(SamlIdp { child, port })
    }

    pub fn metadata_url(&self) -> String {
        format!("http://127.0.0.1:{}/metadata", self.port)
    }

    async fn sign(&self, what: &str) {
        self.configure(json!({"sign": what})).await;
    }

    /// Changes what the IdP signs or encrypts, or has it answer an
    /// IdP-initiated response (`unsolicited_to`): its answer.
    async fn configure(&self, settings: Value) -> Value {
        let url = format!("http://127.0.0.1:{}/sign", self.port);
        let answer = reqwest::Client::new().post(url).json(&settings).send().await.unwrap();
        answer.json().await.unwrap()
    }

    /// What the IdP's page posts for `user`, signed in there, answering the
    /// request of `sso_url` (the SSO start's `authorization_url`).
    pub async fn respond(&self, sso_url: &str, user: &str) -> Value {
        assert!(sso_url.starts_with(&format!("http://127.0.0.1:{}/sso/redirect?", self.port)), "{sso_url}");
        let url = format!("{sso_url}&user={user}");
        let answer = reqwest::get(url).await.unwrap();
        assert_eq!(answer.status(), 200);
        answer.json().await.unwrap()
    }
}

impl Drop for SamlIdp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser posting the IdP's form: our answer's status and `Location`.
pub async fn post_form(form: &Value, relay_state: Option<&str>) -> (u16, String) {
    let client = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    let fields = [
        ("SAMLResponse", form["SAMLResponse"].as_str().unwrap()),
        ("RelayState", relay_state.unwrap_or_else(|| form["RelayState"].as_str().unwrap())),
    ];
    let answer = crate::examples::send(client.post(form["action"].as_str().unwrap()).form(&fields)).await;
    let location = answer.headers().get("location").map(|l| l.to_str().unwrap().to_string()).unwrap_or_default();
    (answer.status().as_u16(), location)
}

/// Home realm discovery for `email`: the IdP URL it answers.
async fn start(app: &TestApp, email: &str, verifier: &str) -> String {
    let body = json!({"email": email, "redirect_uri": redirect_uri(), "state": "app-state",
        "code_challenge": gatehouse::oauth::pkce_challenge(verifier), "code_challenge_method": "S256"});
    let started = public_post(app, "/v1/auth/sso/start", &body).await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    started.data()["authorization_url"].as_str().unwrap().to_string()
}

async fn connect(app: &TestApp, organization_id: &str, idp: &SamlIdp) -> Value {
    let body = json!({"protocol": "saml", "name": "Acme ADFS", "idp_metadata_url": idp.metadata_url()});
    let made = app.post(&format!("/v1/organizations/{organization_id}/sso-connections"), &body).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    made.data().clone()
}

#[actix_web::test]
async fn an_organizations_people_sign_in_through_its_saml_identity_provider() {
    let port = free_port();
    let Some(idp) = SamlIdp::start(port, "idp") else { return };
    let app = node().await;
    let acme = organization(&app, "Acme").await;
    verified_domain(&app, &acme, "example.com").await;

    // Fields of the other protocol, or both kinds of metadata, are refused.
    let path = format!("/v1/organizations/{acme}/sso-connections");
    for body in [
        json!({"protocol": "saml", "name": "x", "idp_metadata_url": idp.metadata_url(), "client_id": "c"}),
        json!({"protocol": "saml", "name": "x", "idp_metadata_url": idp.metadata_url(), "idp_metadata_xml": "<x/>"}),
        json!({"protocol": "saml", "name": "x", "idp_metadata_xml": "<EntityDescriptor/>"}),
        json!({"protocol": "oidc", "name": "x", "idp_metadata_url": idp.metadata_url()}),
    ] {
        let refused = app.post(&path, &body).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{body}: {:?}", refused.body);
    }
    let connection = connect(&app, &acme, &idp).await;
    let id = connection["id"].as_str().unwrap().to_string();
    let application_id = &app.caller.application_id;
    let sp_base = app.url(&format!("/v1/applications/{application_id}/sso/{id}/saml"));
    assert_eq!(connection["protocol"], "saml");
    assert_eq!(connection["issuer"], idp.metadata_url(), "the IdP's entity ID");
    assert_eq!(connection["service_provider"]["entity_id"], format!("{sp_base}/metadata"));
    assert_eq!(connection["service_provider"]["acs_url"], format!("{sp_base}/acs"));
    assert!(connection.get("client_id").is_none() && connection.get("redirect_uri").is_none(), "{connection}");

    // Our metadata, as the IdP's administrator imports it (pysaml2 reads it below).
    let metadata = app.raw(app.client.get(format!("{sp_base}/metadata"))).await;
    assert_eq!(metadata.status, 200);
    let unknown = app.raw(
        app.client
            .get(app.url(&format!("/v1/applications/{application_id}/sso/{}/saml/metadata", uuid::Uuid::now_v7()))),
    );
    assert_eq!(unknown.await.status, 404);

    // Alice signs in at her organization's IdP.
    let verifier = gatehouse::oauth::random_token(32);
    let sso_url = start(&app, "alice@example.com", &verifier).await;
    assert!(query_of(&sso_url).contains_key("SAMLRequest"), "{sso_url}");
    let form = idp.respond(&sso_url, "alice@example.com").await;
    assert_eq!(form["action"], format!("{sp_base}/acs"));
    let (status, back) = post_form(&form, None).await;
    assert_eq!(status, 303);
    let answer = query_of(&back);
    assert_eq!(answer["state"], "app-state");
    let code = answer.get("code").unwrap_or_else(|| panic!("no code: {back}"));
    let signed_in =
        public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(signed_in.status, 200, "{:?}", signed_in.body);
    assert_eq!(signed_in.data()["user"]["email"], "alice@example.com");
    let claims = claims_of(signed_in.data()["access_token"].as_str().unwrap());
    assert_eq!(claims["org"], acme.as_str(), "{claims}");
    assert_eq!(claims["amr"], json!(["sso"]));
    assert!(claims["email_verified"].as_bool().unwrap());
    let audit = app.get("/v1/audit-logs/export?type=sign_in.succeeded").await;
    assert_eq!(audit.data()[0]["data"]["method"], "sso", "{:?}", audit.body);

    // The IdP says how she signed in (its AuthnContextClassRef): so do the tokens.
    idp.configure(json!({"authn_class": "http://schemas.microsoft.com/claims/multipleauthn"})).await;
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    let code = query_of(&back).get("code").cloned().unwrap_or_else(|| panic!("no code: {back}"));
    let again = public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(claims_of(again.data()["access_token"].as_str().unwrap())["amr"], json!(["mfa"]), "{:?}", again.body);
    idp.configure(json!({"authn_class": null})).await;

    // Replayed into its own flow: that flow is used.
    let (status, _) = post_form(&form, None).await;
    assert_eq!(status, 400);
    // Replayed into a new flow: it answers another request.
    let fresh = query_of(&start(&app, "alice@example.com", &verifier).await)["RelayState"].clone();
    let (_, back) = post_form(&form, Some(&fresh)).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "{back}");

    // Unsigned: refused.
    idp.sign("none").await;
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "{back}");

    // An address outside the organization's verified domains.
    idp.sign("assertion").await;
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "mallory@elsewhere.example").await;
    let (_, back) = post_form(&form, None).await;
    assert_eq!(query_of(&back)["error"], "email_domain_not_verified", "{back}");

    // Another connection's response (its audience, its request), with
    // this connection's flow.
    let other = organization(&app, "Other").await;
    verified_domain(&app, &other, "other.example").await;
    let other_connection = connect(&app, &other, &idp).await;
    let theirs = idp.respond(&start(&app, "bob@other.example", &verifier).await, "bob@other.example").await;
    assert_ne!(theirs["action"], form["action"]);
    let ours = query_of(&start(&app, "alice@example.com", &verifier).await)["RelayState"].clone();
    let crossed = json!({"action": form["action"], "SAMLResponse": theirs["SAMLResponse"]});
    let (_, back) = post_form(&crossed, Some(&ours)).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "{back}");
    // Its own flow at our service is another connection's: no such state here.
    let (status, _) = post_form(
        &json!({"action": form["action"], "SAMLResponse": theirs["SAMLResponse"],
        "RelayState": theirs["RelayState"]}),
        None,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(other_connection["protocol"], "saml");

    // The IdP rotates its signing key: refused until its metadata is read again.
    drop(idp);
    let idp = SamlIdp::start(port, "other").unwrap();
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "a key not in the metadata: {back}");
    let refreshed =
        app.patch(&format!("/v1/organizations/{acme}/sso-connections/{id}"), &json!({"refresh_metadata": true})).await;
    assert_eq!(refreshed.status, 200, "{:?}", refreshed.body);
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    assert!(query_of(&back).contains_key("code"), "after the rotation: {back}");
    let failed = app.get("/v1/audit-logs/export?type=sign_in.failed").await;
    let reasons: Vec<&str> =
        failed.data().as_array().unwrap().iter().filter_map(|row| row["data"]["reason"].as_str()).collect();
    assert!(reasons.iter().any(|r| r.starts_with("saml_")), "{reasons:?}");
}

#[actix_web::test]
async fn encrypted_assertions_and_idp_initiated_sign_ins_where_the_connection_allows_them() {
    let Some(idp) = SamlIdp::start(free_port(), "idp") else { return };
    let app = node().await;
    let acme = organization(&app, "Acme").await;
    verified_domain(&app, &acme, "example.com").await;
    let path = format!("/v1/organizations/{acme}/sso-connections");
    let landing = format!("{}/idp-initiated", crate::oidc::APP_ORIGIN);
    // IdP-initiated sign-ins need a landing on the application's origins.
    for mut body in [
        json!({"idp_initiated": true}),
        json!({"idp_initiated": true, "idp_initiated_redirect_uri": "https://elsewhere.example/x"}),
    ] {
        body["protocol"] = json!("saml");
        body["name"] = json!("x");
        body["idp_metadata_url"] = json!(idp.metadata_url());
        let refused = app.post(&path, &body).await;
        assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"), "{body}: {:?}", refused.body);
    }
    let body = json!({"protocol": "saml", "name": "Acme Okta", "idp_metadata_url": idp.metadata_url(),
        "encrypt_assertions": true, "idp_initiated": true, "idp_initiated_redirect_uri": landing});
    let made = app.post(&path, &body).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let connection = made.data().clone();
    assert_eq!(
        (connection["encrypt_assertions"].clone(), connection["idp_initiated"].clone()),
        (json!(true), json!(true))
    );
    let acs = connection["service_provider"]["acs_url"].as_str().unwrap().to_string();
    let metadata = reqwest::get(connection["service_provider"]["metadata_url"].as_str().unwrap()).await.unwrap();
    let metadata = metadata.text().await.unwrap();
    assert!(metadata.contains("use=\"encryption\"") && metadata.contains("use=\"signing\""), "{metadata}");

    // Encrypted to the connection's key: pysaml2 (xmlsec1) encrypts, we open it.
    idp.configure(json!({"sign": "both", "encrypt": true})).await;
    let verifier = gatehouse::oauth::random_token(32);
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    let code = query_of(&back).get("code").cloned().unwrap_or_else(|| panic!("no code: {back}"));
    let signed_in =
        public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code, "code_verifier": verifier})).await;
    assert_eq!(signed_in.data()["user"]["email"], "alice@example.com", "{:?}", signed_in.body);
    // The connection asked for encryption: a plaintext assertion is refused.
    idp.configure(json!({"encrypt": false})).await;
    let form = idp.respond(&start(&app, "alice@example.com", &verifier).await, "alice@example.com").await;
    let (_, back) = post_form(&form, None).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "{back}");

    // IdP-initiated: from the IdP's dashboard to the connection's landing.
    idp.configure(json!({"encrypt": true})).await;
    let unsolicited = idp.configure(json!({"unsolicited_to": acs, "user": "bob@example.com"})).await;
    let (status, back) = post_form(&unsolicited, None).await;
    assert_eq!(status, 303);
    assert!(back.starts_with(&landing), "{back}");
    let code = query_of(&back).get("code").cloned().unwrap_or_else(|| panic!("no code: {back}"));
    let bob = public_post(&app, "/v1/auth/oauth/exchange", &json!({"code": code})).await;
    assert_eq!(bob.data()["user"]["email"], "bob@example.com", "{:?}", bob.body);
    assert_eq!(claims_of(bob.data()["access_token"].as_str().unwrap())["org"], acme.as_str());
    // Its assertion is used once.
    let (_, back) = post_form(&unsolicited, None).await;
    assert_eq!(query_of(&back)["error"], "invalid_saml_response", "a replayed assertion: {back}");

    // Off (the default): an unsolicited response has no flow to land in.
    let off = app
        .patch(
            &format!("/v1/organizations/{acme}/sso-connections/{}", connection["id"].as_str().unwrap()),
            &json!({"idp_initiated": false}),
        )
        .await;
    assert_eq!(off.status, 200, "{:?}", off.body);
    let unsolicited = idp.configure(json!({"unsolicited_to": acs, "user": "bob@example.com"})).await;
    let (status, _) = post_form(&unsolicited, None).await;
    assert_eq!(status, 400);
}
