//! Application secret keys (operation 3, with list, get and revoke).
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        api_keys::{
            self,
            view::{ApiKeyView, IssuedApiKeyView},
            NewApiKey,
        },
        personal_keys, service_accounts,
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["api-keys"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(create_api_key, list_api_keys, find_api_key, revoke_api_key, verify_api_key))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/api-keys").route(web::post().to(create_api_key)).route(web::get().to(list_api_keys)))
        // Before `/api-keys/{key_id}`, which would otherwise take the path.
        .service(web::resource("/api-keys/verify").route(web::post().to(verify_api_key)))
        .service(web::resource("/api-keys/{key_id}").route(web::get().to(find_api_key)))
        .service(web::resource("/api-keys/{key_id}/revoke").route(web::post().to(revoke_api_key)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKeyRequest {
    /// Unique among the application's active keys.
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// `admin` implies all.
    #[schema(schema_with = crate::openapi::fields::scopes::<50>)]
    pub scopes: Option<Vec<String>>,
    /// Omitted or null: the key never expires.
    #[schema(minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<i64>,
}

/// Create an application secret key. The secret is in the answer once.
#[utoipa::path(post, path = "/v1/api-keys", tag = "api-keys", request_body = CreateApiKeyRequest,
    responses((status = 201, body = IssuedApiKeyView), (status = 409, description = "name in use"), (status = 422)),
    security(("secret_key" = ["admin"])))]
pub async fn create_api_key(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateApiKeyRequest = body.json().await?;
    let new = NewApiKey::parse(&request.name, request.scopes, request.expires_in_days)?;
    let limit = state.settings.limits.active_secret_keys_per_application;
    let issued = api_keys::create(&key.scope, &new, limit).await?;
    Ok(envelope::created(IssuedApiKeyView { key: (&issued.key).into(), secret: issued.secret }))
}

/// List the application's secret keys, newest first.
#[utoipa::path(get, path = "/v1/api-keys", tag = "api-keys", params(ListQuery),
    responses((status = 200, body = [ApiKeyView])), security(("secret_key" = ["api_keys:read"])))]
pub async fn list_api_keys(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (keys, has_more) = api_keys::list(&key.scope, page).await?;
    Ok(envelope::page(keys.iter().map(ApiKeyView::from).collect(), has_more))
}

/// Get one secret key (never its secret).
#[utoipa::path(get, path = "/v1/api-keys/{key_id}", tag = "api-keys",
    params(("key_id" = Uuid, Path, description = "The key's id.")),
    responses((status = 200, body = ApiKeyView), (status = 404)), security(("secret_key" = ["api_keys:read"])))]
pub async fn find_api_key(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("API key", &path)?;
    let found = state.keys.find(&key.scope, id).await?;
    Ok(envelope::ok(ApiKeyView::from(&*found)))
}

/// Revoke a secret key. It stops working at once on this node and within a
/// second on every other.
#[utoipa::path(post, path = "/v1/api-keys/{key_id}/revoke", tag = "api-keys",
    params(("key_id" = Uuid, Path, description = "The key's id.")),
    responses((status = 200, body = ApiKeyView), (status = 404)),
    security(("secret_key" = ["admin"])))]
pub async fn revoke_api_key(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("API key", &path)?;
    body.no_fields().await?;
    let revoked = api_keys::revoke(&key.scope, &state.keys, id).await?;
    Ok(envelope::ok(ApiKeyView::from(&revoked)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyApiKeyRequest {
    /// A user key (`uk_…`) or service-account key (`sak_…`) presented to the application's backend.
    pub secret: String,
}

#[derive(Serialize, ToSchema, Default)]
pub struct VerifiedKeyView {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<Uuid>,
}

/// Resolve a user or service-account key of this application. An unknown,
/// revoked or expired key, or a key of a disabled or deleted service
/// account, is `{valid: false}` with 200.
#[utoipa::path(post, path = "/v1/api-keys/verify", tag = "api-keys", request_body = VerifyApiKeyRequest,
    responses((status = 200, body = VerifiedKeyView)), security(("secret_key" = ["api_keys:read"])))]
pub async fn verify_api_key(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: VerifyApiKeyRequest = body.json().await?;
    let live = key.tenant().environment.is_live();
    let view = if request.secret.starts_with("sak_") {
        verify_service_account_key(&key, live, &request.secret).await?
    } else {
        verify_user_key(&key, live, &request.secret).await?
    };
    Ok(envelope::ok(view))
}

async fn verify_user_key(key: &SecretKey, live: bool, secret: &str) -> ApiResult<VerifiedKeyView> {
    let Some(found) = personal_keys::verify(&key.scope, live, secret).await? else {
        return Ok(VerifiedKeyView::default());
    };
    let (scope, touched) = (key.scope.clone(), found.clone());
    actix_web::rt::spawn(async move {
        if let Err(err) = personal_keys::touch_if_due(&scope, &touched).await {
            tracing::warn!(error = %err, "could not record a personal key's last use");
        }
    });
    Ok(VerifiedKeyView {
        valid: true,
        kind: Some("user"),
        subject_id: Some(found.user_id),
        scopes: Some(api_keys::scope_list(&found.scopes).collect()),
        key_id: Some(found.id),
    })
}

async fn verify_service_account_key(key: &SecretKey, live: bool, secret: &str) -> ApiResult<VerifiedKeyView> {
    let Some(found) = service_accounts::verify(&key.scope, live, secret).await? else {
        return Ok(VerifiedKeyView::default());
    };
    let (scope, touched) = (key.scope.clone(), found.key.clone());
    actix_web::rt::spawn(async move {
        if let Err(err) = service_accounts::touch_if_due(&scope, &touched).await {
            tracing::warn!(error = %err, "could not record a service-account key's last use");
        }
    });
    Ok(VerifiedKeyView {
        valid: true,
        kind: Some("service_account"),
        subject_id: Some(found.account.id),
        scopes: Some(service_accounts::account_scopes(&found.account)),
        key_id: Some(found.key.id),
    })
}
