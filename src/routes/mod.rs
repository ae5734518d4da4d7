//! The route table: each area's handlers (`areas::<area>::http`) and the
//! node's own (health, metrics, the region, signing keys, audit logs),
//! composed here.
pub mod audit_logs;
pub mod ops;
pub mod region;
pub mod signing_keys;

use actix_web::{guard, web};

use crate::{
    area::{ApplicationIn, Area},
    areas::{
        access_reviews, api_keys, applications, auth, billing, email_verifications, enrollment, entitlements, hooks,
        invitations, messaging, oauth_clients, oauth_providers, openid_provider, organizations, password_resets,
        personal_keys, profile_fields, provider_sign_in, scim, second_factors, service_accounts, sod, sso_connections,
        sso_domains, users, webhooks,
    },
};

/// Every area the node serves, in the order its routes are tried. The
/// route table, the OpenAPI document and the tenant state are built from
/// this list.
pub const AREAS: &[Area] = &[
    signing_keys::AREA,
    openid_provider::http::AREA,
    openid_provider::http::consents::AREA,
    applications::http::AREA,
    messaging::http::AREA,
    oauth_providers::http::AREA,
    auth::http::AREA,
    second_factors::http::AREA,
    password_resets::http::AREA,
    email_verifications::http::AREA,
    provider_sign_in::http::AREA,
    personal_keys::http::AREA,
    invitations::http::AREA,
    api_keys::http::AREA,
    users::http::AREA,
    organizations::http::AREA,
    entitlements::http::AREA,
    region::AREA,
    audit_logs::AREA,
    webhooks::http::AREA,
    hooks::http::AREA,
    billing::http::AREA,
    profile_fields::http::AREA,
    sod::http::AREA,
    access_reviews::http::AREA,
    sso_domains::http::AREA,
    enrollment::http::AREA,
    service_accounts::http::AREA,
    oauth_clients::http::AREA,
    scim::http::directories::AREA,
    scim::http::protocol::AREA,
    sso_connections::http::connections::AREA,
    sso_connections::http::dashboard::AREA,
    sso_connections::http::sign_in::AREA,
    sso_connections::http::saml::AREA,
];

/// The routes whose requests name their application other than by header,
/// and where: the region router finds the application from these.
pub const APPLICATION_ELSEWHERE: &[&[ApplicationIn]] = &[
    signing_keys::APPLICATION_IN,
    openid_provider::http::APPLICATION_IN,
    provider_sign_in::http::APPLICATION_IN,
    scim::http::protocol::APPLICATION_IN,
    sso_connections::http::sign_in::APPLICATION_IN,
    sso_connections::http::saml::APPLICATION_IN,
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    let mut v1 = web::scope("/v1");
    for segment in segments() {
        v1 = v1.service(group(segment));
    }
    cfg.configure(ops::configure)
        .service(
            web::resource(signing_keys::AUTHORIZATION_SERVER_ROUTE)
                .route(web::get().to(signing_keys::authorization_server)),
        )
        .service(v1.service(web::resource("/openapi.json").route(web::get().to(crate::openapi::served::document))));
}

/// Every first segment some area's routes have, in the areas' order.
fn segments() -> Vec<&'static str> {
    let mut segments = Vec::new();
    for segment in AREAS.iter().flat_map(|area| area.segments) {
        if !segments.contains(segment) {
            segments.push(*segment);
        }
    }
    segments
}

/// The routes of every area under `segment`, tried only for a path whose
/// first segment it is; any other path passes on to the next group.
fn group(segment: &'static str) -> actix_web::Scope {
    let in_group = move |ctx: &guard::GuardContext<'_>| first_segment(ctx.head().uri.path()) == Some(segment);
    let areas = AREAS.iter().filter(|area| area.segments.contains(&segment));
    areas.fold(web::scope("").guard(guard::fn_guard(in_group)), |scope, area| scope.configure(area.routes))
}

/// `users` of `/v1/users/…`.
fn first_segment(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/")?.split('/').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An area's routes are tried only under its segments: an operation it
    /// documents under another segment would answer 404.
    #[test]
    fn every_operation_of_an_area_is_under_one_of_its_segments() {
        for area in AREAS {
            for path in (area.operations)().paths.paths.keys() {
                let segment = first_segment(path);
                assert!(segment.is_some_and(|s| area.segments.contains(&s)), "{path}: not under {:?}", area.segments);
            }
        }
    }
}
