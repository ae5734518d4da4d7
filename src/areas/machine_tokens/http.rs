//! The token endpoint of an application's issuer (RFC 6749): machine tokens
//! for service accounts by `client_credentials`. It speaks its standard's
//! format, not the envelope: a form in, `{access_token, …}` or
//! `{error, error_description}` out.
use actix_web::{
    http::{header, StatusCode},
    web, HttpRequest, HttpResponse,
};
use base64::{engine::general_purpose::STANDARD, Engine};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::public::tenant_in_path;
use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::{
        machine_tokens::{self, TokenRefused, TokenRequest},
        service_accounts::{self, KeyRefusal},
    },
    auth::public_scope,
    error::{ApiError, ApiResult},
    http::body::Body,
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(token))]
struct Operations;

/// Clients of the standard token endpoint send no header: the path names the application.
const TOKEN_ROUTE: &str = "/v1/applications/{application_id}/oauth/token";

pub const APPLICATION_IN: &[ApplicationIn] = &[ApplicationIn { route: TOKEN_ROUTE, from: ApplicationFrom::Path }];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(&TOKEN_ROUTE["/v1".len()..]).route(web::post().to(token)));
}

/// The form of a token request (`application/x-www-form-urlencoded`).
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description of the form, read by hand below
pub struct TokenForm {
    /// `client_credentials`: the one grant this endpoint issues.
    #[schema(schema_with = crate::openapi::fields::grant_type)]
    grant_type: String,
    /// Space-separated scopes, each one of the service account's; absent:
    /// all of them.
    scope: Option<String>,
    /// The service account's id (`client_secret_post`; or HTTP Basic).
    client_id: Option<String>,
    /// One of the service account's `sak_` keys (`client_secret_post`; or
    /// HTTP Basic).
    client_secret: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MachineTokenView {
    /// EdDSA JWT, `typ: at+jwt` (RFC 9068); verify against the JWKS.
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    /// The scopes the token carries, space-separated.
    pub scope: String,
}

/// RFC 6749 section 5.2.
#[derive(Serialize, ToSchema)]
pub struct OAuthErrorView {
    /// `invalid_request`, `invalid_client`, `unsupported_grant_type` or `invalid_scope`.
    pub error: &'static str,
    pub error_description: String,
}

/// A machine token for a service account (`client_credentials`): its id as
/// `client_id` and one of its keys as `client_secret`, by HTTP Basic or in
/// the form. The token carries the account's scopes, or the requested
/// subset. Disabled or deleted accounts and revoked or expired keys get
/// `invalid_client`.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/token", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("oauth_client"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, body = MachineTokenView),
        (status = 400, body = OAuthErrorView, description = "`invalid_request`, `unsupported_grant_type`, `invalid_scope`"),
        (status = 401, body = OAuthErrorView, description = "`invalid_client`"),
        (status = 404, description = "No such application"),
        (status = 413), (status = 503)),
    security((), ("client_basic" = [])))]
pub async fn token(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let tenant = tenant_in_path(&state, &req, &path).await?;
    let id = tenant.id;
    let scope = public_scope(&state, tenant).ok_or_else(|| ApiError::not_found("Application", id))?;
    let form_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    let bytes = body.raw().await?;
    let request = match read_request(&req, form_type, &bytes) {
        Ok(request) => request,
        Err(refused) => return Ok(refusal(refused)),
    };
    let outcome = machine_tokens::issue(&scope, &state.issuer(), request).await.map_err(ApiError::from)?;
    let token = match outcome {
        Ok(token) => token,
        Err(refused) => {
            if let TokenRefused::InvalidClient(key) = &refused {
                if let Some((key_id, reason)) = key.known_key() {
                    state.keys.record_refusal(&scope, key_id, reason).await;
                }
            }
            return Ok(refusal(refused));
        }
    };
    metrics::counter!("machine_tokens_total", "outcome" => "issued").increment(1);
    // Off the request path, and only when due (most tokens skip it).
    if service_accounts::touch_is_due(&token.verified.key) {
        let touched = token.verified.key.clone();
        actix_web::rt::spawn(async move {
            if let Err(err) = service_accounts::touch_if_due(&scope, &touched).await {
                tracing::warn!(error = %err, "could not record a service-account key's last use");
            }
        });
    }
    Ok(no_store(StatusCode::OK).json(MachineTokenView {
        access_token: token.issued.token,
        token_type: "Bearer",
        expires_in: token.issued.expires_in,
        scope: token.scopes.join(" "),
    }))
}

/// The form's parameters and the client's credentials, from HTTP Basic or
/// the form (one of them: RFC 6749 section 2.3).
fn read_request(req: &HttpRequest, form_type: bool, bytes: &[u8]) -> Result<TokenRequest, TokenRefused> {
    if !form_type {
        return Err(TokenRefused::InvalidRequest("the body must be application/x-www-form-urlencoded"));
    }
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(bytes).map_err(|_| TokenRefused::InvalidRequest("the form cannot be read"))?;
    let mut form = std::collections::BTreeMap::new();
    for (name, value) in pairs {
        // Section 3.2: a parameter is sent once.
        if form.insert(name, value).is_some() {
            return Err(TokenRefused::InvalidRequest("a parameter is repeated"));
        }
    }
    let authorization = req.headers().get(header::AUTHORIZATION).map(|v| v.to_str().unwrap_or_default());
    let in_form = (form.remove("client_id"), form.remove("client_secret"));
    let (client_id, client_secret) = match (authorization, in_form) {
        (Some(_), (Some(_), _) | (_, Some(_))) => {
            return Err(TokenRefused::InvalidRequest("client credentials are sent one way only"))
        }
        (Some(value), _) => basic_credentials(value).ok_or(TokenRefused::InvalidClient(KeyRefusal::Unknown))?,
        (None, (Some(id), Some(secret))) => (id, secret),
        (None, _) => return Err(TokenRefused::InvalidClient(KeyRefusal::Unknown)),
    };
    Ok(TokenRequest { grant_type: form.remove("grant_type"), scope: form.remove("scope"), client_id, client_secret })
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

fn no_store(status: StatusCode) -> actix_web::HttpResponseBuilder {
    let mut builder = HttpResponse::build(status);
    builder.insert_header((header::CACHE_CONTROL, "no-store")).insert_header((header::PRAGMA, "no-cache"));
    builder
}

fn refusal(refused: TokenRefused) -> HttpResponse {
    metrics::counter!("machine_tokens_total", "outcome" => refused.code()).increment(1);
    let body = OAuthErrorView { error: refused.code(), error_description: refused.to_string() };
    if matches!(refused, TokenRefused::InvalidClient(_)) {
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
