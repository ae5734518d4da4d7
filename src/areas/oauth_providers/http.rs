//! Identity (OAuth) provider settings (operation 1): upsert per provider and
//! list, client secrets never shown.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::oauth_provider;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    area::Area,
    areas::oauth_providers::{self, OAuthProviderError, ProviderUpdate},
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{body::Body, envelope},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: |parts| parts.with::<crate::areas::oauth_providers::Providers>(),
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(upsert_oauth_provider, list_oauth_providers))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/applications/{application_id}/providers/oauth")
            .route(web::put().to(upsert_oauth_provider))
            .route(web::get().to(list_oauth_providers)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpsertOAuthProviderRequest {
    #[schema(schema_with = crate::openapi::fields::oauth_provider)]
    pub provider: String,
    pub enabled: bool,
    /// The application's client id at the provider; omitted or null: none.
    /// A production application needs it to enable the provider.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub client_id: Option<String>,
    /// The application's client secret at the provider. Stored sealed,
    /// never returned; omit it to keep the stored one.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::oauth_client_secret)]
    pub client_secret: Option<String>,
    /// The scopes asked of the provider (duplicates dropped); omitted, null
    /// or empty: the provider's defaults.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::oauth_scopes)]
    pub scopes: Option<Vec<String>>,
    /// Use the operator's shared development credentials instead of the
    /// application's own (development applications only: a production one
    /// gets 422 `production_requires_own_credentials`). Omitted: false.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::optional_boolean)]
    pub use_shared_dev_credentials: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct OAuthProviderView {
    /// `google`, `github`, `microsoft`, `apple`, `gitlab`, `discord`, `linkedin` or `slack`.
    pub provider: String,
    pub enabled: bool,
    pub client_id: Option<String>,
    /// Whether a client secret is stored (it is never shown).
    pub has_secret: bool,
    pub scopes: Vec<String>,
    pub use_shared_dev_credentials: bool,
    /// When the settings last changed.
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&oauth_provider::Model> for OAuthProviderView {
    fn from(row: &oauth_provider::Model) -> Self {
        OAuthProviderView {
            provider: row.provider.clone(),
            enabled: row.enabled,
            client_id: row.client_id.clone(),
            has_secret: row.client_secret_sealed.is_some(),
            scopes: oauth_providers::scopes_of(row),
            use_shared_dev_credentials: row.use_shared_dev_credentials,
            updated_at: row.updated_at,
        }
    }
}

/// Upsert the application's settings for one identity provider.
/// Every field but `client_secret` is replaced; an omitted `client_secret`
/// keeps the stored one.
#[utoipa::path(put, path = "/v1/applications/{application_id}/providers/oauth", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application.")),
    request_body = UpsertOAuthProviderRequest,
    responses((status = 200, body = OAuthProviderView),
        (status = 404, description = "`not_found`: not the caller's application"),
        (status = 422, description = "`validation_failed`, or `production_requires_own_credentials`: a production application may not use the shared development credentials, nor enable a provider without a `client_id` and a stored or supplied `client_secret`")),
    security(("secret_key" = ["admin"])))]
pub async fn upsert_oauth_provider(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let r: UpsertOAuthProviderRequest = body.json().await?;
    let update = ProviderUpdate {
        provider: r.provider,
        enabled: r.enabled,
        client_id: r.client_id,
        client_secret: r.client_secret,
        scopes: r.scopes,
        use_shared_dev_credentials: r.use_shared_dev_credentials,
    };
    let checked = oauth_providers::check(update, key.tenant().environment)?;
    let row = state
        .tenants
        .change(&key.scope, move |turn| async move { oauth_providers::upsert(&turn, checked).await })
        .await?;
    Ok(envelope::ok(OAuthProviderView::from(&row)))
}

/// The application's identity provider settings, one per configured
/// provider (client secrets never shown).
#[utoipa::path(get, path = "/v1/applications/{application_id}/providers/oauth", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application.")),
    responses((status = 200, body = [OAuthProviderView]),
        (status = 404, description = "`not_found`: not the caller's application")),
    security(("secret_key" = ["providers:read"])))]
pub async fn list_oauth_providers(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let rows = oauth_providers::all(&key.scope).await.map_err(OAuthProviderError::from)?;
    Ok(envelope::page(rows.iter().map(OAuthProviderView::from).collect(), false))
}
