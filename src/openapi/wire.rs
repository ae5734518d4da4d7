//! What every `/v1` operation shares on the wire, added to the document in
//! one place rather than repeated on sixty routes: the envelope around each
//! answer (contract §2), the `x-application-id` header, and the error
//! answers the shared extractors give (credentials, rate limits, bodies,
//! query strings, path identifiers, an unavailable database). A route
//! declares only what is its own: its parameters, body, success and the
//! refusals its service makes (404, 409, 403 for a scope, 422 codes).
use serde_json::{json, Value};
use utoipa::{
    openapi::{
        path::{Operation, Parameter, ParameterIn},
        Components, Content, OpenApi, RefOr, Required, Response, Schema,
    },
    Modify,
};

use super::security::{Declared, ACCESS_TOKEN, SECRET_KEY};
use crate::error::Code;

pub struct Wire;

impl Modify for Wire {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        add_components(components);
        for (path, item) in openapi.paths.paths.iter_mut() {
            let operations = [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete];
            for operation in operations.into_iter().flatten() {
                if let Some(kind) = Kind::of(path, operation) {
                    shape(operation, kind);
                }
                // An operation that declares no credential is public, and says so.
                operation.security.get_or_insert_with(Vec::new);
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Answers in the envelope, for an application named by `x-application-id`.
    Enveloped,
    /// JWKS and discovery: standard documents, public, enveloped only when refused.
    Document,
    /// Answers in the envelope, for a caller outside (the payment processor):
    /// no `x-application-id`, its own credential in the request.
    Inbound,
    /// A browser navigation (a provider sign-in's start and callback): no
    /// `x-application-id`, a redirect when it succeeds.
    Browser,
    /// A client of a standard (the issuer's OAuth token endpoint): no
    /// `x-application-id`, its standard's answers and refusals.
    Standard,
}

/// The operation extension naming a caller other than an application's
/// client: `inbound`, `browser`, `oauth_client` or `scim_client`.
pub const CALLER_EXTENSION: &str = "x-gatehouse-caller";

impl Kind {
    fn of(path: &str, operation: &Operation) -> Option<Kind> {
        let caller = operation.extensions.as_ref().and_then(|e| e.get(CALLER_EXTENSION)).and_then(Value::as_str);
        if !path.starts_with("/v1/") || path == "/v1/openapi.json" {
            None
        } else if path.contains("/.well-known/") {
            Some(Kind::Document)
        } else {
            match caller {
                Some("inbound") => Some(Kind::Inbound),
                Some("browser") => Some(Kind::Browser),
                Some("oauth_client" | "scim_client") => Some(Kind::Standard),
                _ => Some(Kind::Enveloped),
            }
        }
    }
}

/// The shared refusals, each a response component.
const SHARED: &[(&str, &str, &str)] = &[
    ("400", "MalformedJson", "`malformed_json`: the body is not JSON."),
    ("401", "Unauthenticated", "`unauthenticated` (header `WWW-Authenticate: Bearer`): the credential or `x-application-id` is missing, unknown, revoked or expired, or they do not belong together."),
    ("403", "OriginNotAllowed", "`origin_not_allowed`: a browser request from an origin the application does not allow."),
    ("404", "NotFound", "`not_found`: no such resource in this application."),
    ("413", "PayloadTooLarge", "`payload_too_large`: the body is over 1 MiB."),
    ("414", "UriTooLong", "`uri_too_long`: the request target is over 8 KiB."),
    ("415", "UnsupportedMediaType", "`unsupported_media_type`: a body without `Content-Type: application/json`."),
    ("422", "ValidationFailed", "`validation_failed`: `error.details` names each field and its problem."),
    ("429", "RateLimited", "`rate_limited`, with `Retry-After`."),
    ("431", "HeadersTooLarge", "`headers_too_large`: a header field is over 8 KiB, or all of them over 32 KiB."),
    ("503", "Unavailable", "`unavailable` (with `Retry-After`): a database is unavailable or busy; try again."),
];

fn shape(operation: &mut Operation, kind: Kind) {
    let declared = Declared::of(&serde_json::to_value(&operation.security).unwrap_or_default());
    let secret_key = declared.accepts(SECRET_KEY);
    let end_user = declared.accepts(ACCESS_TOKEN);
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    let has_path = parameters.iter().any(|p| p.parameter_in == ParameterIn::Path);
    let has_query = parameters.iter().any(|p| p.parameter_in == ParameterIn::Query);
    if kind == Kind::Enveloped {
        parameters.insert(0, application_header());
    }
    let writes = operation.request_body.is_some();

    // Every request's head is bounded (`http::head_limits`).
    let mut shared: Vec<&str> = vec!["414", "431", "503"];
    if kind == Kind::Enveloped {
        shared.push("401");
    }
    if secret_key || kind == Kind::Browser {
        shared.push("429");
    }
    if end_user || !secret_key && kind == Kind::Enveloped {
        shared.push("403");
    }
    if writes && kind == Kind::Standard {
        shared.push("413");
    } else if writes {
        shared.extend(["400", "413", "415", "422"]);
    }
    if has_query {
        shared.push("422");
    }
    if has_path {
        shared.push("404");
    }

    let responses = &mut operation.responses.responses;
    for (status, response) in responses.iter_mut() {
        let RefOr::T(response) = response else { continue };
        if status.starts_with('2') {
            // A page or a metadata document is answered as it is: only a
            // JSON (or undeclared) success is enveloped.
            let json = response.content.is_empty() || response.content.contains_key("application/json");
            if kind != Kind::Document && kind != Kind::Standard && json {
                wrap_success(response);
            }
        } else if response.content.is_empty() && !status.starts_with('3') {
            if response.description.is_empty() {
                let shared = SHARED.iter().find(|(s, _, _)| s == status);
                response.description = shared.map(|(_, _, d)| d.to_string()).unwrap_or_default();
            }
            response.content.insert("application/json".into(), refusal(status, &response.description));
        }
    }
    if let Some(scope) = declared.secret_key_scope() {
        let description = format!("`insufficient_scope`: the key holds neither `{scope}` nor `admin`.");
        let mut response = Response::new(&description);
        response.content.insert("application/json".into(), refusal("403", &description));
        responses.insert("403".into(), RefOr::T(response));
    }
    for status in shared {
        if !responses.contains_key(status) {
            let (_, name, _) = SHARED.iter().find(|(s, _, _)| *s == status).expect("a shared status");
            responses.insert(status.to_string(), RefOr::Ref(utoipa::openapi::Ref::from_response_name(*name)));
        }
    }
}

fn application_header() -> Parameter {
    let mut header = Parameter::new("x-application-id");
    header.parameter_in = ParameterIn::Header;
    header.required = Required::True;
    header.description = Some("The application the request is for; the credential must belong to it.".into());
    header.schema = Some(schema(json!({"type": "string", "format": "uuid"})));
    header
}

/// `{success: true, data, error: null, meta}` around the route's `data`.
fn wrap_success(response: &mut Response) {
    let data = response
        .content
        .get("application/json")
        .and_then(|c| c.schema.as_ref())
        .map(|s| serde_json::to_value(s).unwrap_or_default())
        .unwrap_or_else(|| json!({"type": "object"}));
    let envelope = json!({
        "type": "object",
        "required": ["success", "data", "error", "meta"],
        "properties": {
            "success": {"type": "boolean", "enum": [true]},
            "data": data,
            "error": {"type": "null"},
            "meta": {"$ref": "#/components/schemas/Meta"},
        },
    });
    response.content.insert("application/json".into(), content(schema(envelope)));
}

fn add_components(components: &mut Components) {
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let schemas = [
        (
            "Meta",
            json!({
                "type": "object",
                "required": ["timestamp", "request_id"],
                "properties": {
                    "timestamp": {"type": "string", "format": "date-time"},
                    "request_id": {"type": "string", "description": "The `x-request-id` sent, or one made for the request."},
                    "has_more": {"type": "boolean", "description": "Lists: whether rows follow this page."},
                },
            }),
        ),
        (
            "Error",
            json!({
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "enum": codes},
                    "message": {"type": "string"},
                    "details": {"type": "array", "items": {"$ref": "#/components/schemas/FieldIssue"}},
                },
            }),
        ),
        (
            "ErrorEnvelope",
            json!({
                "type": "object",
                "required": ["success", "data", "error", "meta"],
                "properties": {
                    "success": {"type": "boolean", "enum": [false]},
                    "data": {"type": "null"},
                    "error": {"$ref": "#/components/schemas/Error"},
                    "meta": {"$ref": "#/components/schemas/Meta"},
                },
            }),
        ),
    ];
    for (name, value) in schemas {
        components.schemas.insert(name.into(), schema(value));
    }
    for (status, name, description) in SHARED {
        let mut response = Response::new(*description);
        response.content.insert("application/json".into(), refusal(status, description));
        components.responses.insert((*name).into(), RefOr::T(response));
    }
}

