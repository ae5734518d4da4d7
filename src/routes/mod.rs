//! Routes, one file per area, composed here.
pub mod api_keys;
pub mod applications;
pub mod audit_logs;
pub mod ops;
pub mod webhooks;

use actix_web::web;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.configure(ops::configure).service(
        web::scope("/v1")
            .configure(applications::configure)
            .configure(api_keys::configure)
            .configure(audit_logs::configure)
            .configure(webhooks::configure)
            .route("/openapi.json", web::get().to(crate::openapi::document)),
    );
}
