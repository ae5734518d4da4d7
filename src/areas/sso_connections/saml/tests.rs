//! The service provider against an identity provider built from the same
//! library's other half (`saml-rs`'s IdP, RSA-SHA256), and the classic
//! attacks on a SAML service provider as known-bad inputs: each altered
//! response is refused.
//! The independent identity provider (pysaml2) is `tests/interop/saml_idp.py`.
use std::time::{Duration, SystemTime};

use base64::{engine::general_purpose::STANDARD, Engine};
use saml_rs::{
    AuthnRequest, BrowserInput, CertificatePem, Credentials, EntityId, IdpConfig, IdpValidationPolicy,
    MetadataTrustPolicy, NameId, NameIdFormat, PrivateKeyPem, ReplayPolicy, RespondSso, Saml, SamlValidationContext,
    SpDescriptor, SsoEndpoint, Subject,
};
use uuid::Uuid;

use super::*;

const IDP_KEY: &str = include_str!("../../../../tests/fixtures/saml/idp.key");
const IDP_CERT: &str = include_str!("../../../../tests/fixtures/saml/idp.crt");
const OTHER_KEY: &str = include_str!("../../../../tests/fixtures/saml/other.key");
const OTHER_CERT: &str = include_str!("../../../../tests/fixtures/saml/other.crt");
const IDP_ENTITY: &str = "https://idp.example.com/metadata";
const RELAY_STATE: &str = "0123456789abcdef0123456789abcdef.state";

fn idp(key: &str, cert: &str) -> Saml<saml_rs::Idp> {
    idp_with(key, cert, saml_rs::XmlPolicy::default())
}

fn idp_with(key: &str, cert: &str, xml: saml_rs::XmlPolicy) -> Saml<saml_rs::Idp> {
    let credentials = Credentials {
        signing_key: Some(PrivateKeyPem::new(key)),
        signing_certificate: Some(CertificatePem::new(cert)),
        ..Credentials::default()
    };
    let config = IdpConfig::builder(EntityId::try_new(IDP_ENTITY).unwrap())
        .sso_endpoint(SsoEndpoint::redirect("https://idp.example.com/sso").unwrap())
        .credentials(credentials)
        .validation(IdpValidationPolicy::recommended())
        .xml(xml)
        .build()
        .unwrap();
    Saml::idp(config).unwrap()
}

fn metadata() -> String {
    idp(IDP_KEY, IDP_CERT).metadata_xml().to_string()
}

fn sp() -> ServiceProvider {
    ServiceProvider::of("https://auth.example.com/", Uuid::from_u128(1), Uuid::from_u128(2))
}

