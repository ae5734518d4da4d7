//! Schemas of the request fields whose rules a type alone cannot say, for
//! `#[schema(schema_with = …)]` beside the field: the document then states
//! exactly what the checks in `areas::validate` and the areas accept, so a
//! generated client or a fuzzer knows a valid request before sending it.
use serde_json::{json, Value};
use utoipa::openapi::{RefOr, Schema};

use crate::{
    areas::{
        access_reviews, applications, billing, enrollment, entitlements,
        hooks::{self, restrictions},
        messaging,
        oauth_clients::{self, redirect_uris},
        oauth_providers, profile_fields, users, webhooks,
    },
    events::{delivery, outbox, url_safety::MAX_URL},
    json_schema::literal as schema,
};

/// `Issues::text`: not blank, no control characters (Unicode `Cc`).
const TEXT: &str = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$";

/// No string in a body may hold NUL (`http::body`'s rule for every body).
const NO_NUL: &str = r"^[^\u0000]*$";

/// A scope name (`validate::is_scope`).
pub const SCOPE: &str = "^[a-z][a-z0-9_:.-]{0,63}$";

/// The webhook and hook URLs `url_safety::check` takes outside production:
/// http(s), a host name (ASCII, the last label starting with a letter) or a
/// dotted IPv4 address (a bracketed IPv6 one is taken too, though not
/// described here), a port of 1 to 65535, then no whitespace, backslash or
/// control character.
const URL: &str = concat!(scheme_host_port!(), r"([/?#][^\s\\\u0000-\u001f\u007f-\u009f]*)?$");

/// A browser origin, `scheme://host[:port]`, with the same host and port rules.
const ORIGIN: &str = concat!(scheme_host_port!(), "$");

macro_rules! scheme_host_port {
    () => {
        concat!(
            r"^[hH][tT][tT][pP][sS]?://",
            r"(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
            r"|([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)",
            r"(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?",
        )
    };
}
use scheme_host_port;

pub fn text<const MAX: usize>() -> RefOr<Schema> {
    schema(text_of(MAX), false)
}

pub fn optional_text<const MAX: usize>() -> RefOr<Schema> {
    schema(text_of(MAX), true)
}

fn text_of(max: usize) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max, "pattern": TEXT})
}

pub fn email() -> RefOr<Schema> {
    schema(email_of(), false)
}

pub fn optional_email() -> RefOr<Schema> {
    schema(email_of(), true)
}

pub fn email_of() -> Value {
    json!({"type": "string", "format": "email", "maxLength": 254})
}

pub fn password() -> RefOr<Schema> {
    schema(password_of(), false)
}

pub fn optional_password() -> RefOr<Schema> {
    schema(password_of(), true)
}

fn password_of() -> Value {
    json!({"type": "string", "minLength": users::MIN_PASSWORD, "maxLength": users::MAX_PASSWORD})
}

pub fn url() -> RefOr<Schema> {
    schema(url_of(), false)
}

pub fn optional_url() -> RefOr<Schema> {
    schema(url_of(), true)
}

fn url_of() -> Value {
    json!({
        "type": "string",
        "maxLength": MAX_URL,
        "pattern": URL,
        "description": "An absolute http or https URL without user info; the host an ASCII name (punycode for an international one) or an IP address. A production application needs https and a public address.",
    })
}

/// Up to `MAX` scope names; `admin` implies every scope.
pub fn scopes<const MAX: usize>() -> RefOr<Schema> {
    schema(json!({"type": "array", "maxItems": MAX, "items": {"type": "string", "pattern": SCOPE}}), true)
}

/// Browser origins (`scheme://host[:port]`, http or https).
pub fn origins() -> RefOr<Schema> {
    let items = json!({"type": "string", "pattern": ORIGIN});
    schema(json!({"type": "array", "maxItems": applications::MAX_ORIGINS, "items": items}), true)
}

/// Audit event types or dotted families (`api_key`, `api_key.created`).
pub fn event_types() -> RefOr<Schema> {
    let item = json!({"type": "string", "maxLength": 128, "pattern": "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$"});
    schema(json!({"type": "array", "maxItems": webhooks::MAX_EVENT_TYPES, "items": item}), true)
}

/// A hook's description: up to 1024 characters; newlines but no other control characters.
pub fn hook_description() -> RefOr<Schema> {
    let pattern = r"^[^\u0000-\u0009\u000b-\u001f\u007f-\u009f]*$";
    schema(json!({"type": "string", "maxLength": 1024, "pattern": pattern}), true)
}

