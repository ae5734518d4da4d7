//! Public token-verification documents (JWKS, OpenID discovery) and signing
//! key rotation. The documents need no credential; the application is named
//! in the path, and the region router forwards by that id.
use actix_web::{
    dev::ResourceDef,
    http::{
        header::{self, HeaderValue},
        Method, StatusCode,
    },
    web, HttpMessage, HttpRequest, HttpResponse, ResponseError,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::oauth_clients,
    auth::{public::tenant_in_path, public_scope, secret_key::SecretKey},
    error::{ApiError, ApiResult},
    http::{body::Body, envelope, metrics::RouteLabel},
    state::AppState,
    tenancy::Tenant,
};

/// The JWKS route: its metrics label, and its path under `/v1`.
const JWKS_ROUTE: &str = "/v1/applications/{application_id}/.well-known/jwks.json";
const DISCOVERY_ROUTE: &str = "/v1/applications/{application_id}/.well-known/openid-configuration";
/// RFC 8414's place for the same document, outside `/v1` (`routes::configure` registers it).
pub const AUTHORIZATION_SERVER_ROUTE: &str = "/.well-known/oauth-authorization-server/v1/applications/{application_id}";

/// Verifiers and standard clients send no header: the path names the application.
pub const APPLICATION_IN: &[ApplicationIn] = &[
    ApplicationIn { route: JWKS_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: DISCOVERY_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: AUTHORIZATION_SERVER_ROUTE, from: ApplicationFrom::Path },
];

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(jwks, discovery, rotate_signing_key))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(&JWKS_ROUTE["/v1".len()..]).route(web::get().to(jwks)))
        .service(web::resource(&DISCOVERY_ROUTE["/v1".len()..]).route(web::get().to(discovery)))
        .service(
            web::resource("/applications/{application_id}/signing-keys/rotate")
                .route(web::post().to(rotate_signing_key)),
        );
}

/// A public document's answer: cacheable for the configured JWKS max-age
/// (a scheduled key rotation waits that long before its key signs).
fn public_document(state: &AppState) -> actix_web::HttpResponseBuilder {
    let mut builder = HttpResponse::Ok();
    builder
        .insert_header((header::CACHE_CONTROL, state.tokens.documents_cache_control()))
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")));
    builder
}

/// The application's JSON Web Key Set: its current key and the retired keys
/// whose tokens may still be live. A plain JWKS document, not the envelope.
#[utoipa::path(get, path = "/v1/applications/{application_id}/.well-known/jwks.json", tag = "tokens",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    responses((status = 200, description = "RFC 7517 key set"), (status = 404)))]
pub async fn jwks(state: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let tenant = tenant_in_path(&state, &req, &path).await?;
    jwks_of(&state, &req, tenant).await
}

/// The JWKS of an application this node holds, answered by the region
/// router as soon as it has resolved the application from the path
/// (`region::dispatch`), before routing: every verifier of the
/// application's tokens fetches it, and it needs nothing the later stages
/// add (no credential, no body, no CORS check, since any origin may read
/// it). The route above answers what this leaves: an application the
/// router did not resolve, and the methods other than GET and HEAD.
pub async fn answer_jwks(state: &AppState, req: &HttpRequest, tenant: &Tenant) -> Option<HttpResponse> {
    static JWKS: std::sync::LazyLock<ResourceDef> = std::sync::LazyLock::new(|| ResourceDef::new(JWKS_ROUTE));
    if !matches!(*req.method(), Method::GET | Method::HEAD) || !JWKS.is_match(req.path()) {
        return None;
    }
    req.extensions_mut().insert(RouteLabel(JWKS_ROUTE));
    Some(jwks_of(state, req, tenant.clone()).await.unwrap_or_else(|err| err.error_response()))
}

async fn jwks_of(state: &AppState, req: &HttpRequest, tenant: Tenant) -> ApiResult<HttpResponse> {
    let id = tenant.id;
    let scope = public_scope(state, tenant).ok_or_else(|| ApiError::not_found("Application", id))?;
    let document = state.tenants.jwks(&scope).await?;
    let mut answer = public_document(state);
    answer.insert_header((header::ETAG, document.etag.as_str()));
    if if_none_match(req, &document.etag) {
        return Ok(answer.status(StatusCode::NOT_MODIFIED).finish());
    }
    Ok(answer.insert_header((header::CONTENT_TYPE, envelope::JSON)).body(document.text))
}

