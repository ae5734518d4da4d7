//! Entitlements (operation 18, with features, plans, an organization's plan,
//! its overrides and the explanation of one feature).
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{feature, plan};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::areas::organizations::view::OrganizationView;
use crate::{
    area::Area,
    areas::entitlements::{
        self, assignments,
        definitions::{self, FeatureInput},
        Entitlement, Explanation,
    },
    auth::secret_key::SecretKey,
    error::{ApiError, ApiResult},
    http::{
        body::{present, Body},
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
    storage::Page,
};

pub const AREA: Area = Area {
    segments: &["organizations", "features", "plans"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: |parts| parts.with::<crate::areas::entitlements::Catalog>(),
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    put_feature,
    list_features,
    delete_feature,
    put_plan,
    list_plans,
    delete_plan,
    set_organization_plan,
    put_override,
    delete_override,
    org_entitlements,
    explain_entitlement
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/features").route(web::get().to(list_features)))
        .service(
            web::resource("/features/{feature_key}")
                .route(web::put().to(put_feature))
                .route(web::delete().to(delete_feature)),
        )
        .service(web::resource("/plans").route(web::get().to(list_plans)))
        .service(web::resource("/plans/{plan_key}").route(web::put().to(put_plan)).route(web::delete().to(delete_plan)))
        .service(web::resource("/organizations/{organization_id}/plan").route(web::put().to(set_organization_plan)))
        .service(
            web::resource("/organizations/{organization_id}/entitlement-overrides/{feature_key}")
                .route(web::put().to(put_override))
                .route(web::delete().to(delete_override)),
        )
        .service(web::resource("/organizations/{organization_id}/entitlements").route(web::get().to(org_entitlements)))
        .service(
            web::resource("/organizations/{organization_id}/entitlements/{feature_key}/explain")
                .route(web::get().to(explain_entitlement)),
        );
}

#[derive(Serialize, ToSchema)]
pub struct FeatureView {
    pub feature_key: String,
    /// `boolean`, `limit` or `config`.
    pub kind: String,
    pub default_value: Value,
    pub description: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&feature::Model> for FeatureView {
    fn from(f: &feature::Model) -> Self {
        FeatureView {
            feature_key: f.key.clone(),
            kind: f.kind.clone(),
            default_value: f.default_value.clone(),
            description: f.description.clone(),
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PlanView {
    pub plan_key: String,
    pub name: String,
    /// `{feature_key: value}`.
    #[schema(value_type = Object)]
    pub grants: Value,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&plan::Model> for PlanView {
    fn from(p: &plan::Model) -> Self {
        PlanView {
            plan_key: p.key.clone(),
            name: p.name.clone(),
            grants: p.grants.clone(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// A page of a list the tenant's state holds in memory.
fn page_of<T, V>(all: Vec<T>, page: Page, view: impl Fn(T) -> V) -> ApiResult<HttpResponse>
where
    V: Serialize,
{
    let total = all.len() as u64;
    let views = all.into_iter().skip(page.offset as usize).take(page.limit as usize).map(view).collect();
    Ok(envelope::page(views, page.offset + page.limit < total))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutFeatureRequest {
    #[schema(schema_with = crate::openapi::fields::feature_kind)]
    pub kind: String,
    /// A boolean, a non-negative integer (a limit) or any JSON up to 8 KiB (a config), as `kind` says.
    pub default_value: Value,
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub description: Option<String>,
}

/// Create or replace a feature. Its kind changes only while no plan grants
/// it and no organization overrides it (409 otherwise).
#[utoipa::path(put, path = "/v1/features/{feature_key}", tag = "entitlements",
    params(("feature_key" = String, Path, pattern = r"^[a-z][a-z0-9_:.-]{0,63}$", description = "The feature's key.")),
    request_body = PutFeatureRequest,
    responses((status = 200, body = FeatureView), (status = 409, description = "conflict: the kind of a feature in use"), (status = 422)),
    security(("secret_key" = ["entitlements:write"])))]
pub async fn put_feature(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let request: PutFeatureRequest = body.json().await?;
    let input =
        FeatureInput { kind: request.kind, default_value: request.default_value, description: request.description };
    let limit = state.settings.limits.features_per_application;
    let feature_key = path.into_inner();
    let feature = state
        .tenants
        .change(
            &key.scope,
            move |turn| async move { definitions::put_feature(&turn, &feature_key, input, limit).await },
        )
        .await?;
    Ok(envelope::ok(FeatureView::from(&feature)))
}

/// List the application's features.
#[utoipa::path(get, path = "/v1/features", tag = "entitlements", params(ListQuery),
    responses((status = 200, body = [FeatureView])), security(("secret_key" = ["entitlements:read"])))]
pub async fn list_features(
    state: web::Data<AppState>,
    key: SecretKey,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let catalog = state.tenants.state(&key.scope).await?.part::<entitlements::Catalog>();
    page_of(catalog.features.values().collect(), page, FeatureView::from)
}

/// Delete a feature nothing grants or overrides (409 otherwise).
#[utoipa::path(delete, path = "/v1/features/{feature_key}", tag = "entitlements",
    params(("feature_key" = String, Path, description = "The feature's key.")),
    responses((status = 200), (status = 404), (status = 409)), security(("secret_key" = ["entitlements:write"])))]
pub async fn delete_feature(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let feature_key = path.into_inner();
    state
        .tenants
        .change(&key.scope, move |turn| async move { definitions::delete_feature(&turn, &feature_key).await })
        .await?;
    Ok(envelope::ok(serde_json::json!({})))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutPlanRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// `{feature_key: value}`: each a defined feature, each value of its kind.
    #[schema(value_type = Object)]
    pub grants: Map<String, Value>,
}

/// Create or replace a plan.
#[utoipa::path(put, path = "/v1/plans/{plan_key}", tag = "entitlements",
    params(("plan_key" = String, Path, pattern = r"^[a-z][a-z0-9_:.-]{0,63}$", description = "The plan's key.")),
    request_body = PutPlanRequest, responses((status = 200, body = PlanView), (status = 422)),
    security(("secret_key" = ["entitlements:write"])))]
pub async fn put_plan(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let request: PutPlanRequest = body.json().await?;
    let limit = state.settings.limits.plans_per_application;
    let (plan_key, PutPlanRequest { name, grants }) = (path.into_inner(), request);
    let plan = state
        .tenants
        .change(
            &key.scope,
            move |turn| async move { definitions::put_plan(&turn, &plan_key, &name, grants, limit).await },
        )
        .await?;
    Ok(envelope::ok(PlanView::from(&plan)))
}

/// List the application's plans.
#[utoipa::path(get, path = "/v1/plans", tag = "entitlements", params(ListQuery),
    responses((status = 200, body = [PlanView])), security(("secret_key" = ["entitlements:read"])))]
pub async fn list_plans(
    state: web::Data<AppState>,
    key: SecretKey,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let catalog = state.tenants.state(&key.scope).await?.part::<entitlements::Catalog>();
    let mut plans: Vec<_> = catalog.plans.values().collect();
    plans.sort_by(|a, b| a.key.cmp(&b.key));
    page_of(plans, page, PlanView::from)
}

/// Delete a plan no organization is on (409 otherwise).
#[utoipa::path(delete, path = "/v1/plans/{plan_key}", tag = "entitlements",
    params(("plan_key" = String, Path, description = "The plan's key.")),
    responses((status = 200), (status = 404), (status = 409)), security(("secret_key" = ["entitlements:write"])))]
