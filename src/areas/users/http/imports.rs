//! `POST /v1/users/imports` and `GET /v1/users/imports/{import_id}`.
use actix_web::{web, HttpResponse};

use crate::areas::users::imports::{self, lines, ImportView, MAX_LINES};
use crate::{
    auth::secret_key::SecretKey,
    error::{ApiError, ApiResult},
    http::{body::Body, envelope, path_id},
};

/// Registered before `/users/{user_id}`, which would take `imports` for an id.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/users/imports").route(web::post().to(create_import)))
        .service(web::resource("/users/imports/{import_id}").route(web::get().to(find_import)));
}

/// Import users from another system: NDJSON, one user a line,
/// `{"external_id", "email", "password_hash"?, "profile"?, "email_verified"?, "organizations"?}`.
/// `password_hash` is a PHC string (argon2, scrypt), bcrypt (`$2a$`, `$2b$`,
/// `$2y$`), passlib's `$pbkdf2-sha256$…`, or Firebase's scrypt object; the
/// user's next sign-in checks it and rehashes to argon2id. `organizations`
/// is `[{"slug", "name"?, "role"}]`, made when absent. Answers 202 with the
/// job: lines are taken in the background, each idempotent by
/// `external_id` (imported again: skipped), a bad line refused alone.
#[utoipa::path(post, path = "/v1/users/imports", tag = "users",
    request_body(content = String, content_type = "application/x-ndjson", description = "One user a line."),
    responses((status = 202, body = ImportView), (status = 415), (status = 422)),
    security(("secret_key" = ["users:write"])))]
pub async fn create_import(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let text = body.ndjson().await?;
    let count = lines::numbered(&text).count();
    if count == 0 {
        return Err(ApiError::invalid("body", "must hold at least one line"));
    }
    if count > MAX_LINES {
        return Err(ApiError::invalid("body", format!("must hold at most {MAX_LINES} lines: send several imports")));
    }
    let job = imports::queue(&key.scope, &text, count, false).await?;
    Ok(envelope::accepted(ImportView::from(&job)))
}

/// An import's progress, its counts and its first refusals.
#[utoipa::path(get, path = "/v1/users/imports/{import_id}", tag = "users",
    params(("import_id" = Uuid, Path, description = "The import's id.")),
    responses((status = 200, body = ImportView), (status = 404)), security(("secret_key" = ["users:read"])))]
pub async fn find_import(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Import", &path)?;
    let job = imports::find(&key.scope, id).await?.ok_or_else(|| ApiError::not_found("Import", id))?;
    Ok(envelope::ok(ImportView::from(&job)))
}
