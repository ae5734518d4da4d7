//! Host enrollment (operation 6): host groups, enrollment tokens, the
//! enrollment of a host with a token, and the enrolled hosts.
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{enrollment_token, host, host_group};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::enrollment::{self, NewHost, NewToken},
    auth::public::public_caller,
    auth::secret_key::{bearer_token, SecretKey},
    error::{ApiError, ApiResult},
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["os"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_host_group,
    list_host_groups,
    create_enrollment_token,
    list_enrollment_tokens,
    revoke_enrollment_token,
    enroll_host,
    list_hosts
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/os/host-groups")
            .route(web::post().to(create_host_group))
            .route(web::get().to(list_host_groups)),
    )
    .service(
        web::resource("/os/enrollment-tokens")
            .route(web::post().to(create_enrollment_token))
            .route(web::get().to(list_enrollment_tokens)),
    )
    .service(web::resource("/os/enrollment-tokens/{token_id}/revoke").route(web::post().to(revoke_enrollment_token)))
    .service(web::resource("/os/enroll").route(web::post().to(enroll_host)))
    .service(web::resource("/os/hosts").route(web::get().to(list_hosts)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateHostGroupRequest {
    /// Unique within the application.
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct HostGroupView {
    pub id: Uuid,
    pub name: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<&host_group::Model> for HostGroupView {
    fn from(row: &host_group::Model) -> Self {
        HostGroupView { id: row.id, name: row.name.clone(), created_at: row.created_at }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnrollmentTokenRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub label: String,
    /// A host group of the application; the hosts the token enrolls join it.
    pub host_group_id: Option<Uuid>,
    /// The platform hosts must enroll as; omitted or null: either.
    #[schema(schema_with = crate::openapi::fields::token_platform)]
    pub platform: Option<String>,
    /// Omitted or null: the token never expires.
    #[schema(minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<i64>,
    /// Omitted or null: reusable until it expires; `1`: single use.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub max_uses: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct EnrollmentTokenView {
    pub id: Uuid,
    pub label: String,
    pub host_group_id: Option<Uuid>,
    /// `linux` or `windows`; null: either.
    pub platform: Option<String>,
    /// The secret's first characters, for display.
    pub prefix: String,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub expires_at: Option<DateTime<Utc>>,
    pub max_uses: Option<i32>,
    /// How many hosts enrolled with it.
    pub uses: i32,
    /// False once revoked, expired or used up.
    pub active: bool,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub revoked_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<&enrollment_token::Model> for EnrollmentTokenView {
    fn from(row: &enrollment_token::Model) -> Self {
        EnrollmentTokenView {
            active: enrollment::is_active(row, crate::clock::now()),
            id: row.id,
            label: row.label.clone(),
            host_group_id: row.host_group_id,
            platform: row.platform.clone(),
            prefix: row.prefix.clone(),
            expires_at: row.expires_at,
            max_uses: row.max_uses,
            uses: row.uses,
            revoked_at: row.revoked_at,
            created_at: row.created_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct IssuedEnrollmentTokenView {
    #[serde(flatten)]
    pub token: EnrollmentTokenView,
    /// `het_test_…`/`het_live_…`, shown this once.
    pub token_secret: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrollRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub hostname: String,
    /// Must be the token's platform when it has one.
    #[schema(schema_with = crate::openapi::fields::host_platform)]
    pub platform: String,
}

#[derive(Serialize, ToSchema)]
pub struct EnrolledView {
    pub host_id: Uuid,
    pub host_group_id: Option<Uuid>,
    pub platform: String,
}

#[derive(Serialize, ToSchema)]
pub struct HostView {
    pub id: Uuid,
    pub hostname: String,
    pub platform: String,
    pub host_group_id: Option<Uuid>,
    pub enrollment_token_id: Uuid,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub enrolled_at: DateTime<Utc>,
}

impl From<&host::Model> for HostView {
    fn from(row: &host::Model) -> Self {
        HostView {
            id: row.id,
            hostname: row.hostname.clone(),
            platform: row.platform.clone(),
            host_group_id: row.host_group_id,
            enrollment_token_id: row.enrollment_token_id,
            enrolled_at: row.enrolled_at,
        }
    }
}

/// Create a host group.
#[utoipa::path(post, path = "/v1/os/host-groups", tag = "enrollment", request_body = CreateHostGroupRequest,
    responses((status = 201, body = HostGroupView), (status = 409, description = "`conflict`: a host group of this name exists")),
    security(("secret_key" = ["enrollment:write"])))]
pub async fn create_host_group(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateHostGroupRequest = body.json().await?;
    let name = enrollment::group_name(&request.name)?;
    let row = enrollment::create_group(&key.scope, name).await?;
    Ok(envelope::created(HostGroupView::from(&row)))
}

/// The application's host groups, newest first.
#[utoipa::path(get, path = "/v1/os/host-groups", tag = "enrollment", params(ListQuery),
    responses((status = 200, body = [HostGroupView])), security(("secret_key" = ["enrollment:read"])))]
pub async fn list_host_groups(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = enrollment::list_groups(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(HostGroupView::from).collect(), has_more))
}

/// Create a host enrollment token. The secret is in the answer once.
#[utoipa::path(post, path = "/v1/os/enrollment-tokens", tag = "enrollment", request_body = CreateEnrollmentTokenRequest,
    responses((status = 201, body = IssuedEnrollmentTokenView),
        (status = 404, description = "`host_group_not_found`: no such host group in this application")),
    security(("secret_key" = ["enrollment:write"])))]
pub async fn create_enrollment_token(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateEnrollmentTokenRequest = body.json().await?;
    let new = NewToken::parse(
        &request.label,
        request.host_group_id,
        request.platform,
        request.expires_in_days,
        request.max_uses,
    )?;
    let (row, token_secret) = enrollment::create_token(&key.scope, new).await?;
    Ok(envelope::created(IssuedEnrollmentTokenView { token: (&row).into(), token_secret }))
}

/// The application's enrollment tokens, newest first (never their secrets).
#[utoipa::path(get, path = "/v1/os/enrollment-tokens", tag = "enrollment", params(ListQuery),
    responses((status = 200, body = [EnrollmentTokenView])), security(("secret_key" = ["enrollment:read"])))]
