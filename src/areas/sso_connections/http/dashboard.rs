//! An organization's SSO connections managed from a customer's dashboard
//! with the user's access token: the same requests, answers and checks as
//! the secret key's routes, on the session's active organization. Owners
//! and admins see them; only owners make, change or delete them, since
//! whoever controls a connection's provider signs in as anyone at the
//! organization's verified domains, the organization's owners included.
//! The role a connection grants stays its setter's grant: re-checked at
//! each first sign-in.
use actix_web::{web, HttpResponse};

use super::connections::{create_in, update_in, view, CreateSsoConnectionRequest, UpdateSsoConnectionRequest};
use crate::{
    area::Area,
    areas::{memberships, sso_connections},
    auth::end_user::EndUser,
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["dashboard"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_dashboard_sso_connection,
    list_dashboard_sso_connections,
    find_dashboard_sso_connection,
    update_dashboard_sso_connection,
    delete_dashboard_sso_connection
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/dashboard/sso/connections")
            .route(web::post().to(create_dashboard_sso_connection))
            .route(web::get().to(list_dashboard_sso_connections)),
    )
    .service(
        web::resource("/dashboard/sso/connections/{connection_id}")
            .route(web::get().to(find_dashboard_sso_connection))
            .route(web::patch().to(update_dashboard_sso_connection))
            .route(web::delete().to(delete_dashboard_sso_connection)),
    );
}

async fn manager(user: &EndUser) -> ApiResult<memberships::Manager> {
    Ok(memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?)
}

/// Make an SSO connection for the caller's active organization (owners).
#[utoipa::path(post, path = "/v1/dashboard/sso/connections", tag = "sso",
    request_body = CreateSsoConnectionRequest,
    responses((status = 201, body = super::connections::SsoConnectionView),
        (status = 403, description = "no_active_organization; or insufficient_role: not an owner"),
        (status = 422, description = "validation_failed (or the limit of SSO connections is reached); invalid_url: the issuer; sso_discovery_failed")),
    security(("access_token" = [])))]
pub async fn create_dashboard_sso_connection(
    state: web::Data<AppState>,
    user: EndUser,
    body: Body,
) -> ApiResult<HttpResponse> {
    let request: CreateSsoConnectionRequest = body.json().await?;
    let manager = manager(&user).await?;
    manager.owner_only()?;
    let row = create_in(&state, &user.scope, manager.organization_id, request, Some(manager.user_id)).await?;
    Ok(envelope::created(view(&state, &row)))
}

/// List the active organization's SSO connections (never their secrets).
#[utoipa::path(get, path = "/v1/dashboard/sso/connections", tag = "sso",
    responses((status = 200, body = [super::connections::SsoConnectionView]), (status = 403)),
    security(("access_token" = [])))]
pub async fn list_dashboard_sso_connections(state: web::Data<AppState>, user: EndUser) -> ApiResult<HttpResponse> {
    let manager = manager(&user).await?;
    let rows = sso_connections::list(&user.scope, manager.organization_id).await?;
    Ok(envelope::ok(rows.iter().map(|row| view(&state, row)).collect::<Vec<_>>()))
}

/// Get one of the active organization's SSO connections; another
/// organization's is 404.
#[utoipa::path(get, path = "/v1/dashboard/sso/connections/{connection_id}", tag = "sso",
    params(("connection_id" = Uuid, Path, description = "The connection's id.")),
    responses((status = 200, body = super::connections::SsoConnectionView), (status = 403), (status = 404)),
    security(("access_token" = [])))]
pub async fn find_dashboard_sso_connection(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("SSO connection", &path)?;
    let manager = manager(&user).await?;
    Ok(envelope::ok(view(&state, &sso_connections::find(&user.scope, manager.organization_id, id).await?)))
}

/// Change one of the active organization's SSO connections (owners).
#[utoipa::path(patch, path = "/v1/dashboard/sso/connections/{connection_id}", tag = "sso",
    params(("connection_id" = Uuid, Path, description = "The connection's id.")),
    request_body = UpdateSsoConnectionRequest,
    responses((status = 200, body = super::connections::SsoConnectionView),
        (status = 403, description = "no_active_organization; or insufficient_role: not an owner"),
        (status = 404), (status = 422, description = "validation_failed; invalid_url: the issuer; sso_discovery_failed")),
    security(("access_token" = [])))]
pub async fn update_dashboard_sso_connection(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("SSO connection", &path)?;
    let request: UpdateSsoConnectionRequest = body.json().await?;
    let manager = manager(&user).await?;
    manager.owner_only()?;
    let ids = (manager.organization_id, id);
    let row = update_in(&state, &user.scope, ids, request, Some(manager.user_id)).await?;
    Ok(envelope::ok(view(&state, &row)))
}

/// Delete one of the active organization's SSO connections (owners). Its
/// users keep their accounts and memberships.
#[utoipa::path(delete, path = "/v1/dashboard/sso/connections/{connection_id}", tag = "sso",
    params(("connection_id" = Uuid, Path, description = "The connection's id.")),
    responses((status = 200), (status = 403), (status = 404)), security(("access_token" = [])))]
pub async fn delete_dashboard_sso_connection(user: EndUser, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("SSO connection", &path)?;
    let manager = manager(&user).await?;
    manager.owner_only()?;
    sso_connections::delete(&user.scope, manager.organization_id, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}