pub async fn delete_plan(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let plan_key = path.into_inner();
    state
        .tenants
        .change(&key.scope, move |turn| async move { definitions::delete_plan(&turn, &plan_key).await })
        .await?;
    Ok(envelope::ok(serde_json::json!({})))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPlanRequest {
    /// A defined plan; null: none (the features' defaults). Required.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, required = true)]
    pub plan_key: Option<Option<String>>,
}

/// Put an organization on a plan (or on none).
#[utoipa::path(put, path = "/v1/organizations/{organization_id}/plan", tag = "entitlements",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")), request_body = SetPlanRequest,
    responses((status = 200, body = OrganizationView), (status = 404), (status = 422, description = "no such plan")),
    security(("secret_key" = ["entitlements:write"])))]
pub async fn set_organization_plan(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path)?;
    let request: SetPlanRequest = body.json().await?;
    let plan_key = request.plan_key.ok_or_else(|| ApiError::invalid("plan_key", "is required (null for none)"))?;
    let organization = assignments::set_plan(&key.scope, &state.entitlements, id, plan_key).await?;
    Ok(envelope::ok(OrganizationView::from(&organization)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutOverrideRequest {
    /// Of the feature's kind.
    pub value: Value,
}

#[derive(Serialize, ToSchema)]
pub struct OverrideView {
    pub organization_id: Uuid,
    pub feature_key: String,
    pub value: Value,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

/// Set an organization's own value of a feature, above its plan's.
#[utoipa::path(put, path = "/v1/organizations/{organization_id}/entitlement-overrides/{feature_key}", tag = "entitlements",
    params(("organization_id" = Uuid, Path, description = "The organization's id."), ("feature_key" = String, Path, description = "A defined feature.")),
    request_body = PutOverrideRequest,
    responses((status = 200, body = OverrideView), (status = 404, description = "no such organization or feature"), (status = 422)),
    security(("secret_key" = ["entitlements:write"])))]
pub async fn put_override(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path.0)?;
    let request: PutOverrideRequest = body.json().await?;
    let row = assignments::put_override(&key.scope, &state.entitlements, id, &path.1, request.value).await?;
    Ok(envelope::ok(OverrideView {
        organization_id: row.organization_id,
        feature_key: row.feature_key,
        value: row.value,
        updated_at: row.updated_at,
    }))
}

