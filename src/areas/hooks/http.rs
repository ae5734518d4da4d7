//! Hooks (operation 8, with create, list, get, delete), and the sign-up
//! restrictions checked before them.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::hook;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::hooks::{
        self,
        restrictions::{self, SignUpRestrictions},
        HookPatch, NewHook,
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        body::{present, Body},
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["hooks", "sign-up-restrictions"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: |parts| parts.with::<hooks::Hooks>().with::<SignUpRestrictions>(),
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_hook,
    list_hooks,
    find_hook,
    update_hook,
    delete_hook,
    get_sign_up_restrictions,
    put_sign_up_restrictions
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/hooks").route(web::post().to(create_hook)).route(web::get().to(list_hooks)))
        .service(
            web::resource("/hooks/{hook_id}")
                .route(web::get().to(find_hook))
                .route(web::patch().to(update_hook))
                .route(web::delete().to(delete_hook)),
        )
        .service(
            web::resource("/sign-up-restrictions")
                .route(web::get().to(get_sign_up_restrictions))
                .route(web::put().to(put_sign_up_restrictions)),
        );
}

#[derive(Serialize, ToSchema)]
pub struct HookView {
    pub id: Uuid,
    /// `pre_sign_up`.
    pub point: String,
    pub url: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub fail_open: bool,
    pub timeout_ms: i32,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&hook::Model> for HookView {
    fn from(h: &hook::Model) -> Self {
        HookView {
            id: h.id,
            point: h.point.clone(),
            url: h.url.clone(),
            description: h.description.clone(),
            enabled: h.enabled,
            fail_open: h.fail_open,
            timeout_ms: h.timeout_ms,
            created_at: h.created_at,
            updated_at: h.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct HookWithSecretView {
    #[serde(flatten)]
    pub hook: HookView,
    /// `whsec_…`: verify calls with it as Standard Webhooks signatures. Shown once.
    pub secret: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateHookRequest {
    #[schema(schema_with = crate::openapi::fields::hook_point)]
    pub point: String,
    /// Follows the webhook url rules.
    #[schema(schema_with = crate::openapi::fields::url)]
    pub url: String,
    #[schema(schema_with = crate::openapi::fields::hook_description)]
    pub description: Option<String>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Default false: a hook that does not answer fails the sign-up.
    pub fail_open: Option<bool>,
    /// Default 5000.
    #[schema(minimum = 100, maximum = 15000)]
    pub timeout_ms: Option<i32>,
}

/// Create a hook; the answer holds its signing secret, shown once.
#[utoipa::path(post, path = "/v1/hooks", tag = "hooks", request_body = CreateHookRequest,
    responses((status = 201, body = HookWithSecretView), (status = 422)), security(("secret_key" = ["hooks:write"])))]
pub async fn create_hook(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let r: CreateHookRequest = body.json().await?;
    let live = key.tenant().environment.is_live();
    let new = NewHook {
        reach: state.webhooks.reach(live),
        point: r.point,
        url: r.url,
        description: r.description,
        enabled: r.enabled.unwrap_or(true),
        fail_open: r.fail_open.unwrap_or(false),
        timeout_ms: r.timeout_ms.unwrap_or(hooks::DEFAULT_TIMEOUT_MS),
    };
    let limit = state.settings.limits.hooks_per_application;
    let (hook, secret) =
        state.tenants.change(&key.scope, move |turn| async move { hooks::create(&turn, new, limit).await }).await?;
    Ok(envelope::created(HookWithSecretView { hook: (&hook).into(), secret }))
}

/// List the application's hooks, in run order.
#[utoipa::path(get, path = "/v1/hooks", tag = "hooks", params(ListQuery),
    responses((status = 200, body = [HookView])), security(("secret_key" = ["hooks:read"])))]
pub async fn list_hooks(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (found, has_more) = hooks::list(&key.scope, page).await?;
    Ok(envelope::page(found.iter().map(HookView::from).collect(), has_more))
}

/// Get a hook.
#[utoipa::path(get, path = "/v1/hooks/{hook_id}", tag = "hooks",
    params(("hook_id" = Uuid, Path, description = "The hook's id.")),
    responses((status = 200, body = HookView), (status = 404)), security(("secret_key" = ["hooks:read"])))]
