//! Service accounts (operation 14, with list, get, update, delete) and
//! their keys (`sak_…`), which `POST /v1/api-keys/verify` resolves.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{service_account, service_account_key};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        api_keys::{
            is_usable,
            view::{ApiKeyView, IssuedApiKeyView},
            NewApiKey,
        },
        service_accounts::{self, account_scopes, NewServiceAccount, ServiceAccountPatch, MAX_DESCRIPTION, MAX_NAME},
        validate::Issues,
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
    segments: &["service-accounts"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_service_account,
    list_service_accounts,
    find_service_account,
    update_service_account,
    delete_service_account,
    create_service_account_key,
    list_service_account_keys,
    revoke_service_account_key
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/service-accounts")
            .route(web::post().to(create_service_account))
            .route(web::get().to(list_service_accounts)),
    )
    .service(
        web::resource("/service-accounts/{account_id}")
            .route(web::get().to(find_service_account))
            .route(web::patch().to(update_service_account))
            .route(web::delete().to(delete_service_account)),
    )
    .service(
        web::resource("/service-accounts/{account_id}/keys")
            .route(web::post().to(create_service_account_key))
            .route(web::get().to(list_service_account_keys)),
    )
    .service(
        web::resource("/service-accounts/{account_id}/keys/{key_id}/revoke")
            .route(web::post().to(revoke_service_account_key)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateServiceAccountRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub description: Option<String>,
    /// Default true; a disabled account's keys verify as invalid.
    pub enabled: Option<bool>,
    /// What the account's keys carry; `admin` implies all.
    #[schema(schema_with = crate::openapi::fields::scopes::<50>)]
    pub scopes: Option<Vec<String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateServiceAccountRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    /// Null removes it.
    #[serde(default, deserialize_with = "crate::http::body::present")]
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub description: Option<Option<String>>,
    /// False refuses the account's keys at once, on every node.
    pub enabled: Option<bool>,
    #[schema(schema_with = crate::openapi::fields::scopes::<50>)]
    pub scopes: Option<Vec<String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateServiceAccountKeyRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// Omitted or null: the key never expires.
    #[schema(minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct ServiceAccountView {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub scopes: Vec<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<&service_account::Model> for ServiceAccountView {
    fn from(row: &service_account::Model) -> Self {
        ServiceAccountView {
            id: row.id,
            name: row.name.clone(),
            description: row.description.clone(),
            enabled: row.enabled,
            scopes: account_scopes(row),
            created_at: row.created_at,
        }
    }
}

/// A service-account key answers the API-key object; its scopes are its account's.
fn key_view<'a>(account: &'a service_account::Model, key: &'a service_account_key::Model) -> ApiKeyView<'a> {
    ApiKeyView {
        active: is_usable(key.revoked_at, key.expires_at, Utc::now()),
        id: key.id,
        name: &key.name,
        prefix: &key.prefix,
        scopes: &account.scopes,
        expires_at: key.expires_at,
        created_at: key.created_at,
        last_used_at: key.last_used_at,
        revoked_at: key.revoked_at,
    }
}

fn checked_scopes(issues: &mut Issues, scopes: Option<Vec<String>>) -> Option<Vec<String>> {
    scopes.map(|s| service_accounts::scopes(issues, s))
}

/// Create a service account, a machine principal whose keys the
/// application's backend verifies.
#[utoipa::path(post, path = "/v1/service-accounts", tag = "service-accounts",
    request_body = CreateServiceAccountRequest,
    responses((status = 201, body = ServiceAccountView), (status = 422, description = "validation_failed, or the limit of service accounts is reached")),
    security(("secret_key" = ["service_accounts:write"])))]
pub async fn create_service_account(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateServiceAccountRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = issues.text("name", &request.name, MAX_NAME);
    let description = request.description.map(|d| issues.text("description", &d, MAX_DESCRIPTION));
    let scopes = checked_scopes(&mut issues, request.scopes).unwrap_or_default();
    issues.finish()?;
    let new = NewServiceAccount { name, description, enabled: request.enabled.unwrap_or(true), scopes };
    let limit = state.settings.limits.service_accounts_per_application;
    let row = service_accounts::create(&key.scope, new, limit).await?;
    Ok(envelope::created(ServiceAccountView::from(&row)))
}

