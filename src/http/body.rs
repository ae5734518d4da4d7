//! JSON request bodies. Extraction only takes the payload; reading happens
//! when the handler asks, after authentication has succeeded, so a request
//! that fails authentication never has its body parsed.
use std::future::{ready, Ready};

use actix_web::{dev::Payload, http::header, web, FromRequest, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::{
    config::Settings,
    error::{ApiError, ApiResult, Code, FieldIssue},
};

/// Bodies up to 1 MiB (contract §7).
pub const MAX_BODY: usize = 1024 * 1024;

pub struct Body {
    payload: Payload,
    content_type: Option<String>,
    content_length: Option<usize>,
    /// `Content-Encoding`, when not `identity`: nothing here decodes one.
    content_encoding: Option<String>,
    /// How long the body may take to arrive (`server.body_timeout_seconds`):
    /// a client trickling bytes cannot hold a connection open.
    deadline: std::time::Duration,
}

impl FromRequest for Body {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let header_str = |name| req.headers().get(name).and_then(|v: &header::HeaderValue| v.to_str().ok());
        ready(Ok(Body {
            payload: payload.take(),
            content_type: header_str(header::CONTENT_TYPE).map(str::to_ascii_lowercase),
            content_length: header_str(header::CONTENT_LENGTH).and_then(|v| v.parse().ok()),
            content_encoding: req
                .headers()
                .get(header::CONTENT_ENCODING)
                .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
                .filter(|v| v != "identity"),
            deadline: std::time::Duration::from_secs(
                req.app_data::<web::Data<Settings>>().map_or(30, |settings| settings.server.body_timeout_seconds),
            ),
        }))
    }
}

impl Body {
    /// A required JSON body.
    pub async fn json<T: DeserializeOwned>(self) -> ApiResult<T> {
        let content_type = self.content_type.clone();
        let bytes = self.bytes().await?;
        if bytes.is_empty() {
            return Err(ApiError::new(Code::MalformedJson, "A JSON body is required."));
        }
        check_content_type(content_type.as_deref(), "application/json")?;
        parse(&bytes)
    }

    /// An action's body: none, or JSON (`{}` or an object the action reads).
    pub async fn optional_json<T: DeserializeOwned + Default>(self) -> ApiResult<T> {
        let content_type = self.content_type.clone();
        let bytes = self.bytes().await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(T::default());
        }
        check_content_type(content_type.as_deref(), "application/json")?;
        parse(&bytes)
    }

    /// A SCIM request's body (RFC 7644 section 3.1): `application/scim+json`,
    /// or `application/json`, which directories send too. Parsed by the caller.
    pub async fn scim_json(self) -> ApiResult<web::Bytes> {
        let content_type = self.content_type.clone();
        let bytes = self.bytes().await?;
        if check_content_type(content_type.as_deref(), "application/scim+json").is_err() {
            check_content_type(content_type.as_deref(), "application/json")?;
        }
        Ok(bytes.freeze())
    }

    /// An NDJSON body (`Content-Type: application/x-ndjson`), as UTF-8 text.
    pub async fn ndjson(self) -> ApiResult<String> {
        let content_type = self.content_type.clone();
        let bytes = self.bytes().await?;
        check_content_type(content_type.as_deref(), "application/x-ndjson")?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ApiError::new(Code::MalformedJson, "The body is not UTF-8."))
    }

    /// The body as sent, whatever its type (a signed body is verified over
    /// its exact bytes), up to the same limit.
    pub async fn raw(self) -> ApiResult<web::Bytes> {
        Ok(self.bytes().await?.freeze())
    }

    /// Reads the whole body within its deadline, refusing it as soon as it
    /// passes the limit.
    async fn bytes(self) -> ApiResult<web::BytesMut> {
        if self.content_length.is_some_and(|n| n > MAX_BODY) {
            return Err(too_large());
        }
        if let Some(encoding) = &self.content_encoding {
            let message =
                format!("`Content-Encoding: {}` is not accepted: send the body as it is.", encoding.escape_debug());
            return Err(ApiError::new(Code::UnsupportedMediaType, message));
        }
        read_within(self.payload, self.deadline).await
    }
}

