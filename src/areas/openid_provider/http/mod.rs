//! The endpoints under the application's issuer
//! (`/v1/applications/{application_id}/…`), in their standards' formats,
//! not the envelope: the token endpoint ([`token`]), userinfo,
//! introspection and revocation ([`endpoints`]). Standard clients send no
//! `x-application-id`: the path names the application, and the region
//! router forwards by it.
pub mod authorize;
mod browser;
pub mod consents;
pub mod endpoints;
pub mod logout;
mod next;
mod pages;
mod passkey;
mod password_reset;
mod provider;
mod sign_up;
pub mod token;

use actix_web::{web, HttpRequest};

use crate::{
    area::{ApplicationFrom, ApplicationIn, Area},
    areas::oauth_clients::Presented,
    auth::{public::tenant_in_path, public_scope},
    error::{ApiError, ApiResult},
    http::oauth_form::Credentials,
    state::AppState,
    storage::TenantScope,
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    authorize::authorize,
    authorize::authorize_form,
    logout::logout,
    logout::logout_confirm,
    token::token,
    endpoints::userinfo,
    endpoints::userinfo_by_post,
    endpoints::introspect,
    endpoints::revoke
))]
struct Operations;

const AUTHORIZE_ROUTE: &str = "/v1/applications/{application_id}/oauth/authorize";
const LOGOUT_ROUTE: &str = "/v1/applications/{application_id}/oauth/logout";
const TOKEN_ROUTE: &str = "/v1/applications/{application_id}/oauth/token";
const USERINFO_ROUTE: &str = "/v1/applications/{application_id}/oauth/userinfo";
const INTROSPECT_ROUTE: &str = "/v1/applications/{application_id}/oauth/introspect";
const REVOKE_ROUTE: &str = "/v1/applications/{application_id}/oauth/revoke";

pub const APPLICATION_IN: &[ApplicationIn] = &[
    ApplicationIn { route: AUTHORIZE_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: LOGOUT_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: TOKEN_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: USERINFO_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: INTROSPECT_ROUTE, from: ApplicationFrom::Path },
    ApplicationIn { route: REVOKE_ROUTE, from: ApplicationFrom::Path },
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    let under_v1 = |route: &'static str| &route["/v1".len()..];
    cfg.service(
        web::resource(under_v1(AUTHORIZE_ROUTE))
            .route(web::get().to(authorize::authorize))
            .route(web::post().to(authorize::authorize_form)),
    )
    .service(
        web::resource(under_v1(LOGOUT_ROUTE))
            .route(web::get().to(logout::logout))
            .route(web::post().to(logout::logout_confirm)),
    )
    .service(web::resource(under_v1(TOKEN_ROUTE)).route(web::post().to(token::token)))
    .service(
        web::resource(under_v1(USERINFO_ROUTE))
            .route(web::get().to(endpoints::userinfo))
            .route(web::post().to(endpoints::userinfo_by_post)),
    )
    .service(web::resource(under_v1(INTROSPECT_ROUTE)).route(web::post().to(endpoints::introspect)))
    .service(web::resource(under_v1(REVOKE_ROUTE)).route(web::post().to(endpoints::revoke)));
}

/// The application the path names, as the public caller.
async fn scope_in_path(state: &AppState, req: &HttpRequest, path: &str) -> ApiResult<TenantScope> {
    let tenant = tenant_in_path(state, req, path).await?;
    let id = tenant.id;
    public_scope(state, tenant).ok_or_else(|| ApiError::not_found("Application", id))
}

/// What an OAuth client presented, for `oauth_clients::authenticate`.
fn presented(credentials: &Credentials) -> Option<Presented<'_>> {
    match credentials {
        Credentials::Secret { client_id, secret } => Some(Presented::Secret { client_id, secret }),
        Credentials::IdOnly(client_id) => Some(Presented::IdOnly { client_id }),
        Credentials::Missing => None,
    }
}