pub async fn list_enrollment_tokens(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = enrollment::list_tokens(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(EnrollmentTokenView::from).collect(), has_more))
}

/// Revoke an enrollment token: it enrolls no more hosts. Revoking a revoked
/// token answers it unchanged.
#[utoipa::path(post, path = "/v1/os/enrollment-tokens/{token_id}/revoke", tag = "enrollment",
    params(("token_id" = Uuid, Path, description = "The enrollment token's id.")),
    responses((status = 200, body = EnrollmentTokenView), (status = 404)), security(("secret_key" = ["enrollment:write"])))]
pub async fn revoke_enrollment_token(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Enrollment token", &path)?;
    body.no_fields().await?;
    let row = enrollment::revoke_token(&key.scope, id).await?;
    Ok(envelope::ok(EnrollmentTokenView::from(&row)))
}

/// Enroll a host with an enrollment token (`Authorization: Bearer het_…`
/// and `x-application-id`). 401 when the token is unknown, revoked, expired
/// or used up; 422 `platform_mismatch` when the platform is not the
/// token's. A refused enrollment uses nothing of the token.
#[utoipa::path(post, path = "/v1/os/enroll", tag = "enrollment", request_body = EnrollRequest,
    responses((status = 201, body = EnrolledView),
        (status = 422, description = "`platform_mismatch`: the token is for another platform; or `validation_failed`")),
    security(("enrollment_token" = [])))]
pub async fn enroll_host(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let scope = public_caller(&req, &state)?;
    let presented = bearer_token(&req).ok_or_else(ApiError::unauthenticated)?;
    let token = enrollment::authenticate(&scope, presented).await?;
    let request: EnrollRequest = body.json().await?;
    let new = NewHost::parse(&request.hostname, &request.platform)?;
    let host = enrollment::enroll(&scope, &token, new).await?;
    Ok(envelope::created(EnrolledView { host_id: host.id, host_group_id: host.host_group_id, platform: host.platform }))
}

/// The application's enrolled hosts, newest first.
#[utoipa::path(get, path = "/v1/os/hosts", tag = "enrollment", params(ListQuery),
    responses((status = 200, body = [HostView])), security(("secret_key" = ["enrollment:read"])))]
pub async fn list_hosts(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = enrollment::list_hosts(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(HostView::from).collect(), has_more))
}