fn too_large() -> ApiError {
    ApiError::new(Code::PayloadTooLarge, "The body is larger than 1 MiB.")
}

/// A whole body of at most [`MAX_BODY`] bytes, read within `deadline` (408
/// `request_timeout` after it): here and where the region router forwards.
pub async fn read_within(mut payload: Payload, deadline: std::time::Duration) -> ApiResult<web::BytesMut> {
    let read = async {
        let mut body = web::BytesMut::new();
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|_| ApiError::new(Code::MalformedJson, "The body could not be read."))?;
            if body.len() + chunk.len() > MAX_BODY {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(deadline, read)
        .await
        .unwrap_or_else(|_| Err(ApiError::new(Code::RequestTimeout, "The body did not arrive in time.")))
}

fn check_content_type(content_type: Option<&str>, media_type: &str) -> ApiResult<()> {
    // RFC 9110 §8.3: the media type, with at most a `charset` of UTF-8,
    // its value a token or a quoted string (`charset="utf-8"`).
    let utf8 = |parameter: &str| {
        let (name, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        name.trim_end() == "charset" && matches!(value.trim_start(), "utf-8" | "\"utf-8\"")
    };
    let acceptable = content_type.is_some_and(|ct| {
        let mut parts = ct.split(';').map(str::trim);
        parts.next() == Some(media_type) && parts.all(|p| p.is_empty() || utf8(p))
    });
    if acceptable {
        Ok(())
    } else {
        Err(ApiError::new(
            Code::UnsupportedMediaType,
            format!("The body must be sent as `Content-Type: {media_type}`."),
        ))
    }
}

/// Parses JSON: bad syntax is 400 `malformed_json`; well-formed JSON of the
/// wrong shape is 422 `validation_failed` naming the field; a NUL character
/// (`\u0000`) in any string or key is 422 naming where it is, for every
/// route at once: no database stores it (PostgreSQL refuses it in text).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    if has_escaped_nul(bytes) {
        return Err(nul_issue(bytes));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(value) => value,
        Err(err) if is_float_for_integer(err.inner()) => return parse_with_integral_floats(bytes),
        Err(err) => return Err(refusal(err)),
    };
    deserializer
        .end()
        .map_err(|_| ApiError::new(Code::MalformedJson, "The body has trailing characters after the JSON value."))?;
    Ok(value)
}

fn refusal(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    match inner.classify() {
        Category::Data => {
            let message = inner.to_string();
            let field = named_field(&message).unwrap_or(if path == "." { "body".to_string() } else { path });
            ApiError::invalid_all(vec![FieldIssue { field, issue: strip_position(&message) }])
        }
        _ => ApiError::new(Code::MalformedJson, "The body is not valid JSON."),
    }
}

fn is_float_for_integer(err: &serde_json::Error) -> bool {
    err.classify() == Category::Data && err.to_string().starts_with("invalid type: floating point")
}

/// JSON has one kind of number: `100.0` is the integer 100 to JSON Schema,
/// so to the OpenAPI document and every client generated from it, though
/// serde refuses it for an integer field. Only a body that failed on that
/// pays for this second parse.
fn parse_with_integral_floats<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    fn integral(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Number(n) => {
                let whole = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15);
                if let (true, Some(f)) = (n.is_f64(), whole) {
                    *n = serde_json::Number::from(f as i64);
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(integral),
            serde_json::Value::Object(fields) => fields.values_mut().for_each(integral),
            _ => {}
        }
    }
    let mut value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|_| ApiError::new(Code::MalformedJson, "The body is not valid JSON."))?;
    integral(&mut value);
    serde_path_to_error::deserialize(value).map_err(refusal)
}

