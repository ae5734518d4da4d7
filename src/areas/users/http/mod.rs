//! End users and their sessions, managed with a secret key (contract §5).
mod imports;

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::{
    area::Area,
    areas::{
        sessions,
        users::{
            self,
            export::UserExport,
            view::{SessionView, UserView},
            UserPatch,
        },
        validate::Issues,
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
    segments: &["users", "sessions"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_user,
    list_users,
    find_user,
    update_user,
    delete_user,
    export_user,
    imports::create_import,
    imports::find_import,
    list_user_sessions,
    revoke_session
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    imports::configure(cfg);
    cfg.service(web::resource("/users").route(web::post().to(create_user)).route(web::get().to(list_users)))
        .service(
            web::resource("/users/{user_id}")
                .route(web::get().to(find_user))
                .route(web::patch().to(update_user))
                .route(web::delete().to(delete_user)),
        )
        .service(web::resource("/users/{user_id}/export").route(web::get().to(export_user)))
        .service(web::resource("/users/{user_id}/sessions").route(web::get().to(list_user_sessions)))
        .service(web::resource("/sessions/{session_id}/revoke").route(web::post().to(revoke_session)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    /// Omitted: the user cannot sign in with a password.
    #[schema(schema_with = crate::openapi::fields::optional_password)]
    pub password: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub profile: Option<serde_json::Value>,
}

/// Create a user (no session is opened).
#[utoipa::path(post, path = "/v1/users", tag = "users", request_body = CreateUserRequest,
    responses((status = 201, body = UserView), (status = 409, description = "email in use"), (status = 422)),
    security(("secret_key" = ["users:write"])))]
pub async fn create_user(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateUserRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    if let Some(password) = &request.password {
        users::password(&mut issues, password);
    }
    let profile = users::profile(&key.scope, &mut issues, request.profile).await?;
    issues.finish()?;
    let password_hash = match request.password {
        Some(password) => Some(state.passwords.hash(password).await?),
        None => None,
    };
    let user = users::create(&key.scope, email, password_hash, profile).await?;
    Ok(envelope::created(UserView::from(&user)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UserListQuery {
    /// How many rows, 1 to 100; default 50.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// How many rows to skip; default 0.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    pub offset: Option<i64>,
    /// Exact email (case-insensitive).
    #[param(pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub email: Option<String>,
}

/// List users, newest first.
#[utoipa::path(get, path = "/v1/users", tag = "users", params(UserListQuery),
    responses((status = 200, body = [UserView])), security(("secret_key" = ["users:read"])))]
pub async fn list_users(key: SecretKey, query: Query<UserListQuery>) -> ApiResult<HttpResponse> {
    let query = query.parsed()?;
    let page = ListQuery { limit: query.limit, offset: query.offset }.page()?;
    let (found, has_more) = users::list(&key.scope, query.email.as_deref(), page).await?;
    Ok(envelope::page(found.iter().map(UserView::from).collect(), has_more))
}

/// Get a user.
#[utoipa::path(get, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = Uuid, Path, description = "The user's id.")),
    responses((status = 200, body = UserView), (status = 404)), security(("secret_key" = ["users:read"])))]
pub async fn find_user(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("User", &path)?;
    Ok(envelope::ok(UserView::from(&users::find(&key.scope, id).await?)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUserRequest {
    #[schema(schema_with = crate::openapi::fields::optional_email)]
    pub email: Option<String>,
    #[schema(schema_with = crate::openapi::fields::optional_password)]
    pub password: Option<String>,
    /// Replaces the whole profile; checked against the schema.
    #[schema(value_type = Option<Object>)]
    pub profile: Option<serde_json::Value>,
}

/// Change a user's email, profile or password.
#[utoipa::path(patch, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = Uuid, Path, description = "The user's id.")), request_body = UpdateUserRequest,
    responses((status = 200, body = UserView), (status = 404), (status = 409), (status = 422)),
    security(("secret_key" = ["users:write"])))]
pub async fn update_user(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("User", &path)?;
    let request: UpdateUserRequest = body.json().await?;
    users::find(&key.scope, id).await?;
    let mut issues = Issues::default();
    let email = request.email.map(|e| users::email(&mut issues, &e));
    if let Some(password) = &request.password {
        users::password(&mut issues, password);
    }
    let profile = match request.profile {
        Some(profile) => Some(users::profile(&key.scope, &mut issues, Some(profile)).await?),
        None => None,
    };
    issues.finish()?;
    let password_hash = match request.password {
        Some(password) => Some(state.passwords.hash(password).await?),
        None => None,
    };
    let email_given = email.is_some();
    let patch = UserPatch { email, password_hash, profile };
    let user = users::update(&key.scope, id, patch).await?;
    if email_given && user.email_verified_at.is_none() {
        // A new address (or one never proven) is sent a code.
        state.email_codes().send(&key.scope, user.id).await?;
    }
    Ok(envelope::ok(UserView::from(&user)))
}

/// Erase a user: every row that is theirs is deleted (sessions, memberships,
/// identities, second factors, personal keys, pending codes, invitations and
/// mail to their address), and the keys that sealed their personal data in
/// audit rows are destroyed. The audit chain still verifies; those rows
/// read `erased: true`. Webhook messages not yet delivered go out without
/// their personal data.
#[utoipa::path(delete, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = Uuid, Path, description = "The user's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["users:write"])))]
pub async fn delete_user(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("User", &path)?;
    users::delete(&key.scope, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Export everything held about a user (a subject access request, data
/// portability): profile, identities, sessions, memberships, second
/// factors and personal keys without their secrets, and every audit row
/// about them, by them or carrying their personal data, opened.
#[utoipa::path(get, path = "/v1/users/{user_id}/export", tag = "users",
    params(("user_id" = Uuid, Path, description = "The user's id.")),
    responses((status = 200, body = UserExport), (status = 404)), security(("secret_key" = ["admin"])))]
pub async fn export_user(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("User", &path)?;
    Ok(envelope::ok(users::export::export(&key.scope, id).await?))
}

/// A user's sessions, newest first.
#[utoipa::path(get, path = "/v1/users/{user_id}/sessions", tag = "users", params(("user_id" = Uuid, Path, description = "The user's id."), ListQuery),
    responses((status = 200, body = [SessionView]), (status = 404)), security(("secret_key" = ["users:read"])))]
pub async fn list_user_sessions(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let id = path_id("User", &path)?;
    let page = query.parsed()?.page()?;
    users::find(&key.scope, id).await?;
    let (found, has_more) = sessions::list_of_user(&key.scope, id, page).await?;
    Ok(envelope::page(found.iter().map(SessionView::from).collect(), has_more))
}

/// Revoke a session: its refresh token and access tokens stop working at once.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/revoke", tag = "users",
    params(("session_id" = Uuid, Path, description = "The session's id.")),
    responses((status = 200, body = SessionView), (status = 404)), security(("secret_key" = ["users:write"])))]
pub async fn revoke_session(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Session", &path)?;
    body.no_fields().await?;
    let session = sessions::revoke(&key.scope, id, "revoked").await?;
    Ok(envelope::ok(SessionView::from(&session)))
}
