//! The SAML 2.0 service provider of a connection (Web Browser SSO, SP- and
//! IdP-initiated): our metadata, the `AuthnRequest` sent by the
//! HTTP-Redirect binding, and the identity provider's `Response` taken at
//! our assertion consumer service by the HTTP-POST binding. The XML,
//! its signatures and the protocol's checks are the `saml-rs` crate's
//! (XML-DSig through `bergshamra`); what this module decides is the policy:
//!
//! - the response or its assertion is signed, RSA-SHA2 with exclusive
//!   canonicalization and one local reference (the profile that leaves no
//!   room for signature wrapping), by a certificate of the identity
//!   provider's metadata and no other;
//! - the assertion names us as its audience (an assertion without an
//!   audience restriction is refused), our assertion consumer service as
//!   its recipient and the response's destination, and answers our request
//!   (`InResponseTo`), within its time bounds with [`CLOCK_SKEW_SECONDS`];
//! - a response is used once: it answers one request, whose flow is taken
//!   once (the `RelayState`), so neither it nor its assertion can be
//!   replayed, into that flow or another. An IdP-initiated response answers
//!   no request: its response and assertion IDs are kept until they expire
//!   ([`Asserted::uses`]), and each is taken once;
//! - a connection that asked for encrypted assertions refuses a plaintext one.
pub mod credentials;

use std::time::{Duration, SystemTime};

use base64::{engine::general_purpose::STANDARD, Engine};
use saml_rs::{
    constants::{Binding, CertUse},
    AcsEndpoint, AudienceValidationPolicy, AuthnRequest, AuthnRequestSigningPolicy, BrowserInput, CertificatePem,
    ClockSkew, Credentials, EntityId, FormField, IdpDescriptor, MetadataTrustPolicy, NameIdFormat, Pending,
    PendingSnapshot, PrivateKeyPem, RelayStateParam, ReplayCache, ReplayKey, ReplayPolicy, Saml, SamlError,
    SamlValidationContext, Sp, SpConfig, SpValidationPolicy, SsoResponse, SsoSession, StartSso, XmlEncryptionPolicy,
    XmlPolicy, XmlSignatureProfile,
};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::oauth::client::Account;

/// The skew allowed on an assertion's time bounds, each way.
pub const CLOCK_SKEW_SECONDS: u64 = 120;
/// The largest metadata document read (an IdP's, given or fetched).
pub const MAX_METADATA_BYTES: usize = 256 * 1024;
/// The claim an assertion's `NameID` is given as, beside its attributes.
pub const NAME_ID_CLAIM: &str = "name_id";
/// Attributes that hold a user's address at the common identity providers
/// (the plain names, Entra ID's and ADFS's claim URI, and the OID of
/// `mail`), read in this order when the mapping names `email`.
pub const EMAIL_ATTRIBUTES: [&str; 4] = [
    "email",
    "mail",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
];

/// Our side of a connection: its entity ID is the URL of its metadata.
#[derive(Clone)]
pub struct ServiceProvider {
    pub entity_id: String,
    pub acs_url: String,
    /// The connection's own key, when it has one.
    key: Option<credentials::SpKey>,
    /// Assertions must come encrypted to that key.
    encrypt_assertions: bool,
}

impl ServiceProvider {
    pub fn of(public_url: &str, application_id: Uuid, connection_id: Uuid) -> ServiceProvider {
        let base = format!(
            "{}/v1/applications/{}/sso/{}/saml",
            public_url.trim_end_matches('/'),
            application_id,
            connection_id
        );
        ServiceProvider {
            entity_id: format!("{base}/metadata"),
            acs_url: format!("{base}/acs"),
            key: None,
            encrypt_assertions: false,
        }
    }

    pub fn with_key(self, key: credentials::SpKey, encrypt_assertions: bool) -> ServiceProvider {
        ServiceProvider { key: Some(key), encrypt_assertions, ..self }
    }

