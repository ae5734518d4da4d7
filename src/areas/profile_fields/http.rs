//! The profile-field schema (operation 5, with list, update, delete).
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::profile_field;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::profile_fields::{self, FieldPatch, NewField},
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
    segments: &["profile-fields"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_profile_field,
    list_profile_fields,
    find_profile_field,
    update_profile_field,
    delete_profile_field
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/profile-fields")
            .route(web::post().to(create_profile_field))
            .route(web::get().to(list_profile_fields)),
    )
    .service(
        web::resource("/profile-fields/{field_id}")
            .route(web::get().to(find_profile_field))
            .route(web::patch().to(update_profile_field))
            .route(web::delete().to(delete_profile_field)),
    );
}

#[derive(Serialize, ToSchema)]
pub struct ProfileFieldView {
    pub id: Uuid,
    pub key: String,
    pub label: String,
    pub field_type: String,
    #[schema(value_type = Option<Vec<String>>)]
    pub options: Option<serde_json::Value>,
    pub position: i32,
    pub required: bool,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&profile_field::Model> for ProfileFieldView {
    fn from(f: &profile_field::Model) -> Self {
        ProfileFieldView {
            id: f.id,
            key: f.key.clone(),
            label: f.label.clone(),
            field_type: f.field_type.clone(),
            options: f.options.clone(),
            position: f.position,
            required: f.required,
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProfileFieldRequest {
    /// Unique in the application.
    #[schema(pattern = "^[a-z][a-z0-9_]{0,63}$")]
    pub key: String,
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub label: String,
    #[schema(schema_with = crate::openapi::fields::field_type)]
    pub field_type: String,
    /// Required for select and multi_select (and only those take it): the allowed strings.
    #[schema(schema_with = crate::openapi::fields::options)]
    pub options: Option<serde_json::Value>,
    /// Display order; default: after the last field.
    #[schema(minimum = 0)]
    pub position: Option<i32>,
    pub required: Option<bool>,
}

/// Add a profile field.
#[utoipa::path(post, path = "/v1/profile-fields", tag = "profile-fields", request_body = CreateProfileFieldRequest,
    responses((status = 201, body = ProfileFieldView), (status = 409, description = "key_in_use"), (status = 422)),
    security(("secret_key" = ["profile_fields:write"])))]
pub async fn create_profile_field(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let r: CreateProfileFieldRequest = body.json().await?;
    let new = NewField {
        key: r.key,
        label: r.label,
        field_type: r.field_type,
        options: r.options,
        position: r.position,
        required: r.required.unwrap_or(false),
    };
    let limit = state.settings.limits.profile_fields_per_application;
    let field = state
        .tenants
        .change(&key.scope, move |turn| async move { profile_fields::create(&turn, new, limit).await })
        .await?;
    Ok(envelope::created(ProfileFieldView::from(&field)))
}

/// The schema, in display order.
#[utoipa::path(get, path = "/v1/profile-fields", tag = "profile-fields", params(ListQuery),
    responses((status = 200, body = [ProfileFieldView])), security(("secret_key" = ["profile_fields:read"])))]
pub async fn list_profile_fields(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (fields, has_more) = profile_fields::list(&key.scope, page).await?;
    Ok(envelope::page(fields.iter().map(ProfileFieldView::from).collect(), has_more))
}

/// Get a profile field.
#[utoipa::path(get, path = "/v1/profile-fields/{field_id}", tag = "profile-fields",
    params(("field_id" = Uuid, Path, description = "The profile field's id.")),
    responses((status = 200, body = ProfileFieldView), (status = 404)), security(("secret_key" = ["profile_fields:read"])))]
pub async fn find_profile_field(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Profile field", &path)?;
    Ok(envelope::ok(ProfileFieldView::from(&profile_fields::find(&key.scope, id).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProfileFieldRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub label: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = crate::openapi::fields::options)]
    pub options: Option<Option<serde_json::Value>>,
    #[schema(minimum = 0)]
    pub position: Option<i32>,
    pub required: Option<bool>,
}

/// Change a field's label, options, position or requiredness (its key and
/// type are fixed: stored profiles depend on them).
#[utoipa::path(patch, path = "/v1/profile-fields/{field_id}", tag = "profile-fields",
    params(("field_id" = Uuid, Path, description = "The profile field's id.")), request_body = UpdateProfileFieldRequest,
    responses((status = 200, body = ProfileFieldView), (status = 404), (status = 422)), security(("secret_key" = ["profile_fields:write"])))]
pub async fn update_profile_field(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Profile field", &path)?;
    let r: UpdateProfileFieldRequest = body.json().await?;
    let patch = FieldPatch { label: r.label, options: r.options, position: r.position, required: r.required };
    let field = state
        .tenants
        .change(&key.scope, move |turn| async move { profile_fields::update(&turn, id, patch).await })
        .await?;
    Ok(envelope::ok(ProfileFieldView::from(&field)))
}

/// Delete a profile field.
#[utoipa::path(delete, path = "/v1/profile-fields/{field_id}", tag = "profile-fields",
    params(("field_id" = Uuid, Path, description = "The profile field's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["profile_fields:write"])))]
pub async fn delete_profile_field(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Profile field", &path)?;
    state.tenants.change(&key.scope, move |turn| async move { profile_fields::delete(&turn, id).await }).await?;
    Ok(envelope::ok(serde_json::json!({})))
}
