//! OAuth clients of the application's OpenID Provider: register, list,
//! get, change, delete, and rotate a confidential client's secret.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::oauth_client;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        oauth_clients::{
            self, check_together, client_type, names, settings_of, uris, ClientPatch, ClientSettings, ClientType,
            DEFAULT_GRANT_TYPES, DEFAULT_SCOPES, GRANT_TYPES, MAX_NAME, SCOPES,
        },
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
    storage::TenantScope,
    tokens::algorithms::Algorithm,
};

pub const AREA: Area = Area {
    segments: &["oauth-clients"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_oauth_client,
    list_oauth_clients,
    find_oauth_client,
    update_oauth_client,
    delete_oauth_client,
    rotate_oauth_client_secret
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/oauth-clients")
            .route(web::post().to(create_oauth_client))
            .route(web::get().to(list_oauth_clients)),
    )
    .service(
        web::resource("/oauth-clients/{client_id}")
            .route(web::get().to(find_oauth_client))
            .route(web::patch().to(update_oauth_client))
            .route(web::delete().to(delete_oauth_client)),
    )
    .service(
        web::resource("/oauth-clients/{client_id}/rotate-secret").route(web::post().to(rotate_oauth_client_secret)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOAuthClientRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// `confidential` (default): a server with a secret. `public`: a
    /// browser or native app, with PKCE and no secret. Fixed at creation.
    #[serde(rename = "type")]
    pub client_type: Option<ClientType>,
    /// Where the provider may send the user back, matched exactly: `https`,
    /// `http` on a loopback host, or (public clients) a reverse-domain
    /// private-use scheme. No wildcard, no fragment. Written in normal form.
    #[schema(schema_with = crate::openapi::fields::client_uris)]
    pub redirect_uris: Option<Vec<String>>,
    /// Where RP-initiated logout may send the user, by the same rules.
    #[schema(schema_with = crate::openapi::fields::client_uris)]
    pub post_logout_redirect_uris: Option<Vec<String>>,
    /// Default `authorization_code` and `refresh_token`.
    #[schema(schema_with = crate::openapi::fields::client_grant_types)]
    pub grant_types: Option<Vec<String>>,
    /// What the client may ask for; must include `openid`. Default
    /// `openid`, `profile`, `email`, `offline_access`.
    #[schema(schema_with = crate::openapi::fields::client_scopes)]
    pub scopes: Option<Vec<String>>,
    /// The application's own app: no consent screen. Default false.
    pub first_party: Option<bool>,
    /// `EdDSA` (the default) or `RS256`, for libraries that verify only
    /// RS256: the application then gets an RSA key, published in its JWKS.
    #[schema(schema_with = crate::openapi::fields::id_token_alg)]
    pub id_token_signed_response_alg: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateOAuthClientRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    #[schema(schema_with = crate::openapi::fields::client_uris)]
    pub redirect_uris: Option<Vec<String>>,
    #[schema(schema_with = crate::openapi::fields::client_uris)]
    pub post_logout_redirect_uris: Option<Vec<String>>,
    #[schema(schema_with = crate::openapi::fields::client_grant_types)]
    pub grant_types: Option<Vec<String>>,
    #[schema(schema_with = crate::openapi::fields::client_scopes)]
    pub scopes: Option<Vec<String>>,
    pub first_party: Option<bool>,
    #[schema(schema_with = crate::openapi::fields::id_token_alg)]
    pub id_token_signed_response_alg: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct OAuthClientView {
    pub id: Uuid,
    /// The same as `id`: what the client sends as `client_id`.
    pub client_id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub client_type: ClientType,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub scopes: Vec<String>,
    pub first_party: bool,
    pub id_token_signed_response_alg: String,
    /// `client_secret_basic` (or `client_secret_post`) for a confidential
    /// client; `none` for a public one.
    pub token_endpoint_auth_method: &'static str,
    /// The secret's first characters; null for a public client.
    pub secret_prefix: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

/// A client with its secret, shown this once (creation and rotation).
#[derive(Serialize, ToSchema)]
pub struct IssuedOAuthClientView {
    #[serde(flatten)]
    pub client: OAuthClientView,
    /// The secret (`ocs_…`); only its hash is kept. Null for a public client.
    pub client_secret: Option<String>,
}

impl From<&oauth_client::Model> for OAuthClientView {
    fn from(row: &oauth_client::Model) -> Self {
        let settings = settings_of(row);
        let kind = client_type(row);
        OAuthClientView {
            id: row.id,
            client_id: row.id,
            name: settings.name,
            client_type: kind,
            redirect_uris: settings.redirect_uris,
            post_logout_redirect_uris: settings.post_logout_redirect_uris,
            grant_types: settings.grant_types,
            scopes: settings.scopes,
            first_party: settings.first_party,
            id_token_signed_response_alg: settings.id_token_signed_response_alg,
            token_endpoint_auth_method: match kind {
                ClientType::Confidential => "client_secret_basic",
                ClientType::Public => "none",
            },
            secret_prefix: row.secret_prefix.clone(),
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

fn defaults(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// Register an OAuth client: a relying party that signs the application's
/// users in through its OpenID Provider. A confidential client's secret is
/// in the answer once.
#[utoipa::path(post, path = "/v1/oauth-clients", tag = "oauth-clients",
    request_body = CreateOAuthClientRequest,
    responses((status = 201, body = IssuedOAuthClientView), (status = 422, description = "validation_failed, or the limit of OAuth clients is reached")),
    security(("secret_key" = ["oauth_clients:write"])))]
pub async fn create_oauth_client(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateOAuthClientRequest = body.json().await?;
    let kind = request.client_type.unwrap_or(ClientType::Confidential);
    let public = kind == ClientType::Public;
    let mut issues = Issues::default();
    let settings = ClientSettings {
        name: issues.text("name", &request.name, MAX_NAME),
        redirect_uris: uris(&mut issues, "redirect_uris", request.redirect_uris.unwrap_or_default(), public),
        post_logout_redirect_uris: uris(
            &mut issues,
            "post_logout_redirect_uris",
            request.post_logout_redirect_uris.unwrap_or_default(),
            public,
        ),
        grant_types: names(
            &mut issues,
            "grant_types",
            request.grant_types.unwrap_or_else(|| defaults(DEFAULT_GRANT_TYPES)),
            GRANT_TYPES,
        ),
        scopes: names(&mut issues, "scopes", request.scopes.unwrap_or_else(|| defaults(DEFAULT_SCOPES)), SCOPES),
        first_party: request.first_party.unwrap_or(false),
        id_token_signed_response_alg: request.id_token_signed_response_alg.unwrap_or_else(|| "EdDSA".into()),
    };
    check_together(&mut issues, &settings);
    issues.finish()?;
    let limit = state.settings.limits.oauth_clients_per_application;
    let (row, secret) = oauth_clients::create(&key.scope, kind, settings, limit).await?;
    publish_signing_key(&state, &key.scope, &row).await;
    Ok(envelope::created(IssuedOAuthClientView { client: OAuthClientView::from(&row), client_secret: secret }))
}

/// Makes the application's first key of the client's ID-token algorithm
/// (RS256's RSA key) now, so that it is in the JWKS long before the
/// client's first ID token. If that fails, the first code exchange makes it.
async fn publish_signing_key(state: &AppState, scope: &TenantScope, client: &oauth_client::Model) {
    let Some(algorithm) = Algorithm::parse(&client.id_token_signed_response_alg) else { return };
    if let Err(err) = state.tenants.signing_state_for(scope, algorithm).await {
        tracing::warn!(error = %err, algorithm = algorithm.as_str(), "the client's signing key was not made");
    }
}

/// List the application's OAuth clients, newest first (never their secrets).
#[utoipa::path(get, path = "/v1/oauth-clients", tag = "oauth-clients", params(ListQuery),
    responses((status = 200, body = [OAuthClientView])), security(("secret_key" = ["oauth_clients:read"])))]
pub async fn list_oauth_clients(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = oauth_clients::list(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(OAuthClientView::from).collect(), has_more))
}

/// Get an OAuth client.
#[utoipa::path(get, path = "/v1/oauth-clients/{client_id}", tag = "oauth-clients",
    params(("client_id" = Uuid, Path, description = "The client's id.")),
    responses((status = 200, body = OAuthClientView), (status = 404)), security(("secret_key" = ["oauth_clients:read"])))]
pub async fn find_oauth_client(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("OAuth client", &path)?;
    let row = oauth_clients::find(&key.scope, id).await?;
    Ok(envelope::ok(OAuthClientView::from(&row)))
}

/// Change an OAuth client's settings; its type stays. The result is checked
/// as a whole client (a public client's URIs, grants against redirect URIs).
#[utoipa::path(patch, path = "/v1/oauth-clients/{client_id}", tag = "oauth-clients",
    params(("client_id" = Uuid, Path, description = "The client's id.")),
    request_body = UpdateOAuthClientRequest,
    responses((status = 200, body = OAuthClientView), (status = 404), (status = 422)), security(("secret_key" = ["oauth_clients:write"])))]
