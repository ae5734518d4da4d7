//! End users' own routes (contract §5): sign-up, sign-in, refresh and
//! sign-out ([`sign_in`]), the signed-in user and organization activation
//! ([`me`]). The flows live in `areas::auth`; these parse, call one
//! service function and render.
pub mod me;
pub mod sign_in;

use crate::area::Area;
use actix_web::web;

pub const AREA: Area = Area {
    segments: &["auth"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(sign_in::sign_up, sign_in::sign_in, sign_in::refresh, sign_in::sign_out, me::me, me::activate))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/sign-up").route(web::post().to(sign_in::sign_up)))
        .service(web::resource("/auth/sign-in").route(web::post().to(sign_in::sign_in)))
        .service(web::resource("/auth/token").route(web::post().to(sign_in::refresh)))
        .service(web::resource("/auth/sign-out").route(web::post().to(sign_in::sign_out)))
        .service(web::resource("/auth/me").route(web::get().to(me::me)))
        .service(web::resource("/auth/organizations/{organization_id}/activate").route(web::post().to(me::activate)));
}