/// A response of the identity provider (signed with `key`) to a request of
/// `to`, and that request's ID.
struct Issued {
    xml: String,
    request_id: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Signed {
    Response,
    Assertion,
}

fn issue(to: &ServiceProvider, key: &str, cert: &str, name_id: &str, signed: Signed) -> Issued {
    issue_by(&idp(key, cert), to, name_id, signed)
}

fn issue_by(idp: &Saml<saml_rs::Idp>, to: &ServiceProvider, name_id: &str, signed: Signed) -> Issued {
    let requested = request(to, &metadata(), RELAY_STATE).unwrap();
    let query = requested.url.split_once('?').unwrap().1.to_string();
    // This identity provider signs the assertion when the SP's metadata
    // wants it, else the response.
    let mut sp_metadata = to.metadata_xml().unwrap();
    if signed == Signed::Assertion {
        sp_metadata = sp_metadata.replace("WantAssertionsSigned=\"false\"", "WantAssertionsSigned=\"true\"");
    }
    let sp_descriptor =
        SpDescriptor::from_metadata_xml(&sp_metadata, MetadataTrustPolicy::UnsignedForCompatibility).unwrap();
    let validation = SamlValidationContext::new(SystemTime::now(), ReplayPolicy::DisabledForCompatibility);
    let received = idp.receive_sso(&sp_descriptor, BrowserInput::<AuthnRequest>::redirect(query), validation).unwrap();
    let subject = Subject::new(NameId::new(name_id, Some(NameIdFormat::EmailAddress)), Vec::new());
    let outbound = idp.respond_sso(&sp_descriptor, &received, subject, RespondSso::post()).unwrap();
    let form = outbound.post_form().unwrap();
    let encoded = form.fields().iter().find(|f| f.name() == "SAMLResponse").unwrap().value().to_string();
    let xml = String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap();
    Issued { xml, request_id: requested.request_id }
}

fn post(xml: &str, request_id: &str, now: SystemTime) -> Result<Account, Refused> {
    post_to(&sp(), xml, Some(request_id), now).map(|asserted| asserted.account)
}

fn post_to(to: &ServiceProvider, xml: &str, request_id: Option<&str>, now: SystemTime) -> Result<Asserted, Refused> {
    let encoded = STANDARD.encode(xml);
    let posted = Posted { saml_response: &encoded, relay_state: RELAY_STATE, request_id, now };
    accept(to, &metadata(), posted)
}

fn signed_assertion() -> Issued {
    issue(&sp(), IDP_KEY, IDP_CERT, "alice@example.com", Signed::Assertion)
}

fn signed_response() -> Issued {
    issue(&sp(), IDP_KEY, IDP_CERT, "alice@example.com", Signed::Response)
}

/// The element `<{prefix}:{name} …>…</{prefix}:{name}>` of `xml`, whichever
/// namespace prefix the identity provider uses.
fn element<'a>(xml: &'a str, name: &str) -> &'a str {
    let (open, close_tag) = match xml.find(&format!(":{name} ")) {
        Some(i) => {
            let open = xml[..i].rfind('<').unwrap();
            (open, format!("</{}:{name}>", &xml[open + 1..i]))
        }
        None => (xml.find(&format!("<{name} ")).unwrap(), format!("</{name}>")),
    };
    let close = xml[open..].find(&close_tag).unwrap() + open + close_tag.len();
    &xml[open..close]
}

fn without_signature(element_xml: &str) -> String {
    let signature = element(element_xml, "Signature");
    element_xml.replacen(signature, "", 1)
}

/// The signed assertion made evil: another subject, another ID, no signature.
fn evil_assertion(assertion: &str) -> String {
    let id = id_of(assertion);
    without_signature(assertion).replace("alice@example.com", "mallory@example.com").replace(&id, "_evil")
}

fn id_of(element_xml: &str) -> String {
    let at = element_xml.find(" ID=\"").unwrap() + 5;
    element_xml[at..at + element_xml[at..].find('"').unwrap()].to_string()
}

fn assert_refused(variant: &str, result: Result<Account, Refused>) {
    if let Ok(account) = result {
        panic!("{variant} was accepted, as {}", account.subject);
    }
}

#[test]
fn our_metadata_names_our_entity_and_assertion_consumer_service() {
    let sp = sp();
    assert_eq!(
        sp.entity_id,
        format!(
            "https://auth.example.com/v1/applications/{}/sso/{}/saml/metadata",
            Uuid::from_u128(1),
            Uuid::from_u128(2)
        )
    );
    let xml = sp.metadata_xml().unwrap();
    assert!(xml.contains(&sp.entity_id) && xml.contains(&sp.acs_url), "{xml}");
    assert!(xml.contains("urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"), "{xml}");
}

#[test]
fn an_identity_providers_metadata_is_read_and_bad_documents_are_refused() {
    let read = read_metadata(&metadata()).unwrap();
    assert_eq!(read.entity_id, IDP_ENTITY);
    assert_eq!(read.sso_url, "https://idp.example.com/sso");
    assert_eq!(read.signing_certificates, 1);
    assert!(read_metadata("<html/>").is_err());
    assert!(read_metadata(&"x".repeat(MAX_METADATA_BYTES + 1)).unwrap_err().contains("larger"));
    let with_certificate = metadata();
    let no_certificate = with_certificate.replacen(element(&with_certificate, "KeyDescriptor"), "", 1);
    assert_eq!(read_metadata(&no_certificate).unwrap_err(), "names no signing certificate");
}

