//! Public token-verification documents (JWKS, OpenID discovery) and signing
//! key rotation. The documents need no credential; the application is named
//! in the path, and the region router forwards by that id.
use actix_web::{
    http::{
        header::{self, HeaderValue},
        Method,
    },
    web, HttpMessage, HttpRequest, HttpResponse, ResponseError,
};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    auth::{public_scope, secret_key::SecretKey, Scope},
    error::{ApiError, ApiResult},
    http::{body::Body, envelope, metrics::RouteLabel, path_id},
    state::AppState,
    tenancy::Tenant,
};

/// The JWKS route: its metrics label, and its path under `/v1`.
const JWKS_ROUTE: &str = "/v1/applications/{application_id}/.well-known/jwks.json";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(&JWKS_ROUTE["/v1".len()..]).route(web::get().to(jwks)))
        .service(
            web::resource("/applications/{application_id}/.well-known/openid-configuration")
                .route(web::get().to(discovery)),
        )
        .service(
            web::resource("/applications/{application_id}/signing-keys/rotate")
                .route(web::post().to(rotate_signing_key)),
        );
}

/// The application named in the path: the one the region router attached
/// (it reads the id from these paths), else resolved here.
pub(crate) async fn tenant_in_path(state: &AppState, req: &HttpRequest, raw: &str) -> ApiResult<Tenant> {
    let id = path_id("Application", raw)?;
    let attached = req.extensions().get::<Tenant>().filter(|t| t.id == id).cloned();
    let tenant = match attached {
        Some(tenant) => Some(tenant),
        None => state.directory.resolve(id).await?,
    };
    match tenant {
        Some(tenant) if state.storage.holds(tenant.region) => Ok(tenant),
        _ => Err(ApiError::not_found("Application", id)),
    }
}

fn public_document() -> actix_web::HttpResponseBuilder {
    let mut builder = HttpResponse::Ok();
    builder
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300")))
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
    jwks_of(&state, tenant).await
}

/// The JWKS of an application this node holds, answered by the region
/// router as soon as it has resolved the application from the path
/// (`region::forward`), before routing: every verifier of the
/// application's tokens fetches it, and it needs nothing the later stages
/// add (no credential, no body, no CORS check, since any origin may read
/// it). The route above answers what this leaves: an application the
/// router did not resolve, and the methods other than GET and HEAD.
pub async fn answer_jwks(state: &AppState, req: &HttpRequest, tenant: &Tenant) -> Option<HttpResponse> {
    let is_jwks = |path: &str| {
        let rest = path.strip_prefix("/v1/applications/").and_then(|p| p.split_once('/')).map(|(_, rest)| rest);
        rest == Some(".well-known/jwks.json")
    };
    if !matches!(*req.method(), Method::GET | Method::HEAD) || !is_jwks(req.path()) {
        return None;
    }
    req.extensions_mut().insert(RouteLabel(JWKS_ROUTE));
    Some(jwks_of(state, tenant.clone()).await.unwrap_or_else(|err| err.error_response()))
}

async fn jwks_of(state: &AppState, tenant: Tenant) -> ApiResult<HttpResponse> {
    let id = tenant.id;
    let scope = public_scope(state, tenant).ok_or_else(|| ApiError::not_found("Application", id))?;
    let document = state.tenants.jwks(&scope).await?;
    Ok(public_document().insert_header((header::CONTENT_TYPE, envelope::JSON)).body(document.0))
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
    let issuer = state.tokens.issuer(tenant.id);
    let base = state.settings.public_url();
    Ok(public_document().json(json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "userinfo_endpoint": format!("{base}/v1/auth/me"),
        "response_types_supported": ["token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["EdDSA"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "grant_types_supported": ["client_credentials"],
        "claims_supported": ["iss", "aud", "sub", "sid", "aal", "org", "org_role", "ent", "email_verified", "iat", "nbf", "exp", "jti"],
    })))
}

#[derive(Serialize, ToSchema)]
pub struct RotatedView {
    /// The `kid` of the new signing key.
    pub kid: Uuid,
}

/// Rotate the application's signing key (admin). New tokens are signed with
/// the new key at once; the old key stays in the JWKS until its last token
/// has expired.
#[utoipa::path(post, path = "/v1/applications/{application_id}/signing-keys/rotate", tag = "tokens",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    responses((status = 200, body = RotatedView), (status = 403, description = "`insufficient_scope`: the key lacks `admin`"), (status = 404)), security(("secret_key" = [])))]
pub async fn rotate_signing_key(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.require(Scope::Admin)?;
    key.own_application(&path)?;
    body.no_fields().await?;
    let kid = state.tenants.rotate_signing_key(&key.scope).await?;
    Ok(envelope::ok(RotatedView { kid }))
}