/// List the application's service accounts, newest first.
#[utoipa::path(get, path = "/v1/service-accounts", tag = "service-accounts", params(ListQuery),
    responses((status = 200, body = [ServiceAccountView])), security(("secret_key" = ["service_accounts:read"])))]
pub async fn list_service_accounts(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = service_accounts::list(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(ServiceAccountView::from).collect(), has_more))
}

/// Get a service account.
#[utoipa::path(get, path = "/v1/service-accounts/{account_id}", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id.")),
    responses((status = 200, body = ServiceAccountView), (status = 404)), security(("secret_key" = ["service_accounts:read"])))]
pub async fn find_service_account(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Service account", &path)?;
    let row = service_accounts::find(&key.scope, id).await?;
    Ok(envelope::ok(ServiceAccountView::from(&row)))
}

/// Change a service account's name, description, scopes, or whether it is
/// enabled. Disabling it refuses its keys at once on every node.
#[utoipa::path(patch, path = "/v1/service-accounts/{account_id}", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id.")),
    request_body = UpdateServiceAccountRequest,
    responses((status = 200, body = ServiceAccountView), (status = 404), (status = 422)), security(("secret_key" = ["service_accounts:write"])))]
pub async fn update_service_account(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Service account", &path)?;
    let request: UpdateServiceAccountRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = request.name.map(|n| issues.text("name", &n, MAX_NAME));
    let description = request.description.map(|d| d.map(|d| issues.text("description", &d, MAX_DESCRIPTION)));
    let scopes = checked_scopes(&mut issues, request.scopes);
    issues.finish()?;
    let patch = ServiceAccountPatch { name, description, enabled: request.enabled, scopes };
    let row = service_accounts::update(&key.scope, id, patch).await?;
    Ok(envelope::ok(ServiceAccountView::from(&row)))
}

/// Delete a service account and its keys.
#[utoipa::path(delete, path = "/v1/service-accounts/{account_id}", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["service_accounts:write"])))]
pub async fn delete_service_account(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Service account", &path)?;
    service_accounts::delete(&key.scope, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Issue a key of the service account (`sak_…`). The secret is in the answer once.
#[utoipa::path(post, path = "/v1/service-accounts/{account_id}/keys", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id.")),
    request_body = CreateServiceAccountKeyRequest,
    responses((status = 201, body = IssuedApiKeyView), (status = 404), (status = 422, description = "validation_failed, or the limit of the account's active keys is reached")),
    security(("secret_key" = ["service_accounts:write"])))]
pub async fn create_service_account_key(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Service account", &path)?;
    let request: CreateServiceAccountKeyRequest = body.json().await?;
    let new = NewApiKey::parse(&request.name, None, request.expires_in_days)?;
    let limit = state.settings.limits.keys_per_service_account;
    let (account, issued, secret) = service_accounts::create_key(&key.scope, id, &new, limit).await?;
    Ok(envelope::created(IssuedApiKeyView { key: key_view(&account, &issued), secret }))
}

/// List the service account's keys, newest first (never their secrets).
#[utoipa::path(get, path = "/v1/service-accounts/{account_id}/keys", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id."), ListQuery),
    responses((status = 200, body = [ApiKeyView]), (status = 404)), security(("secret_key" = ["service_accounts:read"])))]
pub async fn list_service_account_keys(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Service account", &path)?;
    let page = query.parsed()?.page()?;
    let (account, keys, has_more) = service_accounts::list_keys(&key.scope, id, page).await?;
    Ok(envelope::page(keys.iter().map(|k| key_view(&account, k)).collect(), has_more))
}

/// Revoke a service account's key. It stops verifying at once on every node.
#[utoipa::path(post, path = "/v1/service-accounts/{account_id}/keys/{key_id}/revoke", tag = "service-accounts",
    params(("account_id" = Uuid, Path, description = "The service account's id."),
        ("key_id" = Uuid, Path, description = "The key's id.")),
    responses((status = 200, body = ApiKeyView), (status = 404)), security(("secret_key" = ["service_accounts:write"])))]
pub async fn revoke_service_account_key(
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let (account, key_id) = path.into_inner();
    let account_id = path_id("Service account", &account)?;
    let key_id = path_id("Service account key", &key_id)?;
    body.no_fields().await?;
    let (account, revoked) = service_accounts::revoke_key(&key.scope, account_id, key_id).await?;
    Ok(envelope::ok(key_view(&account, &revoked)))
}
