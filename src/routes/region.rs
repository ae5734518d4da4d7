//! The application's data-residency region (operation 17): read it, or move
//! the application with all its data to another region (`region::moves`).
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    area::Area,
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{body::Body, envelope},
    region::Region,
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["security"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(get_region, set_region))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/security/region").route(web::get().to(get_region)).route(web::post().to(set_region)));
}

#[derive(Serialize, ToSchema)]
pub struct RegionView {
    /// The region whose database holds the application's data.
    pub region: Region,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRegionRequest {
    /// One of the deployment's regions (by default `us`, `eu` or `ap`); anything
    /// else (the empty string too) is 422 `unknown_region`.
    #[schema(value_type = Region)]
    pub region: String,
}

/// The application's data-residency region.
#[utoipa::path(get, path = "/v1/security/region", tag = "applications",
    responses((status = 200, body = RegionView), (status = 503, description = "`region_migration_in_progress`, with `Retry-After`")),
    security(("secret_key" = ["applications:read"])))]
pub async fn get_region(key: SecretKey) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(RegionView { region: key.tenant().region }))
}

/// Move the application, with all its data, to another region, and
/// answer once it is there. While it moves, the
/// application's other requests get 503 `region_migration_in_progress`
/// with `Retry-After`. The same region changes nothing.
#[utoipa::path(post, path = "/v1/security/region", tag = "applications", request_body = SetRegionRequest,
    responses((status = 200, body = RegionView), (status = 422, description = "`unknown_region`"), (status = 503, description = "`region_migration_in_progress` or the new region's database is unreachable from this node, with `Retry-After`")),
    security(("secret_key" = ["admin"])))]
pub async fn set_region(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: SetRegionRequest = body.json().await?;
    let to = state.settings.requested_region(&request.region)?;
    let region = state.tenants.move_region(&key.scope, to).await?;
    Ok(envelope::ok(RegionView { region }))
}
