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

use actix_web::{guard, web};

/// A module's routes.
type Configure = fn(&mut web::ServiceConfig);

/// The `/v1` routes by their first path segment. A request is matched only
/// against the resources of its segment's group: actix tests every dynamic
/// resource it passes with a regular expression (and allocates its
/// captures), so one flat list made each request pay for every route
/// registered before its own (a tenth of an authenticated read's CPU).
/// Public documents first: the most requested routes match soonest.
const GROUPS: &[(&[&str], &[Configure])] = &[
    (
        &["applications"],
        &[
            signing_keys::configure,
            machine_tokens::configure,
            applications::configure,
            messaging::configure,
            oauth_providers::configure,
        ],
    ),
    (&["auth"], &[auth::configure, team::configure]),
    (&["api-keys"], &[api_keys::configure]),
    (&["users", "sessions"], &[users::configure]),
    (&["organizations", "features", "plans"], &[organizations::configure, entitlements::configure]),
    (&["security"], &[region::configure]),
    (&["audit-logs"], &[audit_logs::configure]),
    (&["webhooks"], &[webhooks::configure]),
    (&["hooks"], &[hooks::configure]),
    (&["billing"], &[billing::configure]),
    (&["profile-fields"], &[profile_fields::configure]),
    (&["sod-policies"], &[sod_policies::configure]),
    (&["access-reviews", "access-review-items"], &[access_reviews::configure]),
    (&["dashboard"], &[team::configure, sso_domains::configure]),
    (&["os"], &[enrollment::configure]),
    (&["service-accounts"], &[service_accounts::configure]),
];

pub fn configure(cfg: &mut web::ServiceConfig) {
    let mut v1 = web::scope("/v1");
    for (segments, modules) in GROUPS {
        v1 = v1.service(group(segments, modules));
    }
    cfg.configure(ops::configure)
        .service(v1.service(web::resource("/openapi.json").route(web::get().to(crate::openapi::served::document))));
}

/// The resources of `modules` (registered with their whole `/v1`-relative
/// paths), tried only for a path whose first segment is one of `segments`;
/// any other path passes on to the next group.
fn group(segments: &'static [&'static str], modules: &[Configure]) -> actix_web::Scope {
    let in_group = move |ctx: &guard::GuardContext<'_>| {
        first_segment(ctx.head().uri.path()).is_some_and(|s| segments.contains(&s))
    };
    modules.iter().fold(web::scope("").guard(guard::fn_guard(in_group)), |scope, module| scope.configure(*module))
}

/// `users` of `/v1/users/…`.
fn first_segment(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/")?.split('/').next()
}
