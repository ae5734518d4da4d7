//! SCIM directories of an organization: make one (its token shown once),
//! list, get, change, delete, and rotate its token.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::scim_directory;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        scim::{self, group_roles, group_roles_of, GroupRole, MAX_NAME},
        validate::Issues,
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["organizations"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_scim_directory,
    list_scim_directories,
    find_scim_directory,
    update_scim_directory,
    delete_scim_directory,
    rotate_scim_directory_token
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/organizations/{organization_id}/scim-directories")
            .route(web::post().to(create_scim_directory))
            .route(web::get().to(list_scim_directories)),
    )
    .service(
        web::resource("/organizations/{organization_id}/scim-directories/{directory_id}")
            .route(web::get().to(find_scim_directory))
            .route(web::patch().to(update_scim_directory))
            .route(web::delete().to(delete_scim_directory)),
    )
    .service(
        web::resource("/organizations/{organization_id}/scim-directories/{directory_id}/rotate-token")
            .route(web::post().to(rotate_scim_directory_token)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateScimDirectoryRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// Groups whose members get a role: a user's role is that of the first
    /// entry naming one of their groups, else `member`. Default none.
    #[schema(max_items = 50)]
    pub group_roles: Option<Vec<GroupRole>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateScimDirectoryRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    /// Replaces the list; users take their new roles at their next change.
    #[schema(max_items = 50)]
    pub group_roles: Option<Vec<GroupRole>>,
}

#[derive(Serialize, ToSchema)]
pub struct ScimDirectoryView {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub name: String,
    /// Where the identity provider sends SCIM requests (`{base_url}/Users`, `{base_url}/Groups`).
    pub base_url: String,
    /// The token's first characters, to tell tokens apart.
    pub token_prefix: String,
    pub group_roles: Vec<GroupRole>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A directory with its token: the one time the token is shown.
#[derive(Serialize, ToSchema)]
pub struct IssuedScimDirectoryView {
    #[serde(flatten)]
    pub directory: ScimDirectoryView,
    /// The bearer token the identity provider sends (`scim_test_…`/`scim_live_…`).
    pub token: String,
}

fn view(state: &AppState, row: &scim_directory::Model) -> ScimDirectoryView {
    ScimDirectoryView {
        id: row.id,
        organization_id: row.organization_id,
        name: row.name.clone(),
        base_url: protocol_base_url(state, row.application_id, row.id),
        token_prefix: row.token_prefix.clone(),
        group_roles: group_roles_of(row),
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// A directory's base URL, under the application's issuer.
pub fn protocol_base_url(state: &AppState, application_id: Uuid, directory_id: Uuid) -> String {
    format!("{}/scim/v2/{directory_id}", crate::tokens::issuer(&state.settings.public_url(), application_id))
}

fn ids(path: &(String, String)) -> ApiResult<(Uuid, Uuid)> {
    Ok((path_id("Organization", &path.0)?, path_id("SCIM directory", &path.1)?))
}

/// Make a SCIM directory for an organization. The answer has its base URL
/// and its token, once: give both to the organization's identity provider.
#[utoipa::path(post, path = "/v1/organizations/{organization_id}/scim-directories", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    request_body = CreateScimDirectoryRequest,
    responses((status = 201, body = IssuedScimDirectoryView), (status = 404),
        (status = 422, description = "validation_failed, or the limit of SCIM directories is reached")),
    security(("secret_key" = ["scim_directories:write"])))]
pub async fn create_scim_directory(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let request: CreateScimDirectoryRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = issues.text("name", &request.name, MAX_NAME);
    let roles = request.group_roles.unwrap_or_default();
    group_roles(&mut issues, &roles);
    issues.finish()?;
    let limit = state.settings.limits.scim_directories_per_application;
    let (row, token) = scim::create(&key.scope, organization_id, name, roles, limit).await?;
    Ok(envelope::created(IssuedScimDirectoryView { directory: view(&state, &row), token }))
}

/// List an organization's SCIM directories, oldest first (never their tokens).
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/scim-directories", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200, body = [ScimDirectoryView]), (status = 404)),
    security(("secret_key" = ["scim_directories:read"])))]
pub async fn list_scim_directories(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let rows = scim::list(&key.scope, organization_id).await?;
    Ok(envelope::ok(rows.iter().map(|row| view(&state, row)).collect::<Vec<_>>()))
}

/// Get a SCIM directory.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/scim-directories/{directory_id}", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("directory_id" = Uuid, Path, description = "The directory's id.")),
    responses((status = 200, body = ScimDirectoryView), (status = 404)),
    security(("secret_key" = ["scim_directories:read"])))]
pub async fn find_scim_directory(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    Ok(envelope::ok(view(&state, &scim::find(&key.scope, organization_id, id).await?)))
}

/// Rename a SCIM directory or change the groups that give roles.
#[utoipa::path(patch, path = "/v1/organizations/{organization_id}/scim-directories/{directory_id}", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("directory_id" = Uuid, Path, description = "The directory's id.")),
    request_body = UpdateScimDirectoryRequest,
    responses((status = 200, body = ScimDirectoryView), (status = 404), (status = 422)),
    security(("secret_key" = ["scim_directories:write"])))]
pub async fn update_scim_directory(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    let request: UpdateScimDirectoryRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = request.name.map(|n| issues.text("name", &n, MAX_NAME));
    if let Some(roles) = &request.group_roles {
        group_roles(&mut issues, roles);
    }
    issues.finish()?;
    let row = scim::update(&key.scope, organization_id, id, name, request.group_roles).await?;
    Ok(envelope::ok(view(&state, &row)))
}

/// Delete a SCIM directory with its users and groups; its token stops at
/// once. The memberships it granted stay.
#[utoipa::path(delete, path = "/v1/organizations/{organization_id}/scim-directories/{directory_id}", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("directory_id" = Uuid, Path, description = "The directory's id.")),
    responses((status = 200), (status = 404)),
    security(("secret_key" = ["scim_directories:write"])))]
pub async fn delete_scim_directory(key: SecretKey, path: web::Path<(String, String)>) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    scim::delete(&key.scope, organization_id, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Replace a SCIM directory's token. The new one is in the answer once;
/// the old one stops at once.
#[utoipa::path(post, path = "/v1/organizations/{organization_id}/scim-directories/{directory_id}/rotate-token", tag = "scim",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("directory_id" = Uuid, Path, description = "The directory's id.")),
    responses((status = 200, body = IssuedScimDirectoryView), (status = 404)),
    security(("secret_key" = ["scim_directories:write"])))]
pub async fn rotate_scim_directory_token(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    body.no_fields().await?;
    let (row, token) = scim::rotate_token(&key.scope, organization_id, id).await?;
    Ok(envelope::ok(IssuedScimDirectoryView { directory: view(&state, &row), token }))
}