pub fn hook_point() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": hooks::POINTS}), false)
}

pub fn field_type() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": profile_fields::FIELD_TYPES}), false)
}

/// The platform an enrollment token is for; null: either.
pub fn token_platform() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": enrollment::PLATFORMS}), true)
}

/// The platform a host enrolls as.
pub fn host_platform() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": enrollment::PLATFORMS}), false)
}

/// The token endpoint's grants; any other is 400 `unsupported_grant_type`.
pub fn grant_type() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": ["client_credentials", "authorization_code", "refresh_token"]}), false)
}

/// Where a browser or an email link is sent back to: an absolute http(s)
/// URL (checked against the application's `allowed_origins` as well).
pub fn redirect_uri() -> RefOr<Schema> {
    schema(redirect_uri_of(), false)
}

pub fn optional_redirect_uri() -> RefOr<Schema> {
    schema(redirect_uri_of(), true)
}

fn redirect_uri_of() -> Value {
    json!({"type": "string", "maxLength": 2048, "pattern": URL})
}

/// An OAuth client's redirect URIs (`oauth_clients::redirect_uris`):
/// absolute, exact, no wildcard or fragment, in normal form.
pub fn client_uris() -> RefOr<Schema> {
    let item = json!({"type": "string", "minLength": 1, "maxLength": redirect_uris::MAX_URI_LEN,
                      "pattern": r"^[A-Za-z][A-Za-z0-9+.-]*:[^*#\s\u0000-\u001f\u007f-\u009f]*$"});
    schema(json!({"type": "array", "maxItems": redirect_uris::MAX_URIS, "items": item}), true)
}

pub fn client_grant_types() -> RefOr<Schema> {
    let item = json!({"type": "string", "enum": oauth_clients::GRANT_TYPES});
    schema(json!({"type": "array", "minItems": 1, "items": item}), true)
}

pub fn client_scopes() -> RefOr<Schema> {
    let item = json!({"type": "string", "enum": oauth_clients::SCOPES});
    schema(json!({"type": "array", "minItems": 1, "items": item}), true)
}

pub fn id_token_alg() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": oauth_clients::ID_TOKEN_ALGS}), true)
}

pub fn card_brand() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": billing::BRANDS}), false)
}

pub fn webhook_status() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": [outbox::ACTIVE, delivery::DISABLED]}), true)
}

/// A select field's choices: distinct strings of 1 to 255 characters.
pub fn options() -> RefOr<Schema> {
    schema(options_of(), true)
}

pub fn options_of() -> Value {
    let item = json!({"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL});
    json!({"type": "array", "minItems": 1, "maxItems": profile_fields::MAX_OPTIONS, "uniqueItems": true, "items": item})
}

pub fn messaging_channel() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": messaging::CHANNELS}), false)
}

pub fn messaging_kind() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": messaging::KINDS}), false)
}

/// `smtp`'s settings; null or `{}` for the other kinds.
pub fn messaging_config() -> RefOr<Schema> {
    let smtp = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["host", "from"],
        "properties": {
            "host": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": messaging::HOST},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "username": {"type": ["string", "null"], "minLength": 1, "maxLength": 255, "pattern": TEXT},
            "from": {"type": "string", "format": "email", "maxLength": 254},
            "starttls": {"type": "boolean"},
        },
    });
    let empty = json!({"type": "object", "additionalProperties": false, "maxProperties": 0});
    schema(json!({"anyOf": [smtp, empty, {"type": "null"}]}), false)
}

pub fn oauth_provider() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": oauth_providers::PROVIDERS}), false)
}

/// A client secret: accepted, stored sealed, never answered.
pub fn oauth_client_secret() -> RefOr<Schema> {
    let mut value = text_of(oauth_providers::MAX_SECRET);
    value["writeOnly"] = json!(true);
    schema(value, true)
}

/// OAuth scope tokens (RFC 6749 section 3.3), at most 50.
pub fn oauth_scopes() -> RefOr<Schema> {
    let item = json!({"type": "string", "minLength": 1, "maxLength": oauth_providers::MAX_SCOPE, "pattern": oauth_providers::SCOPE});
    schema(json!({"type": "array", "maxItems": oauth_providers::MAX_SCOPES, "items": item}), true)
}

/// Distinct feature keys, at most 20.
pub fn entitlement_claims() -> RefOr<Schema> {
    let item = json!({"type": "string", "pattern": SCOPE});
    let keys =
        json!({"type": "array", "maxItems": applications::MAX_ENTITLEMENT_CLAIMS, "uniqueItems": true, "items": item});
    schema(keys, true)
}