    /// The library's service provider; it signs its requests when
    /// `sign_requests` (the IdP wants them signed) and it has a key.
    fn saml(&self, sign_requests: bool) -> Result<Saml<Sp>, SamlError> {
        let signs = sign_requests && self.key.is_some();
        let validation = SpValidationPolicy {
            xml_signatures: XmlSignatureProfile::StrictRsaSha2,
            audience: AudienceValidationPolicy::Validate,
            authn_requests: match signs {
                true => AuthnRequestSigningPolicy::Sign,
                false => AuthnRequestSigningPolicy::DoNotSignForCompatibility,
            },
            ..SpValidationPolicy::recommended()
        };
        let mut config = SpConfig::builder(EntityId::try_new(self.entity_id.clone())?)
            .acs_endpoint(AcsEndpoint::post(self.acs_url.clone())?)
            .validation(validation);
        if let Some(key) = &self.key {
            let certificate = || Some(CertificatePem::new(key.certificate_pem.clone()));
            config = config.credentials(Credentials {
                signing_key: Some(PrivateKeyPem::new(key.private_pem.clone())),
                signing_certificate: certificate(),
                encryption_certificate: if self.encrypt_assertions { certificate() } else { None },
                decryption_key: Some(PrivateKeyPem::new(key.private_pem.clone())),
                ..Credentials::default()
            });
            if self.encrypt_assertions {
                // IdPs encrypt the assertion's key to ours with RSA (OAEP or
                // PKCS #1 v1.5): the RustCrypto backend's RSA decryption is
                // not constant-time (RUSTSEC-2023-0071), and is reached only
                // for a connection that asks for encryption, per connection
                // key, at the rate-limited assertion consumer service.
                let encryption = XmlEncryptionPolicy::encrypt_assertions()
                    .with_insecure_software_rsa_key_transport_decryption_allowed();
                config = config.xml(XmlPolicy { encryption, ..XmlPolicy::default() });
            }
        }
        Saml::sp(config.build()?)
    }

    /// Our metadata, for the identity provider's administrator.
    pub fn metadata_xml(&self) -> Result<String, SamlError> {
        Ok(self.saml(false)?.metadata_xml().to_string())
    }
}

/// What an identity provider's metadata says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityProvider {
    pub entity_id: String,
    /// Its single sign-on endpoint for the HTTP-Redirect binding.
    pub sso_url: String,
    /// How many signing certificates it names.
    pub signing_certificates: usize,
}

/// Reads an identity provider's metadata: one `EntityDescriptor` with an
/// `IDPSSODescriptor` that has an HTTP-Redirect single sign-on endpoint and
/// at least one signing certificate. The document is trusted as the
/// organization's administrator gave it (or named its URL), as pasted
/// certificates would be.
pub fn read_metadata(xml: &str) -> Result<IdentityProvider, String> {
    if xml.len() > MAX_METADATA_BYTES {
        return Err(format!("is larger than {MAX_METADATA_BYTES} bytes"));
    }
    let descriptor = descriptor(xml).map_err(|err| format!("is not an identity provider's SAML metadata ({err})"))?;
    let metadata = descriptor.metadata();
    let sso_url = metadata
        .get_single_sign_on_service(Binding::Redirect)
        .ok_or("names no single sign-on endpoint for the HTTP-Redirect binding")?;
    let signing_certificates = metadata.x509_certificates(CertUse::Signing).len();
    if signing_certificates == 0 {
        return Err("names no signing certificate".into());
    }
    Ok(IdentityProvider { entity_id: descriptor.entity_id().as_str().to_string(), sso_url, signing_certificates })
}

fn descriptor(xml: &str) -> Result<IdpDescriptor, SamlError> {
    IdpDescriptor::from_metadata_xml(xml, MetadataTrustPolicy::UnsignedForCompatibility)
}

/// A request sent: where the browser goes, and the request's ID, which the
/// response must answer.
pub struct Requested {
    pub url: String,
    pub request_id: String,
}