/// A refusal's body: the error envelope, with an example of the first
/// code its description names (in backticks) that is answered with its
/// status, or else the first code of that status.
fn refusal(status: &str, description: &str) -> Content {
    let status_code: u16 = status.parse().unwrap_or(0);
    let of_status = || Code::ALL.iter().filter(move |c| c.status() == status_code);
    let named = description.split('`').skip(1).step_by(2).find_map(|word| of_status().find(|c| c.as_str() == word));
    let mut body = content(reference("ErrorEnvelope"));
    body.example = named.or_else(|| of_status().next()).map(|code| {
        json!({
            "success": false,
            "data": null,
            "error": {"code": code.as_str(), "message": code.meaning()},
            "meta": {"timestamp": "2026-12-01T09:30:00.000000Z", "request_id": "019ad93e-5f10-7c3a-9b61-3a1e2c4d5e6f"},
        })
    });
    body
}

fn reference(schema_name: &str) -> RefOr<Schema> {
    RefOr::Ref(utoipa::openapi::Ref::from_schema_name(schema_name))
}

fn schema(value: Value) -> RefOr<Schema> {
    serde_json::from_value(value).expect("a literal schema is valid")
}

fn content(schema: RefOr<Schema>) -> Content {
    Content::new(Some(schema))
}