pub async fn find_hook(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Hook", &path)?;
    Ok(envelope::ok(HookView::from(&hooks::find(&key.scope, id).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateHookRequest {
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = crate::openapi::fields::hook_description)]
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub fail_open: Option<bool>,
    #[schema(minimum = 100, maximum = 15000)]
    pub timeout_ms: Option<i32>,
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub url: Option<String>,
}

/// Update a hook; its `point` cannot change.
#[utoipa::path(patch, path = "/v1/hooks/{hook_id}", tag = "hooks",
    params(("hook_id" = Uuid, Path, description = "The hook's id.")), request_body = UpdateHookRequest,
    responses((status = 200, body = HookView), (status = 404), (status = 422)), security(("secret_key" = ["hooks:write"])))]
pub async fn update_hook(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Hook", &path)?;
    let r: UpdateHookRequest = body.json().await?;
    let live = key.tenant().environment.is_live();
    let patch = HookPatch {
        reach: state.webhooks.reach(live),
        url: r.url,
        description: r.description,
        enabled: r.enabled,
        fail_open: r.fail_open,
        timeout_ms: r.timeout_ms,
    };
    let hook =
        state.tenants.change(&key.scope, move |turn| async move { hooks::update(&turn, id, patch).await }).await?;
    Ok(envelope::ok(HookView::from(&hook)))
}

/// Delete a hook.
#[utoipa::path(delete, path = "/v1/hooks/{hook_id}", tag = "hooks",
    params(("hook_id" = Uuid, Path, description = "The hook's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["hooks:write"])))]
pub async fn delete_hook(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Hook", &path)?;
    state.tenants.change(&key.scope, move |turn| async move { hooks::delete(&turn, id).await }).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// The email domains new end users may sign up with. Both lists replace
/// the application's; an omitted list is empty.
#[derive(Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignUpRestrictionsBody {
    /// Not empty: only these domains (and their subdomains) may sign up.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::email_domains)]
    pub allowed_email_domains: Vec<String>,
    /// These domains (and their subdomains) may not sign up; a block wins
    /// over an allowance.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::email_domains)]
    pub blocked_email_domains: Vec<String>,
}

impl From<SignUpRestrictions> for SignUpRestrictionsBody {
    fn from(r: SignUpRestrictions) -> Self {
        SignUpRestrictionsBody {
            allowed_email_domains: r.allowed_email_domains,
            blocked_email_domains: r.blocked_email_domains,
        }
    }
}

/// The application's sign-up restrictions: empty lists until it sets them.
#[utoipa::path(get, path = "/v1/sign-up-restrictions", tag = "hooks",
    responses((status = 200, body = SignUpRestrictionsBody)), security(("secret_key" = ["hooks:read"])))]
pub async fn get_sign_up_restrictions(key: SecretKey) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(SignUpRestrictionsBody::from(restrictions::find(&key.scope).await?)))
}

/// Replace the email domains new end users may sign up with (by password
/// or with a provider; a user made with a secret key is not checked). A
/// refused sign-up is 403 `sign_up_denied`, before any `pre_sign_up` hook
/// is called. Domains are answered in their normal form (lower-case ASCII).
#[utoipa::path(put, path = "/v1/sign-up-restrictions", tag = "hooks", request_body = SignUpRestrictionsBody,
    responses((status = 200, body = SignUpRestrictionsBody), (status = 422)), security(("secret_key" = ["hooks:write"])))]
pub async fn put_sign_up_restrictions(
    state: web::Data<AppState>,
    key: SecretKey,
    body: Body,
) -> ApiResult<HttpResponse> {
    let r: SignUpRestrictionsBody = body.json().await?;
    let given = SignUpRestrictions::new(r.allowed_email_domains, r.blocked_email_domains);
    let put =
        state.tenants.change(&key.scope, move |turn| async move { restrictions::put(&turn, given).await }).await?;
    Ok(envelope::ok(SignUpRestrictionsBody::from(put)))
}