/// An `AuthnRequest` for the HTTP-Redirect binding, carrying `relay_state`,
/// signed when the IdP's metadata wants it (`WantAuthnRequestsSigned`).
pub fn request(sp: &ServiceProvider, idp_metadata: &str, relay_state: &str) -> Result<Requested, SamlError> {
    let relay_state = RelayStateParam::try_from_option(Some(relay_state.to_string()))?;
    let idp = descriptor(idp_metadata)?;
    let sign = idp.metadata().is_want_authn_requests_signed();
    let started = sp.saml(sign)?.start_sso(&idp, StartSso::redirect().relay_state(relay_state))?;
    Ok(Requested {
        url: started.outbound.redirect_url()?.to_string(),
        request_id: started.pending.request_id().as_str().to_string(),
    })
}

/// Why a response was refused: the library's name for it (`snake_case`),
/// for the audit row.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl From<SamlError> for Refused {
    fn from(err: SamlError) -> Refused {
        tracing::info!(error = %err, "a SAML response was refused");
        Refused(variant_name(&format!("{err:?}")))
    }
}

/// Whether a `NameID` is the user's address: its format says so, or says
/// nothing and it looks like one.
fn names_an_address(format: Option<&NameIdFormat>, value: &str) -> bool {
    match format {
        Some(NameIdFormat::EmailAddress) => true,
        None | Some(NameIdFormat::Unspecified) => value.contains('@'),
        Some(_) => false,
    }
}

/// `AudienceMismatch { … }` → `audience_mismatch`.
fn variant_name(debug: &str) -> String {
    let name: String = debug.chars().take_while(char::is_ascii_alphanumeric).collect();
    let mut snake = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}

/// The response as posted to our assertion consumer service, with what its
/// flow remembers of the request it answers (`None`: an IdP-initiated
/// response, which answers none).
pub struct Posted<'a> {
    pub saml_response: &'a str,
    pub relay_state: &'a str,
    pub request_id: Option<&'a str>,
    pub now: SystemTime,
}

/// A response accepted: the account it asserts, and the IDs it used.
pub struct Asserted {
    pub account: Account,
    /// The response's and its assertions' IDs (`kind:id`), with when each
    /// stops being accepted anyway: an IdP-initiated sign-in takes each once.
    pub uses: Vec<(String, SystemTime)>,
}

/// Keeps what the library would have a replay cache check.
#[derive(Default)]
struct Uses(Vec<(String, SystemTime)>);

impl ReplayCache for Uses {
    fn check_and_store(&mut self, key: ReplayKey, expires_at: SystemTime) -> Result<(), SamlError> {
        let key = key.cache_key();
        if self.0.iter().any(|(seen, _)| *seen == key) {
            return Err(SamlError::ReplayDetected { key });
        }
        self.0.push((key, expires_at));
        Ok(())
    }
}

/// Checks a response (see the module's rules) and answers the account it
/// asserts: its `NameID` as the subject, and its attributes as claims (one
/// value as a string, several as an array), with the `NameID` as
/// [`NAME_ID_CLAIM`] and the first of [`EMAIL_ATTRIBUTES`] as `email`
/// (else a `NameID` that is an address). The assertion's signature is
/// checked, its address is not proven yet: the connection's rules
/// ([`super::sign_in::admit`]) decide that.
pub fn accept(sp: &ServiceProvider, idp_metadata: &str, posted: Posted<'_>) -> Result<Asserted, Refused> {
    let idp = descriptor(idp_metadata)?;
    if sp.encrypt_assertions && !encrypted(posted.saml_response) {
        return Err(Refused("assertion_not_encrypted".into()));
    }
    let fields =
        vec![FormField::new("SAMLResponse", posted.saml_response), FormField::new("RelayState", posted.relay_state)];
    let input = BrowserInput::<SsoResponse>::post(fields);
    let skew_ms = Duration::from_secs(CLOCK_SKEW_SECONDS).as_millis() as i64;
    let mut uses = Uses::default();
    let validation = SamlValidationContext::new(posted.now, ReplayPolicy::RequireCache(&mut uses))
        .with_clock_skew(ClockSkew::from_millis(-skew_ms, skew_ms));
    let saml = sp.saml(false)?;
    let session = match posted.request_id {
        Some(request_id) => {
            let relay_state = RelayStateParam::try_from_option(Some(posted.relay_state.to_string()))?;
            let snapshot = PendingSnapshot::<AuthnRequest>::authn_request(
                request_id,
                relay_state,
                idp.entity_id().as_str(),
                "post",
                sp.acs_url.as_str(),
                "post",
            );
            saml.finish_sso(&idp, &Pending::<AuthnRequest>::from_snapshot(snapshot)?, input, validation)?
        }
        None => saml.accept_unsolicited_sso(&idp, input, validation)?,
    };
    Ok(Asserted { account: account(&session)?, uses: uses.0 })
}

