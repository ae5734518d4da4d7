//! Personal API keys of the signed-in user (operation 7).
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    area::Area,
    areas::{
        api_keys::{view::ApiKeyView, NewApiKey},
        personal_keys,
    },
    auth::end_user::EndUser,
    error::ApiResult,
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(create_personal_key, list_personal_keys, revoke_personal_key))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/auth/me/api-keys")
            .route(web::post().to(create_personal_key))
            .route(web::get().to(list_personal_keys)),
    )
    .service(web::resource("/auth/me/api-keys/{key_id}/revoke").route(web::post().to(revoke_personal_key)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePersonalKeyRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    #[schema(schema_with = crate::openapi::fields::scopes::<50>)]
    pub scopes: Option<Vec<String>>,
    /// Omitted or null: never expires.
    #[schema(minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct IssuedPersonalKeyView<'a> {
    #[serde(flatten)]
    pub key: ApiKeyView<'a>,
    /// `uk_…`, shown this once.
    pub secret: String,
}

/// Create a personal API key for the signed-in user.
#[utoipa::path(post, path = "/v1/auth/me/api-keys", tag = "auth", request_body = CreatePersonalKeyRequest,
    responses((status = 201, body = IssuedPersonalKeyView), (status = 401),
        (status = 403, description = "`aal2_required`: the application's `require_aal2_for` names `create_personal_key`"), (status = 422)),
    security(("access_token" = [])))]
pub async fn create_personal_key(state: web::Data<AppState>, user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    user.require_aal2_for("create_personal_key")?;
    let request: CreatePersonalKeyRequest = body.json().await?;
    let new = NewApiKey::parse(&request.name, request.scopes, request.expires_in_days)?;
    let live = user.tenant().environment.is_live();
    let (key, secret) =
        personal_keys::create(&user.scope, user.claims.sub, live, &new, state.settings.limits.personal_keys_per_user)
            .await?;
    Ok(envelope::created(IssuedPersonalKeyView { key: (&key).into(), secret }))
}

/// The signed-in user's personal keys, newest first.
#[utoipa::path(get, path = "/v1/auth/me/api-keys", tag = "auth", params(ListQuery),
    responses((status = 200, body = [ApiKeyView]), (status = 401)), security(("access_token" = [])))]
pub async fn list_personal_keys(user: EndUser, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (keys, has_more) = personal_keys::list(&user.scope, user.claims.sub, page).await?;
    Ok(envelope::page(keys.iter().map(ApiKeyView::from).collect(), has_more))
}

/// Revoke one of the signed-in user's personal keys.
#[utoipa::path(post, path = "/v1/auth/me/api-keys/{key_id}/revoke", tag = "auth",
    params(("key_id" = Uuid, Path, description = "The key's id.")),
    responses((status = 200, body = ApiKeyView), (status = 401),
        (status = 403, description = "`aal2_required`: the application's `require_aal2_for` names `revoke_personal_key`"), (status = 404)),
    security(("access_token" = [])))]
pub async fn revoke_personal_key(user: EndUser, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    user.require_aal2_for("revoke_personal_key")?;
    let id = path_id("API key", &path)?;
    body.no_fields().await?;
    let key = personal_keys::revoke(&user.scope, user.claims.sub, id).await?;
    Ok(envelope::ok(ApiKeyView::from(&key)))
}
