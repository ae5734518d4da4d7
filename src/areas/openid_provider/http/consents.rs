//! The signed-in user's consents to third parties' clients: what they
//! allowed on the hosted consent page, and its withdrawal.
use actix_web::{web, HttpResponse};

use crate::{
    area::Area,
    areas::oauth_clients::consents::{self, ConsentView},
    auth::end_user::EndUser,
    error::{ApiError, ApiResult},
    http::{envelope, path_id},
};

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(list_consents, withdraw_consent))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/me/consents").route(web::get().to(list_consents)))
        .service(web::resource("/auth/me/consents/{client_id}").route(web::delete().to(withdraw_consent)));
}

/// The clients the signed-in user allowed, and what; the newest first.
#[utoipa::path(get, path = "/v1/auth/me/consents", tag = "auth",
    responses((status = 200, body = [ConsentView]), (status = 401)), security(("access_token" = [])))]
pub async fn list_consents(user: EndUser) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(consents::of_user(&user.scope, user.claims.sub).await?))
}

/// Withdraw the signed-in user's consent to a client: it is asked again
/// at the client's next request, and the user's sessions issued to it end
/// now (its refresh tokens stop working).
#[utoipa::path(delete, path = "/v1/auth/me/consents/{client_id}", tag = "auth",
    params(("client_id" = Uuid, Path, description = "The client's id.")),
    responses((status = 200, description = "`sessions_ended`: how many of the user's sessions with the client ended"),
        (status = 401), (status = 404, description = "The user has not allowed this client")),
    security(("access_token" = [])))]
pub async fn withdraw_consent(user: EndUser, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let client_id = path_id("Consent", &path)?;
    match consents::withdraw(&user.scope, user.claims.sub, client_id).await? {
        Some(ended) => Ok(envelope::ok(serde_json::json!({"sessions_ended": ended}))),
        None => Err(ApiError::not_found("Consent", client_id)),
    }
}