#[test]
fn the_request_goes_by_redirect_with_its_relay_state() {
    let requested = request(&sp(), &metadata(), RELAY_STATE).unwrap();
    let url = url::Url::parse(&requested.url).unwrap();
    assert_eq!(url.host_str(), Some("idp.example.com"));
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    assert!(pairs.iter().any(|(k, v)| k == "RelayState" && v == RELAY_STATE));
    assert!(pairs.iter().any(|(k, _)| k == "SAMLRequest"));
    assert!(requested.request_id.starts_with('_') || requested.request_id.starts_with(char::is_alphabetic));
}

#[test]
fn a_signed_assertion_and_a_signed_response_are_accepted() {
    for signed in [Signed::Assertion, Signed::Response] {
        let issued = issue(&sp(), IDP_KEY, IDP_CERT, "alice@example.com", signed);
        let account = post(&issued.xml, &issued.request_id, SystemTime::now()).unwrap();
        assert_eq!(account.subject, "alice@example.com");
        assert_eq!(account.email.as_deref(), Some("alice@example.com"));
        assert_eq!(account.claims[NAME_ID_CLAIM], "alice@example.com");
        assert!(!account.email_verified, "the connection's domain proves the address, not the assertion");
    }
}

#[test]
fn an_unsigned_response_is_refused() {
    let issued = signed_assertion();
    let assertion = element(&issued.xml, "Assertion");
    let unsigned = issued.xml.replacen(assertion, &without_signature(assertion), 1);
    assert!(post(&unsigned, &issued.request_id, SystemTime::now()).is_err());
}

#[test]
fn a_key_not_in_the_metadata_is_refused() {
    for signed in [Signed::Assertion, Signed::Response] {
        let issued = issue(&sp(), OTHER_KEY, OTHER_CERT, "alice@example.com", signed);
        assert!(post(&issued.xml, &issued.request_id, SystemTime::now()).is_err());
    }
}

#[test]
fn an_assertion_for_another_connection_is_refused() {
    let other = ServiceProvider::of("https://auth.example.com", Uuid::from_u128(1), Uuid::from_u128(3));
    let issued = issue(&other, IDP_KEY, IDP_CERT, "alice@example.com", Signed::Assertion);
    assert!(post(&issued.xml, &issued.request_id, SystemTime::now()).is_err());
}

#[test]
fn a_response_to_another_request_is_refused() {
    let issued = signed_assertion();
    let other_request = request(&sp(), &metadata(), RELAY_STATE).unwrap().request_id;
    assert!(post(&issued.xml, &other_request, SystemTime::now()).is_err());
}

#[test]
fn an_expired_assertion_is_refused_and_the_skew_is_bounded() {
    let issued = signed_assertion();
    let now = SystemTime::now();
    assert!(post(&issued.xml, &issued.request_id, now + Duration::from_secs(60)).is_ok());
    assert!(post(&issued.xml, &issued.request_id, now + Duration::from_secs(3600)).is_err());
    assert!(post(&issued.xml, &issued.request_id, now - Duration::from_secs(3600)).is_err());
}

#[test]
fn an_assertion_altered_after_signing_is_refused() {
    let issued = signed_assertion();
    let altered = issued.xml.replace("alice@example.com", "mallory@example.com");
    assert!(post(&altered, &issued.request_id, SystemTime::now()).is_err());
    // An unsigned assertion inside a signed response, altered.
    let issued = signed_response();
    let altered = issued.xml.replace("alice@example.com", "mallory@example.com");
    assert!(post(&altered, &issued.request_id, SystemTime::now()).is_err());
}

#[test]
fn a_comment_inside_the_name_id_does_not_truncate_it() {
    let issued = issue(&sp(), IDP_KEY, IDP_CERT, "alice@example.com.evil.test", Signed::Assertion);
    let commented = issued.xml.replace("alice@example.com.evil.test", "alice@example.com<!---->.evil.test");
    assert_ne!(commented, issued.xml);
    // The comment is outside the signed canonical form: the signature holds,
    // and the whole text is the subject, never its first part.
    let account = post(&commented, &issued.request_id, SystemTime::now()).unwrap();
    assert_eq!(account.subject, "alice@example.com.evil.test");
}

