//! The token endpoint of an application's issuer (RFC 6749): machine tokens
//! for service accounts by `client_credentials`. It speaks its standard's
//! format, not the envelope: a form in, `{access_token, …}` or
//! `{error, error_description}` out.
use actix_web::{http::StatusCode, web, HttpRequest, HttpResponse};
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
    http::{
        body::Body,
        oauth_form::{self as form, Credentials, OAuthErrorView},
    },
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
    let bytes = body.raw().await?;
    let request = match read_request(&req, &bytes) {
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
    Ok(form::no_store(StatusCode::OK).json(MachineTokenView {
        access_token: token.issued.token,
        token_type: "Bearer",
        expires_in: token.issued.expires_in,
        scope: token.scopes.join(" "),
    }))
}

/// The form's parameters and the client's credentials, from HTTP Basic or
/// the form (one of them: RFC 6749 section 2.3).
fn read_request(req: &HttpRequest, bytes: &[u8]) -> Result<TokenRequest, TokenRefused> {
    let mut form = form::read(req, bytes).map_err(TokenRefused::InvalidRequest)?;
    let (client_id, client_secret) = match form::credentials(req, &mut form).map_err(TokenRefused::InvalidRequest)? {
        Credentials::Secret { client_id, secret } => (client_id, secret),
        Credentials::IdOnly(_) | Credentials::Missing => return Err(TokenRefused::InvalidClient(KeyRefusal::Unknown)),
    };
    Ok(TokenRequest { grant_type: form.remove("grant_type"), scope: form.remove("scope"), client_id, client_secret })
}

fn refusal(refused: TokenRefused) -> HttpResponse {
    metrics::counter!("machine_tokens_total", "outcome" => refused.code()).increment(1);
    form::refusal(refused.code(), refused.to_string())
}
