//! Separation-of-duties policies (operation 12, with create, list, get,
//! delete, violations and the what-if check).
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::sod_policy;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        sod::{self, Grant, PolicyInput},
        users,
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
    segments: &["sod-policies"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: |parts| parts.with::<crate::areas::sod::Policies>(),
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_sod_policy,
    list_sod_policies,
    check_grant,
    find_sod_policy,
    update_sod_policy,
    delete_sod_policy,
    list_violations
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/sod-policies").route(web::post().to(create_sod_policy)).route(web::get().to(list_sod_policies)),
    )
    .service(web::resource("/sod-policies/check").route(web::post().to(check_grant)))
    .service(
        web::resource("/sod-policies/{policy_id}")
            .route(web::get().to(find_sod_policy))
            .route(web::patch().to(update_sod_policy))
            .route(web::delete().to(delete_sod_policy)),
    )
    .service(web::resource("/sod-policies/{policy_id}/violations").route(web::get().to(list_violations)));
}

#[derive(Serialize, ToSchema)]
pub struct SodPolicyView {
    pub id: Uuid,
    pub name: String,
    pub role_a: String,
    pub role_b: String,
    /// Enforced: a grant that would give a user both roles is 409
    /// `sod_violation`. Not enforced: allowed and reported (`sod.violation_detected`).
    pub enforced: bool,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&sod_policy::Model> for SodPolicyView {
    fn from(p: &sod_policy::Model) -> Self {
        SodPolicyView {
            id: p.id,
            name: p.name.clone(),
            role_a: p.role_a.clone(),
            role_b: p.role_b.clone(),
            enforced: p.enforced,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// The body of create and of update: the whole policy.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SodPolicyRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// A role (`owner`, `admin`, `member` or a custom one).
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role_a: String,
    /// Must differ from `role_a`.
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role_b: String,
    /// Default true on create; an update without it keeps the policy's.
    pub enforced: Option<bool>,
}

impl From<SodPolicyRequest> for PolicyInput {
    fn from(r: SodPolicyRequest) -> Self {
        PolicyInput { name: r.name, role_a: r.role_a, role_b: r.role_b, enforced: r.enforced }
    }
}

/// Create a separation-of-duties policy.
#[utoipa::path(post, path = "/v1/sod-policies", tag = "governance", request_body = SodPolicyRequest,
    responses((status = 201, body = SodPolicyView), (status = 422)), security(("secret_key" = ["sod_policies:write"])))]
pub async fn create_sod_policy(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: SodPolicyRequest = body.json().await?;
    let limit = state.settings.limits.sod_policies_per_application;
    let input = request.into();
    let policy =
        state.tenants.change(&key.scope, move |turn| async move { sod::create(&turn, input, limit).await }).await?;
    Ok(envelope::created(SodPolicyView::from(&policy)))
}

/// List separation-of-duties policies.
#[utoipa::path(get, path = "/v1/sod-policies", tag = "governance", params(ListQuery),
    responses((status = 200, body = [SodPolicyView])), security(("secret_key" = ["sod_policies:read"])))]
pub async fn list_sod_policies(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (found, has_more) = sod::list(&key.scope, page).await?;
    Ok(envelope::page(found.iter().map(SodPolicyView::from).collect(), has_more))
}

/// Get a separation-of-duties policy.
#[utoipa::path(get, path = "/v1/sod-policies/{policy_id}", tag = "governance",
    params(("policy_id" = Uuid, Path, description = "The policy's id.")),
    responses((status = 200, body = SodPolicyView), (status = 404)), security(("secret_key" = ["sod_policies:read"])))]
pub async fn find_sod_policy(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Separation-of-duties policy", &path)?;
    Ok(envelope::ok(SodPolicyView::from(&sod::find(&key.scope, id).await?)))
}