/// XSW1–XSW2: an evil response around (or beside) the signed one.
#[test]
fn signature_wrapping_of_the_response_is_refused() {
    let issued = signed_response();
    let response = element(&issued.xml, "Response");
    let signature = element(response, "Signature");
    let evil_response = without_signature(response).replace("alice@example.com", "mallory@example.com");
    let evil_response = evil_response.replacen(&id_of(response), "_evil_response", 1);
    let close = evil_response.rfind("</").unwrap();
    // XSW1: the original inside the evil one's copied signature.
    let xsw1_signature =
        signature.replacen("</ds:Signature>", &format!("<ds:Object>{response}</ds:Object></ds:Signature>"), 1);
    let xsw1 = format!("{}{}{}", &evil_response[..close], xsw1_signature, &evil_response[close..]);
    // XSW2: the original beside the evil one's copied signature.
    let xsw2 = format!("{}{}{}{}", &evil_response[..close], signature, response, &evil_response[close..]);
    for (i, wrapped) in [xsw1, xsw2].iter().enumerate() {
        assert_ne!(wrapped, &issued.xml);
        assert_refused(&format!("XSW{}", i + 1), post(wrapped, &issued.request_id, SystemTime::now()));
    }
}

/// XSW3–XSW8: an evil assertion beside, around or inside the signed one.
#[test]
fn signature_wrapping_of_the_assertion_is_refused() {
    let issued = signed_assertion();
    let assertion = element(&issued.xml, "Assertion");
    let signature = element(assertion, "Signature");
    let evil = evil_assertion(assertion);
    let evil_close = evil.rfind("</").unwrap();
    let with_evil = |replacement: String| issued.xml.replacen(assertion, &replacement, 1);
    let variants = [
        // XSW3: the evil assertion before the signed one.
        with_evil(format!("{evil}{assertion}")),
        // XSW4: the signed assertion inside the evil one.
        with_evil(format!("{}{assertion}{}", &evil[..evil_close], &evil[evil_close..])),
        // XSW5: the evil assertion carries the signature; the original after it, unsigned.
        with_evil(format!("{}{signature}{}{}", &evil[..evil_close], &evil[evil_close..], without_signature(assertion))),
        // XSW6: the evil assertion carries the signature, the original inside it.
        with_evil(format!(
            "{}{}{}",
            &evil[..evil_close],
            signature.replacen(
                "</ds:Signature>",
                &format!("<ds:Object>{}</ds:Object></ds:Signature>", without_signature(assertion)),
                1
            ),
            &evil[evil_close..]
        )),
        // XSW7: the signed assertion inside an Extensions element, the evil one outside.
        issued.xml.replacen(assertion, &format!("<samlp:Extensions>{assertion}</samlp:Extensions>{evil}"), 1),
        // XSW8: the evil assertion's signature holds the original in an Object.
        with_evil(format!(
            "{}{}{}",
            &evil[..evil_close],
            signature.replacen("</ds:Signature>", &format!("<ds:Object>{assertion}</ds:Object></ds:Signature>"), 1),
            &evil[evil_close..]
        )),
    ];
    for (i, wrapped) in variants.iter().enumerate() {
        assert!(wrapped.contains("mallory@example.com"), "XSW{} holds the evil assertion", i + 3);
        assert_refused(&format!("XSW{}", i + 3), post(wrapped, &issued.request_id, SystemTime::now()));
    }
}

#[test]
fn the_library_s_refusals_are_named_in_snake_case() {
    assert_eq!(variant_name("AudienceMismatch { expected: [] }"), "audience_mismatch");
    assert_eq!(variant_name("SignatureMissing"), "signature_missing");
    assert_eq!(variant_name("Xml(\"bad\")"), "xml");
}

fn keyed(encrypt_assertions: bool) -> ServiceProvider {
    sp().with_key(credentials::generate().unwrap(), encrypt_assertions)
}