pub async fn update_oauth_client(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("OAuth client", &path)?;
    let request: UpdateOAuthClientRequest = body.json().await?;
    let mut issues = Issues::default();
    let patch = ClientPatch {
        name: request.name.map(|n| issues.text("name", &n, MAX_NAME)),
        // The URIs are checked against the stored client's type, in the change.
        redirect_uris: request.redirect_uris,
        post_logout_redirect_uris: request.post_logout_redirect_uris,
        grant_types: request.grant_types.map(|g| names(&mut issues, "grant_types", g, GRANT_TYPES)),
        scopes: request.scopes.map(|s| names(&mut issues, "scopes", s, SCOPES)),
        first_party: request.first_party,
        id_token_signed_response_alg: request.id_token_signed_response_alg,
    };
    issues.finish()?;
    let row = oauth_clients::update(&key.scope, id, patch).await?;
    publish_signing_key(&state, &key.scope, &row).await;
    Ok(envelope::ok(OAuthClientView::from(&row)))
}

/// Delete an OAuth client; its secret stops authenticating at once.
#[utoipa::path(delete, path = "/v1/oauth-clients/{client_id}", tag = "oauth-clients",
    params(("client_id" = Uuid, Path, description = "The client's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["oauth_clients:write"])))]
pub async fn delete_oauth_client(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("OAuth client", &path)?;
    oauth_clients::delete(&key.scope, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Replace a confidential client's secret. The new one is in the answer
/// once; the old one stops authenticating at once. A public client has
/// none (409).
#[utoipa::path(post, path = "/v1/oauth-clients/{client_id}/rotate-secret", tag = "oauth-clients",
    params(("client_id" = Uuid, Path, description = "The client's id.")),
    responses((status = 200, body = IssuedOAuthClientView), (status = 404), (status = 409, description = "conflict: a public client has no secret")),
    security(("secret_key" = ["oauth_clients:write"])))]
pub async fn rotate_oauth_client_secret(
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("OAuth client", &path)?;
    body.no_fields().await?;
    let (row, secret) = oauth_clients::rotate_secret(&key.scope, id).await?;
    Ok(envelope::ok(IssuedOAuthClientView { client: OAuthClientView::from(&row), client_secret: Some(secret) }))
}