/// Update a separation-of-duties policy. Memberships that
/// already break it stay; they are listed under its violations.
#[utoipa::path(patch, path = "/v1/sod-policies/{policy_id}", tag = "governance",
    params(("policy_id" = Uuid, Path, description = "The policy's id.")), request_body = SodPolicyRequest,
    responses((status = 200, body = SodPolicyView), (status = 404), (status = 422)), security(("secret_key" = ["sod_policies:write"])))]
pub async fn update_sod_policy(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Separation-of-duties policy", &path)?;
    let request: SodPolicyRequest = body.json().await?;
    let input = request.into();
    let policy =
        state.tenants.change(&key.scope, move |turn| async move { sod::update(&turn, id, input).await }).await?;
    Ok(envelope::ok(SodPolicyView::from(&policy)))
}

/// Delete a separation-of-duties policy.
#[utoipa::path(delete, path = "/v1/sod-policies/{policy_id}", tag = "governance",
    params(("policy_id" = Uuid, Path, description = "The policy's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["sod_policies:write"])))]
pub async fn delete_sod_policy(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Separation-of-duties policy", &path)?;
    state.tenants.change(&key.scope, move |turn| async move { sod::delete(&turn, id).await }).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// A user who holds both of a policy's roles now.
#[derive(Serialize, ToSchema)]
pub struct ViolationView {
    pub user_id: Uuid,
    /// The organizations where the user has `role_a`.
    pub role_a_organization_ids: Vec<Uuid>,
    /// The organizations where the user has `role_b`.
    pub role_b_organization_ids: Vec<Uuid>,
}

/// The users who hold both roles of the policy now, by user id: granted
/// while it was not enforced, or before it existed.
#[utoipa::path(get, path = "/v1/sod-policies/{policy_id}/violations", tag = "governance",
    params(("policy_id" = Uuid, Path, description = "The policy's id."), ListQuery),
    responses((status = 200, body = [ViolationView]), (status = 404)), security(("secret_key" = ["sod_policies:read"])))]
pub async fn list_violations(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Separation-of-duties policy", &path)?;
    let page = query.parsed()?.page()?;
    let (found, has_more) = sod::violations(&key.scope, id, page).await?;
    let views = found
        .into_iter()
        .map(|v| ViolationView {
            user_id: v.user_id,
            role_a_organization_ids: v.role_a_organization_ids,
            role_b_organization_ids: v.role_b_organization_ids,
        })
        .collect();
    Ok(envelope::page(views, has_more))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckGrantRequest {
    pub user_id: Uuid,
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role: String,
    /// The organization of the grant: the user's role there is the one it
    /// would replace. Omitted: a membership in a new organization.
    pub organization_id: Option<Uuid>,
}

#[derive(Serialize, ToSchema)]
pub struct CheckGrantView {
    /// False when an enforced policy would refuse the grant (409 `sod_violation`).
    pub allowed: bool,
    /// Every policy the grant would break, enforced or not.
    pub violations: Vec<SodPolicyView>,
}

/// Whether granting a role to a user would break a policy; changes nothing.
#[utoipa::path(post, path = "/v1/sod-policies/check", tag = "governance", request_body = CheckGrantRequest,
    responses((status = 200, body = CheckGrantView), (status = 404, description = "no such user"), (status = 422)),
    security(("secret_key" = ["sod_policies:read"])))]
pub async fn check_grant(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CheckGrantRequest = body.json().await?;
    let mut issues = crate::areas::validate::Issues::default();
    issues.role("role", &request.role);
    issues.finish()?;
    users::find(&key.scope, request.user_id).await?;
    let policies = state.tenants.state(&key.scope).await?.part::<crate::areas::sod::Policies>();
    // No organization: one no membership of the user is in.
    let organization_id = request.organization_id.unwrap_or(Uuid::nil());
    let grant = Grant { organization_id, user_id: request.user_id, role: request.role };
    let broken = sod::would_break(&key.scope, &policies, &grant).await?;
    Ok(envelope::ok(CheckGrantView {
        allowed: !broken.iter().any(|p| p.enforced),
        violations: broken.iter().map(SodPolicyView::from).collect(),
    }))
}