/// Whether the response carries its assertion encrypted, and no other.
fn encrypted(saml_response: &str) -> bool {
    let Some(xml) = STANDARD.decode(saml_response.trim()).ok().and_then(|bytes| String::from_utf8(bytes).ok()) else {
        return false;
    };
    let Ok(document) = saml_rs::xml::dom::parse(&xml) else { return false };
    let children = &document.root.children;
    children.iter().any(|child| child.local_name == "EncryptedAssertion")
        && !children.iter().any(|child| child.local_name == "Assertion")
}

fn account(session: &SsoSession) -> Result<Account, Refused> {
    if session.verified_xml_signatures().is_empty() {
        return Err(Refused("signature_missing".into()));
    }
    let subject = session.name_id().value().trim().to_string();
    if subject.is_empty() {
        return Err(Refused("name_id_missing".into()));
    }
    let mut claims = Map::new();
    for attribute in session.attributes().as_slice() {
        let mut values: Vec<Value> = attribute.values().iter().map(|v| Value::String(v.as_str().to_string())).collect();
        let value = match values.len() {
            0 => continue,
            1 => values.remove(0),
            _ => Value::Array(values),
        };
        claims.insert(attribute.name().to_string(), value);
    }
    let email = EMAIL_ATTRIBUTES
        .iter()
        .find_map(|name| match claims.get(*name) {
            Some(Value::String(value)) => Some(value.clone()),
            Some(Value::Array(values)) => values.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .or_else(|| names_an_address(session.name_id().format(), &subject).then(|| subject.clone()));
    if let Some(email) = &email {
        claims.entry("email").or_insert_with(|| Value::String(email.clone()));
    }
    claims.insert(NAME_ID_CLAIM.into(), Value::String(subject.clone()));
    let amr = authn_context(&session.raw_flow().saml_content).as_deref().and_then(amr_of);
    Ok(Account { subject, email, email_verified: false, amr, claims, profile: Map::new() })
}

/// The `AuthnContextClassRef` of the accepted assertion's `AuthnStatement`
/// (in the verified, decrypted document the library answers).
fn authn_context(verified_xml: &str) -> Option<String> {
    let document = saml_rs::xml::dom::parse(verified_xml).ok()?;
    let child = |node: &'_ saml_rs::xml::dom::Node, name: &str| -> Option<saml_rs::xml::dom::Node> {
        node.children.iter().find(|c| c.local_name == name).cloned()
    };
    let assertion = child(&document.root, "Assertion")?;
    let class = child(&child(&child(&assertion, "AuthnStatement")?, "AuthnContext")?, "AuthnContextClassRef")?;
    Some(class.text.trim().to_string())
}

/// How the user signed in at the IdP, as RFC 8176 methods: from the
/// SAML authentication context classes the IdPs send (SAML 2.0 Authn
/// Context, and Entra ID's and ADFS's own). Others say nothing (`sso`).
fn amr_of(class: &str) -> Option<Vec<String>> {
    const SAML: &str = "urn:oasis:names:tc:SAML:2.0:ac:classes:";
    let methods: &[&str] = match class.strip_prefix(SAML).unwrap_or(class) {
        "Password" | "PasswordProtectedTransport" => &["pwd"],
        "Smartcard" | "SmartcardPKI" => &["sc"],
        "SoftwarePKI" => &["swk"],
        "TimeSyncToken" => &["otp"],
        "Kerberos" => &["wia"],
        "http://schemas.microsoft.com/claims/multipleauthn" => &["mfa"],
        "http://schemas.microsoft.com/ws/2008/06/identity/authenticationmethod/windows" => &["wia"],
        _ => return None,
    };
    Some(methods.iter().map(|m| m.to_string()).collect())
}

#[cfg(test)]
mod tests;
