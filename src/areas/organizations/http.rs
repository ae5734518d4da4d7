//! Organizations and memberships, managed with a secret key (contract §5).
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        memberships::{self, view::MembershipView},
        organizations::{self, view::OrganizationView},
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
    segments: &["organizations"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_organization,
    list_organizations,
    find_organization,
    update_organization,
    delete_organization,
    add_membership,
    list_memberships,
    update_membership,
    remove_membership
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/organizations")
            .route(web::post().to(create_organization))
            .route(web::get().to(list_organizations)),
    )
    .service(
        web::resource("/organizations/{organization_id}")
            .route(web::get().to(find_organization))
            .route(web::patch().to(update_organization))
            .route(web::delete().to(delete_organization)),
    )
    .service(
        web::resource("/organizations/{organization_id}/memberships")
            .route(web::post().to(add_membership))
            .route(web::get().to(list_memberships)),
    )
    .service(
        web::resource("/organizations/{organization_id}/memberships/{user_id}")
            .route(web::patch().to(update_membership))
            .route(web::delete().to(remove_membership)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrganizationRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// Unique in the application; omitted: made from the name.
    #[schema(pattern = "^[a-z0-9][a-z0-9-]{0,62}$")]
    pub slug: Option<String>,
}

/// Create an organization.
#[utoipa::path(post, path = "/v1/organizations", tag = "organizations", request_body = CreateOrganizationRequest,
    responses((status = 201, body = OrganizationView), (status = 409, description = "slug in use"), (status = 422)),
    security(("secret_key" = ["organizations:write"])))]
pub async fn create_organization(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateOrganizationRequest = body.json().await?;
    let created = organizations::create(&key.scope, &request.name, request.slug).await?;
    Ok(envelope::created(OrganizationView::from(&created)))
}

/// List organizations, newest first.
#[utoipa::path(get, path = "/v1/organizations", tag = "organizations", params(ListQuery),
    responses((status = 200, body = [OrganizationView])), security(("secret_key" = ["organizations:read"])))]
pub async fn list_organizations(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (found, has_more) = organizations::list(&key.scope, page).await?;
    Ok(envelope::page(found.iter().map(OrganizationView::from).collect(), has_more))
}

/// Get an organization.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200, body = OrganizationView), (status = 404)), security(("secret_key" = ["organizations:read"])))]
pub async fn find_organization(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path)?;
    Ok(envelope::ok(OrganizationView::from(&organizations::find(&key.scope, id).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateOrganizationRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    #[schema(pattern = "^[a-z0-9][a-z0-9-]{0,62}$")]
    pub slug: Option<String>,
}

/// Rename an organization or change its slug.
#[utoipa::path(patch, path = "/v1/organizations/{organization_id}", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    request_body = UpdateOrganizationRequest,
    responses((status = 200, body = OrganizationView), (status = 404), (status = 409), (status = 422)),
    security(("secret_key" = ["organizations:write"])))]
pub async fn update_organization(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path)?;
    let request: UpdateOrganizationRequest = body.json().await?;
    let updated = organizations::update(&key.scope, id, request.name, request.slug).await?;
    Ok(envelope::ok(OrganizationView::from(&updated)))
}

/// Delete an organization and its memberships.
#[utoipa::path(delete, path = "/v1/organizations/{organization_id}", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["organizations:write"])))]
pub async fn delete_organization(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path)?;
    organizations::delete(&key.scope, id).await?;
    state.entitlements.changed(key.scope.tenant().id, id).await;
    Ok(envelope::ok(serde_json::json!({})))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMembershipRequest {
    pub user_id: Uuid,
    /// `owner`, `admin`, `member` or a custom role.
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role: String,
}

/// Add a user to an organization with a role.
#[utoipa::path(post, path = "/v1/organizations/{organization_id}/memberships", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    request_body = AddMembershipRequest,
    responses((status = 201, body = MembershipView), (status = 404), (status = 409, description = "already_member, or sod_violation: an enforced separation-of-duties policy forbids the role for this user"), (status = 422)),
    security(("secret_key" = ["organizations:write"])))]
pub async fn add_membership(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let request: AddMembershipRequest = body.json().await?;
    let policies = state.tenants.state(&key.scope).await?.part::<crate::areas::sod::Policies>();
    let added = memberships::add(&key.scope, &policies, organization_id, request.user_id, request.role).await?;
    Ok(envelope::created(MembershipView::from(&added)))
}

/// List an organization's members and their roles.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/memberships", tag = "organizations", params(("organization_id" = Uuid, Path, description = "The organization's id."), ListQuery),
    responses((status = 200, body = [MembershipView]), (status = 404)), security(("secret_key" = ["organizations:read"])))]
pub async fn list_memberships(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let page = query.parsed()?.page()?;
    let (found, has_more) = memberships::list(&key.scope, organization_id, page).await?;
    Ok(envelope::page(found.iter().map(MembershipView::from).collect(), has_more))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMembershipRequest {
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role: String,
}

/// Change a member's role.
#[utoipa::path(patch, path = "/v1/organizations/{organization_id}/memberships/{user_id}", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id."), ("user_id" = Uuid, Path, description = "The user's id.")),
    request_body = UpdateMembershipRequest,
    responses((status = 200, body = MembershipView), (status = 404), (status = 409, description = "sod_violation, or last_owner: the organization's last owner cannot be demoted"), (status = 422)), security(("secret_key" = ["organizations:write"])))]
pub async fn update_membership(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path.0)?;
    let user_id = path_id("Membership", &path.1)?;
    let request: UpdateMembershipRequest = body.json().await?;
    let policies = state.tenants.state(&key.scope).await?.part::<crate::areas::sod::Policies>();
    let updated = memberships::update(&key.scope, &policies, organization_id, user_id, request.role).await?;
    Ok(envelope::ok(MembershipView::from(&updated)))
}

/// Remove a user from an organization.
#[utoipa::path(delete, path = "/v1/organizations/{organization_id}/memberships/{user_id}", tag = "organizations",
    params(("organization_id" = Uuid, Path, description = "The organization's id."), ("user_id" = Uuid, Path, description = "The user's id.")),
    responses((status = 200), (status = 404), (status = 409, description = "last_owner: the organization's last owner cannot be removed")), security(("secret_key" = ["organizations:write"])))]
pub async fn remove_membership(key: SecretKey, path: web::Path<(String, String)>) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path.0)?;
    let user_id = path_id("Membership", &path.1)?;
    memberships::remove(&key.scope, organization_id, user_id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}