/// Remove an organization's override of a feature.
#[utoipa::path(delete, path = "/v1/organizations/{organization_id}/entitlement-overrides/{feature_key}", tag = "entitlements",
    params(("organization_id" = Uuid, Path, description = "The organization's id."), ("feature_key" = String, Path, description = "The overridden feature.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["entitlements:write"])))]
pub async fn delete_override(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path.0)?;
    assignments::delete_override(&key.scope, &state.entitlements, id, &path.1).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Resolve an organization's entitlements: one element per
/// defined feature, sorted by `feature_key`; override, else plan, else default.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/entitlements", tag = "entitlements",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200, body = [Entitlement]), (status = 404)), security(("secret_key" = ["entitlements:read"])))]
pub async fn org_entitlements(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path)?;
    let inputs = state.entitlements.inputs(&key.scope, id).await?;
    let tenant = state.tenants.state(&key.scope).await?;
    Ok(envelope::ok(entitlements::resolve(&tenant.part::<entitlements::Catalog>(), &inputs)))
}

/// The whole resolution of one feature: every source that exists for the
/// organization, in precedence order, and which one won.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/entitlements/{feature_key}/explain", tag = "entitlements",
    params(("organization_id" = Uuid, Path, description = "The organization's id."), ("feature_key" = String, Path, description = "A defined feature.")),
    responses((status = 200, body = Explanation), (status = 404)), security(("secret_key" = ["entitlements:read"])))]
pub async fn explain_entitlement(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Organization", &path.0)?;
    let inputs = state.entitlements.inputs(&key.scope, id).await?;
    let tenant = state.tenants.state(&key.scope).await?;
    let explained = entitlements::explain(&tenant.part::<entitlements::Catalog>(), &inputs, &path.1)
        .ok_or_else(|| ApiError::not_found("Feature", &path.1))?;
    Ok(envelope::ok(explained))
}