/// Whether a `\u0000` escape stands in the JSON text. A raw NUL byte is
/// already a syntax error; backslashes occur only inside strings, so the
/// scan steps over every escape and cannot mistake `\\u0000` (a backslash,
/// then the text `u0000`) for one.
fn has_escaped_nul(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes[i + 1..].starts_with(b"u0000") {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// The 422 for a body holding a NUL, naming the first field that has one
/// (only this refusal pays for a second parse); bad JSON stays a 400.
fn nul_issue(bytes: &[u8]) -> ApiError {
    fn path_of_nul(value: &serde_json::Value, path: String) -> Option<String> {
        match value {
            serde_json::Value::String(s) => s.contains('\0').then_some(path),
            serde_json::Value::Array(items) => {
                items.iter().enumerate().find_map(|(i, v)| path_of_nul(v, format!("{path}[{i}]")))
            }
            serde_json::Value::Object(map) => map.iter().find_map(|(k, v)| {
                let at = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                if k.contains('\0') {
                    Some(at.replace('\0', "\\u0000"))
                } else {
                    path_of_nul(v, at)
                }
            }),
            _ => None,
        }
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return ApiError::new(Code::MalformedJson, "The body is not valid JSON.");
    };
    let field = path_of_nul(&value, String::new()).filter(|p| !p.is_empty()).unwrap_or_else(|| "body".to_string());
    ApiError::invalid(&field, "must not contain NUL characters")
}

/// serde names missing, unknown and duplicate fields in backticks.
fn named_field(message: &str) -> Option<String> {
    let wanted = ["missing field `", "unknown field `", "duplicate field `"];
    let start = wanted.iter().find_map(|w| message.find(w).map(|i| i + w.len()))?;
    let end = message[start..].find('`')?;
    Some(message[start..start + end].to_string())
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The body of an action route: none, or `{}`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoFields {}

impl Body {
    pub async fn no_fields(self) -> ApiResult<()> {
        self.optional_json::<NoFields>().await.map(|_| ())
    }
}

/// For a field that may be sent as `null` to clear it: absent is `None`,
/// `null` is `Some(None)`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Shape {
        email: String,
        profile: Option<serde_json::Value>,
    }

    #[test]
    fn a_nul_anywhere_in_a_string_is_422_naming_the_field() {
        for (body, field) in [
            (r#"{"email": "a\u0000b@example.com"}"#, "email"),
            (r#"{"email": "a", "profile": {"nick": ["x", "\u0000"]}}"#, "profile.nick[1]"),
            (r#"{"email": "a", "profile": {"k\u0000": 1}}"#, "profile.k\\u0000"),
        ] {
            let err = parse::<Shape>(body.as_bytes()).unwrap_err();
            assert_eq!(err.code, Code::ValidationFailed, "{body}");
            assert_eq!(err.details[0].field, field, "{body}");
        }
    }

    #[test]
    fn an_integral_float_is_an_integer_and_a_fraction_is_not() {
        #[derive(serde::Deserialize, Debug)]
        struct Timeout {
            timeout_ms: i32,
            tags: Vec<u8>,
        }
        let parsed: Timeout = parse(br#"{"timeout_ms": 100.0, "tags": [1, 2e0]}"#).unwrap();
        assert_eq!((parsed.timeout_ms, parsed.tags), (100, vec![1, 2]));
        let err = parse::<Timeout>(br#"{"timeout_ms": 100.5, "tags": []}"#).unwrap_err();
        assert_eq!((err.code, err.details[0].field.as_str()), (Code::ValidationFailed, "timeout_ms"));
    }

    #[test]
    fn an_escaped_backslash_before_u0000_is_text_not_a_nul() {
        let shape: Shape = parse(br#"{"email": "a\\u0000b"}"#).unwrap();
        assert_eq!(shape.email, "a\\u0000b");
        let err = parse::<Shape>(br#"{"email": "a\\\u0000b"}"#).unwrap_err();
        assert_eq!(err.code, Code::ValidationFailed);
    }

    #[test]
    fn bad_json_holding_a_nul_is_still_malformed() {
        let err = parse::<Shape>(br#"{"email": "\u0000"#).unwrap_err();
        assert_eq!(err.code, Code::MalformedJson);
    }
}
