//! What the issuer's OAuth endpoints (token, introspection, revocation)
//! share: an `application/x-www-form-urlencoded` body whose parameters are
//! each sent once (RFC 6749 section 3.2), client credentials by HTTP Basic
//! or in the form but not both (section 2.3), and answers that no cache
//! keeps (section 5.1).
use std::collections::BTreeMap;

use actix_web::{
    http::{header, StatusCode},
    HttpRequest, HttpResponse, HttpResponseBuilder,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde::Serialize;
use utoipa::ToSchema;

/// A request the endpoint cannot read: `invalid_request`, with why.
pub type Unreadable = &'static str;

/// The form's parameters, each once.
pub fn read(req: &HttpRequest, bytes: &[u8]) -> Result<BTreeMap<String, String>, Unreadable> {
    let form_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    if !form_type {
        return Err("the body must be application/x-www-form-urlencoded");
    }
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(bytes).map_err(|_| "the form cannot be read")?;
    let mut form = BTreeMap::new();
    for (name, value) in pairs {
        if form.insert(name, value).is_some() {
            return Err("a parameter is repeated");
        }
    }
    Ok(form)
}

/// Who the client says it is.
pub enum Credentials {
    /// An id and a secret (`client_secret_basic` or `client_secret_post`).
    Secret { client_id: String, secret: String },
    /// Only `client_id` in the form: a public client (`none`).
    IdOnly(String),
    /// Nothing usable: no credentials, or an `Authorization` that is not
    /// HTTP Basic of two form-encoded halves.
    Missing,
}

/// The client's credentials, taken out of the form.
pub fn credentials(req: &HttpRequest, form: &mut BTreeMap<String, String>) -> Result<Credentials, Unreadable> {
    let authorization = req.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or_default());
    let in_form = (form.remove("client_id"), form.remove("client_secret"));
    Ok(match (authorization, in_form) {
        (Some(_), (Some(_), _) | (_, Some(_))) => return Err("client credentials are sent one way only"),
        (Some(value), _) => match basic_credentials(value) {
            Some((client_id, secret)) => Credentials::Secret { client_id, secret },
            None => Credentials::Missing,
        },
        (None, (Some(client_id), Some(secret))) => Credentials::Secret { client_id, secret },
        (None, (Some(client_id), None)) => Credentials::IdOnly(client_id),
        (None, (None, _)) => Credentials::Missing,
    })
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 section
/// 2.3.1). Anything else (a Bearer token, say) is no client credential.
fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let unescape = |part: &str| -> Option<String> {
        let wrapped = format!("v={part}");
        let mut pairs = url::form_urlencoded::parse(wrapped.as_bytes()).into_owned();
        match (pairs.next(), pairs.next()) {
            (Some((_, value)), None) => Some(value),
            _ => None,
        }
    };
    Some((unescape(id)?, unescape(secret)?))
}

/// An answer no cache keeps.
pub fn no_store(status: StatusCode) -> HttpResponseBuilder {
    let mut builder = HttpResponse::build(status);
    builder.insert_header((header::CACHE_CONTROL, "no-store")).insert_header((header::PRAGMA, "no-cache"));
    builder
}

/// RFC 6749 section 5.2.
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"error": "invalid_grant", "error_description": "The code is unknown, used, expired or another client's."}))]
pub struct OAuthErrorView {
    /// `invalid_request`, `invalid_client`, `unauthorized_client`,
    /// `unsupported_grant_type` or `invalid_scope`.
    pub error: &'static str,
    pub error_description: String,
}

/// A refusal in RFC 6749's form: 401 with `WWW-Authenticate: Basic` for
/// `invalid_client`, 400 otherwise.
pub fn refusal(error: &'static str, description: impl Into<String>) -> HttpResponse {
    let body = OAuthErrorView { error, error_description: description.into() };
    if error == "invalid_client" {
        return no_store(StatusCode::UNAUTHORIZED)
            .insert_header((header::WWW_AUTHENTICATE, "Basic realm=\"gatehouse\""))
            .json(body);
    }
    no_store(StatusCode::BAD_REQUEST).json(body)
}

#[cfg(test)]
mod tests {
    use super::basic_credentials;

    #[test]
    fn basic_credentials_are_form_decoded_halves() {
        let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "id%3A1:s+e%2Bcret");
        assert_eq!(basic_credentials(&format!("Basic {encoded}")), Some(("id:1".into(), "s e+cret".into())));
        assert_eq!(basic_credentials("Bearer abc"), None);
        assert_eq!(basic_credentials("Basic !!!"), None);
    }
}
