//! The OpenAPI 3.1 document, generated from the handlers' annotations.
use std::sync::OnceLock;

use actix_web::HttpResponse;
use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};

use crate::{audit::query::AuditRow, error::FieldIssue, region::Region, routes, tenancy::Environment};

#[derive(OpenApi)]
#[openapi(
    info(title = "Gatehouse", description = "Multi-tenant identity and access management. Every `/v1` answer other than the documents is wrapped in the envelope `{success, data, error, meta}`; the schemas below describe `data`."),
    paths(
        routes::ops::healthz, routes::ops::readyz, routes::ops::metrics,
        routes::applications::create_application, routes::applications::list_applications,
        routes::applications::get_application, routes::applications::update_application,
        routes::api_keys::create_api_key, routes::api_keys::list_api_keys,
        routes::api_keys::find_api_key, routes::api_keys::revoke_api_key,
        routes::audit_logs::list_audit_logs, routes::audit_logs::export_audit_logs,
        routes::webhooks::create_webhook, routes::webhooks::list_webhooks, routes::webhooks::find_webhook,
        routes::webhooks::update_webhook, routes::webhooks::delete_webhook, routes::webhooks::rotate_webhook_secret,
        routes::webhooks::list_deliveries, routes::webhooks::retry_delivery,
        document,
    ),
    components(schemas(AuditRow, FieldIssue, Region, Environment)),
    modifiers(&SecretKeyAuth),
)]
pub struct ApiDoc;

struct SecretKeyAuth;

impl Modify for SecretKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description = Some("A secret key (`sk_test_…`/`sk_live_…`) with the `x-application-id` header.".into());
        components.add_security_scheme("secret_key", SecurityScheme::Http(scheme));
    }
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "operations", responses((status = 200, content_type = "application/json")))]
pub async fn document() -> HttpResponse {
    static JSON: OnceLock<String> = OnceLock::new();
    let json = JSON.get_or_init(|| ApiDoc::openapi().to_json().expect("the OpenAPI document serialises"));
    HttpResponse::Ok().content_type("application/json").body(json.clone())
}
