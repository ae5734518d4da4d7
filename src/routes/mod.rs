//! Routes, one file per area, composed here.
pub mod access_reviews;
pub mod api_keys;
pub mod applications;
pub mod audit_logs;
pub mod auth;
pub mod billing;
pub mod enrollment;
pub mod entitlements;
pub mod hooks;
pub mod machine_tokens;
pub mod messaging;
pub mod oauth_providers;
pub mod ops;
pub mod organizations;
pub mod profile_fields;
pub mod region;
pub mod service_accounts;
pub mod signing_keys;
pub mod sod_policies;
pub mod sso_domains;
pub mod team;
pub mod users;
pub mod webhooks;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(ops::configure).service(
        web::scope("/v1")
            // Public documents first: the most requested routes match soonest.
            .configure(signing_keys::configure)
            .configure(machine_tokens::configure)
            .configure(auth::configure)
            .configure(applications::configure)
            .configure(region::configure)
            .configure(api_keys::configure)
            .configure(audit_logs::configure)
            .configure(webhooks::configure)
            .configure(hooks::configure)
            .configure(billing::configure)
            .configure(messaging::configure)
            .configure(oauth_providers::configure)
            .configure(profile_fields::configure)
            .configure(users::configure)
            .configure(organizations::configure)
            .configure(sod_policies::configure)
            .configure(access_reviews::configure)
            .configure(entitlements::configure)
            .configure(team::configure)
            .configure(sso_domains::configure)
            .configure(enrollment::configure)
            .configure(service_accounts::configure)
            .service(web::resource("/openapi.json").route(web::get().to(crate::openapi::document))),
    );
}