#[test]
fn an_encrypted_assertion_is_opened_and_a_plaintext_one_refused_where_encryption_is_asked() {
    let keyed = keyed(true);
    let encrypting = saml_rs::XmlPolicy {
        encryption: saml_rs::XmlEncryptionPolicy::encrypt_assertions(),
        ..saml_rs::XmlPolicy::default()
    };
    let issued = issue_by(&idp_with(IDP_KEY, IDP_CERT, encrypting), &keyed, "alice@example.com", Signed::Response);
    assert!(issued.xml.contains("EncryptedAssertion") && !issued.xml.contains("alice@example.com"));
    let asserted = post_to(&keyed, &issued.xml, Some(&issued.request_id), SystemTime::now()).unwrap();
    assert_eq!(asserted.account.subject, "alice@example.com");
    // The connection asked for encryption: a plaintext assertion is refused.
    let plain = issue(&keyed, IDP_KEY, IDP_CERT, "alice@example.com", Signed::Assertion);
    let refused = post_to(&keyed, &plain.xml, Some(&plain.request_id), SystemTime::now()).err().unwrap();
    assert_eq!(refused, Refused("assertion_not_encrypted".into()));
}

#[test]
fn requests_are_signed_when_the_identity_provider_wants_them_signed() {
    let wanting = metadata().replace("WantAuthnRequestsSigned=\"false\"", "WantAuthnRequestsSigned=\"true\"");
    assert_ne!(wanting, metadata());
    let signed = request(&keyed(false), &wanting, RELAY_STATE).unwrap();
    let query: Vec<(String, String)> = url::Url::parse(&signed.url).unwrap().query_pairs().into_owned().collect();
    assert!(query.iter().any(|(k, v)| k == "SigAlg" && v.ends_with("rsa-sha256")), "{query:?}");
    assert!(query.iter().any(|(k, _)| k == "Signature"));
    let unsigned = request(&keyed(false), &metadata(), RELAY_STATE).unwrap();
    assert!(!unsigned.url.contains("Signature="));
}

#[test]
fn a_response_names_the_ids_to_take_once_and_is_no_unsolicited_one() {
    let issued = signed_assertion();
    // This IdP answers requests only (IdP-initiated responses are pysaml2's,
    // tests/api/saml_connections.rs): a response to a request, posted as
    // unsolicited, is refused.
    let refused = post_to(&sp(), &issued.xml, None, SystemTime::now());
    assert!(refused.is_err(), "a response to a request is not an unsolicited one");
    let asserted = post_to(&sp(), &issued.xml, Some(&issued.request_id), SystemTime::now()).unwrap();
    let assertion_id = id_of(element(&issued.xml, "Assertion"));
    assert!(asserted.uses.iter().any(|(key, _)| key == &format!("assertion_id:{assertion_id}")), "{:?}", asserted.uses);
    assert!(asserted.uses.iter().any(|(key, _)| key.starts_with("response_id:")));
}

#[test]
fn the_idps_authentication_context_is_the_sessions_amr() {
    let class = |c: &str| amr_of(c).map(|m| m.join(" "));
    assert_eq!(class("urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport").as_deref(), Some("pwd"));
    assert_eq!(class("http://schemas.microsoft.com/claims/multipleauthn").as_deref(), Some("mfa"));
    assert_eq!(class("urn:oasis:names:tc:SAML:2.0:ac:classes:Smartcard").as_deref(), Some("sc"));
    assert_eq!(class("urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified"), None);
    let xml = r#"<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><saml:Assertion
        xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><saml:AuthnStatement><saml:AuthnContext>
        <saml:AuthnContextClassRef> urn:oasis:names:tc:SAML:2.0:ac:classes:Password </saml:AuthnContextClassRef>
        </saml:AuthnContext></saml:AuthnStatement></saml:Assertion></samlp:Response>"#;
    assert_eq!(authn_context(xml).as_deref(), Some("urn:oasis:names:tc:SAML:2.0:ac:classes:Password"));
    assert_eq!(authn_context("<samlp:Response/>"), None);
}