/// `applications::AAL2_ACTIONS`, each at most once.
pub fn aal2_actions() -> RefOr<Schema> {
    let item = json!({"type": "string", "enum": applications::AAL2_ACTIONS});
    schema(json!({"type": "array", "uniqueItems": true, "items": item}), true)
}

pub fn feature_kind() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": entitlements::KINDS}), false)
}

/// An access review item's decision.
pub fn review_decision() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": access_reviews::DECISIONS}), false)
}

pub fn optional_review_decision() -> RefOr<Schema> {
    schema(json!({"type": "string", "enum": access_reviews::DECISIONS}), true)
}

/// A domain name such as `example.com`: two or more labels of letters,
/// digits and inner hyphens, perhaps with the root's trailing dot, which is
/// dropped (a Unicode name is taken too and stored as its IDNA form, though
/// not described here). `conditions` adds that it is not
/// a consumer mail domain (a keyword utoipa's schema type does not keep).
pub fn sso_domain() -> RefOr<Schema> {
    schema(domain(), false)
}

fn domain() -> Value {
    let label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    let top = "[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    let pattern = format!(r"^({label}\.)+{top}\.?$");
    json!({"type": "string", "maxLength": 253, "pattern": pattern})
}

/// Email domains a sign-up is checked against: at most 100 domain names
/// (a name given twice is kept once; as with `sso_domain`, a Unicode name
/// is taken too and stored in normal form, though not described here).
pub fn email_domains() -> RefOr<Schema> {
    schema(json!({"type": "array", "maxItems": restrictions::MAX_DOMAINS, "items": domain()}), false)
}

/// A phone number in E.164 form (`+4915112345678`).
pub const PHONE: &str = r"^\+[1-9][0-9]{6,14}$";

/// Bytes as unpadded base64url, as WebAuthn's `toJSON()` writes them (the
/// last character carries no stray bits).
const BASE64URL: &str = r"^([A-Za-z0-9_-]{4})*([A-Za-z0-9_-][AQgw]|[A-Za-z0-9_-]{2}[AEIMQUYcgkosw048])?$";

/// A created passkey, `PublicKeyCredential.toJSON()` of a registration.
pub fn passkey_attestation() -> RefOr<Schema> {
    let transports = json!({"type": "array", "maxItems": 8, "items": {"type": "string", "enum": ["usb", "nfc", "ble", "internal", "hybrid"]}});
    let response = json!({
        "type": "object",
        "required": ["attestationObject", "clientDataJSON"],
        "properties": {"attestationObject": bytes(), "clientDataJSON": bytes(), "transports": transports},
    });
    schema(credential(response), false)
}

/// A passkey's assertion, `PublicKeyCredential.toJSON()` of a sign-in.
pub fn passkey_assertion() -> RefOr<Schema> {
    schema(assertion(), false)
}

pub fn optional_passkey_assertion() -> RefOr<Schema> {
    schema(assertion(), true)
}

fn assertion() -> Value {
    credential(json!({
        "type": "object",
        "required": ["authenticatorData", "clientDataJSON", "signature"],
        "properties": {"authenticatorData": bytes(), "clientDataJSON": bytes(), "signature": bytes(), "userHandle": nullable_bytes()},
    }))
}

fn credential(response: Value) -> Value {
    json!({
        "type": "object",
        "required": ["id", "rawId", "response", "type"],
        "properties": {
            "id": {"type": "string", "maxLength": 1366},
            "rawId": bytes(),
            "response": response,
            "type": {"type": "string", "enum": ["public-key"]},
            "authenticatorAttachment": {"type": "string", "enum": ["platform", "cross-platform"]},
            "clientExtensionResults": {"type": "object", "additionalProperties": false},
        },
    })
}

fn bytes() -> Value {
    json!({"type": "string", "maxLength": 65536, "pattern": BASE64URL})
}

fn nullable_bytes() -> Value {
    json!({"type": ["string", "null"], "maxLength": 65536, "pattern": BASE64URL})
}

pub fn optional_boolean() -> RefOr<Schema> {
    schema(json!({"type": "boolean"}), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_fields_take_null_and_keep_their_rules() {
        let value = serde_json::to_value(optional_text::<10>()).unwrap();
        assert_eq!(value["type"], json!(["string", "null"]));
        assert_eq!(value["maxLength"], 10);
        assert_eq!(value["pattern"], TEXT);
    }
}