/// Whether `If-None-Match` names `etag` (or is `*`): RFC 9110 §13.1.2, weak comparison.
fn if_none_match(req: &HttpRequest, etag: &str) -> bool {
    let values = req.headers().get_all(header::IF_NONE_MATCH).filter_map(|v| v.to_str().ok());
    values.flat_map(|v| v.split(',')).map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
}

/// OpenID Provider metadata for the application's issuer.
#[utoipa::path(get, path = "/v1/applications/{application_id}/.well-known/openid-configuration", tag = "tokens",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    responses((status = 200, description = "OpenID Connect Discovery 1.0 metadata"), (status = 404)))]
pub async fn discovery(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let tenant = tenant_in_path(&state, &req, &path).await?;
    Ok(public_document(&state).json(metadata(&state, &tenant)))
}

/// The same metadata at RFC 8414's well-known place: inserted between the
/// host and the issuer's path, outside `/v1`.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server/v1/applications/{application_id}", tag = "tokens",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    responses((status = 200, description = "RFC 8414 authorization server metadata"), (status = 404)))]
pub async fn authorization_server(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    discovery(state, req, path).await
}

/// The issuer's metadata: OpenID Connect Discovery 1.0 and RFC 8414 alike.
fn metadata(state: &AppState, tenant: &Tenant) -> serde_json::Value {
    let issuer = state.tokens.issuer(tenant.id);
    json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "userinfo_endpoint": format!("{issuer}/oauth/userinfo"),
        "introspection_endpoint": format!("{issuer}/oauth/introspect"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "end_session_endpoint": format!("{issuer}/oauth/logout"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "prompt_values_supported": ["none", "login", "consent", "select_account", "create"],
        "authorization_response_iss_parameter_supported": true,
        "acr_values_supported": ["aal1", "aal2"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": oauth_clients::ID_TOKEN_ALGS,
        "scopes_supported": oauth_clients::SCOPES,
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "claims_supported": ["iss", "aud", "sub", "sid", "aal", "org", "org_role", "ent", "email", "email_verified",
            "auth_time", "nonce", "acr", "amr", "azp", "at_hash",
            "name", "given_name", "family_name", "middle_name", "nickname", "preferred_username", "picture", "website",
            "gender", "birthdate", "zoneinfo", "locale", "updated_at", "iat", "nbf", "exp", "jti"],
    })
}

/// `{}` or no body: a scheduled rotation. `{"immediate": true}`: a key compromise.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateRequest {
    /// Delete every key the application has and sign with a new one at once.
    /// Every access token issued so far stops verifying (each client's next
    /// refresh gets a new one), and a verifier holding a cached JWKS refuses
    /// new tokens until it refetches. For a compromised key only.
    #[serde(default)]
    pub immediate: bool,
}

#[derive(Serialize, ToSchema)]
pub struct RotatedView {
    /// The `kid` of the new signing key, published in the JWKS at once.
    pub kid: Uuid,
    /// When it starts signing: one JWKS max-age (and this service's cache
    /// time) from now for a scheduled rotation, now for an immediate one.
    #[serde(serialize_with = "crate::clock::serialize")]
    pub signs_from: DateTime<Utc>,
}

/// Rotate the application's signing key (admin). Scheduled (no body): the
/// next key is published in the JWKS at once and signs only after every
/// verifier's cached JWKS holds it; the old key signs until then and stays
/// published until its last token has expired, so no verifier refuses a
/// token. A rotation already scheduled is answered as it is.
/// `{"immediate": true}` is for a compromised key (see `RotateRequest`).
#[utoipa::path(post, path = "/v1/applications/{application_id}/signing-keys/rotate", tag = "tokens",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    request_body(content = RotateRequest, description = "Optional: no body or `{}` schedules the rotation."),
    responses((status = 200, body = RotatedView), (status = 404)), security(("secret_key" = ["admin"])))]
pub async fn rotate_signing_key(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let request: RotateRequest = body.optional_json().await?;
    let immediate = request.immediate;
    let rotation = state
        .tenants
        .change(&key.scope, move |turn| async move {
            let keys = turn.keys();
            if immediate {
                keys.rotate_immediately(turn.scope()).await
            } else {
                keys.rotate(turn.scope()).await
            }
        })
        .await?;
    Ok(envelope::ok(RotatedView { kid: rotation.kid, signs_from: rotation.signs_from }))
}
