//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! what every route shares ([`wire`]).
mod conditions;
pub mod fields;
mod links;
mod objects;
pub mod security;
pub mod served;
mod wire;
use wire::Wire;

use std::{collections::HashMap, sync::OnceLock};

use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};

use crate::{audit::query::AuditRow, error::FieldIssue, region::Region, routes, tenancy::Environment};

#[derive(OpenApi)]
#[openapi(
    info(title = "Gatehouse", description = "Multi-tenant identity and access management. Every `/v1` answer other than the documents (this one, JWKS, discovery) is wrapped in the envelope `{success, data, error, meta}`."),
    paths(
        routes::ops::healthz, routes::ops::readyz, routes::ops::metrics,
        routes::applications::create_application, routes::applications::list_applications,
        routes::applications::get_application, routes::applications::update_application,
        routes::region::get_region, routes::region::set_region,
        routes::api_keys::create_api_key, routes::api_keys::list_api_keys,
        routes::api_keys::find_api_key, routes::api_keys::revoke_api_key,
        routes::audit_logs::list_audit_logs, routes::audit_logs::export_audit_logs,
        routes::webhooks::create_webhook, routes::webhooks::list_webhooks, routes::webhooks::find_webhook,
        routes::webhooks::update_webhook, routes::webhooks::delete_webhook, routes::webhooks::rotate_webhook_secret,
        routes::webhooks::list_deliveries, routes::webhooks::retry_delivery,
        routes::api_keys::verify_api_key,
        routes::auth::sign_in::sign_up, routes::auth::sign_in::sign_in, routes::auth::sign_in::refresh,
        routes::auth::sign_in::sign_out, routes::auth::me::me,
        routes::auth::oauth::start, routes::auth::oauth::callback, routes::auth::oauth::callback_form,
        routes::auth::oauth::exchange_code, routes::auth::password::forgot_password,
        routes::auth::mfa::list_factors, routes::auth::mfa::start_totp, routes::auth::mfa::confirm_totp,
        routes::auth::mfa::remove_totp, routes::auth::mfa::complete_sign_in, routes::auth::mfa::step_up_session,
        routes::auth::passkeys::passkey_registration_options, routes::auth::passkeys::register_passkey, routes::auth::passkeys::list_passkeys,
        routes::auth::passkeys::remove_passkey, routes::auth::passkeys::passkey_sign_in_options, routes::auth::passkeys::sign_in_with_passkey,
        routes::auth::passkeys::passkey_second_step_options, routes::auth::passkeys::passkey_step_up_options,
        routes::auth::password::reset_password, routes::auth::email::verify_email, routes::auth::email::resend_code,
        routes::auth::me::activate, routes::auth::personal_keys::create_personal_key,
        routes::auth::personal_keys::list_personal_keys,
        routes::auth::personal_keys::revoke_personal_key,
        routes::signing_keys::jwks, routes::signing_keys::discovery, routes::signing_keys::rotate_signing_key,
        routes::machine_tokens::token,
        routes::users::create_user, routes::users::list_users, routes::users::find_user, routes::users::update_user,
        routes::users::delete_user, routes::users::list_user_sessions, routes::users::revoke_session,
        routes::organizations::create_organization, routes::organizations::list_organizations,
        routes::organizations::find_organization, routes::organizations::update_organization,
        routes::organizations::delete_organization, routes::organizations::add_membership,
        routes::organizations::list_memberships, routes::organizations::update_membership,
        routes::organizations::remove_membership,
        routes::sod_policies::create_sod_policy, routes::sod_policies::list_sod_policies,
        routes::sod_policies::check_grant, routes::sod_policies::find_sod_policy,
        routes::sod_policies::update_sod_policy, routes::sod_policies::delete_sod_policy,
        routes::sod_policies::list_violations,
        routes::access_reviews::create_access_review, routes::access_reviews::list_access_reviews,
        routes::access_reviews::find_access_review, routes::access_reviews::list_review_items,
        routes::access_reviews::decide_review_item, routes::access_reviews::close_access_review,
        routes::entitlements::put_feature, routes::entitlements::list_features, routes::entitlements::delete_feature,
        routes::entitlements::put_plan, routes::entitlements::list_plans, routes::entitlements::delete_plan,
        routes::entitlements::set_organization_plan, routes::entitlements::put_override,
        routes::entitlements::delete_override, routes::entitlements::org_entitlements,
        routes::entitlements::explain_entitlement,
        routes::team::invite_member, routes::team::list_invitations, routes::team::revoke_invitation,
        routes::team::accept_invitation,
        routes::sso_domains::claim_domain, routes::sso_domains::list_domains, routes::sso_domains::verify_domain,
        routes::sso_domains::delete_domain,
        routes::profile_fields::create_profile_field, routes::profile_fields::list_profile_fields,
        routes::profile_fields::find_profile_field, routes::profile_fields::update_profile_field,
        routes::profile_fields::delete_profile_field,
        routes::hooks::create_hook, routes::hooks::list_hooks, routes::hooks::find_hook, routes::hooks::update_hook,
        routes::hooks::delete_hook,
        routes::billing::set_payment_method, routes::billing::get_payment_method,
        routes::billing::connect_account, routes::billing::connect_status,
        routes::billing::receive_processor_event,
        routes::enrollment::create_host_group, routes::enrollment::list_host_groups,
        routes::enrollment::create_enrollment_token, routes::enrollment::list_enrollment_tokens,
        routes::enrollment::revoke_enrollment_token, routes::enrollment::enroll_host,
        routes::enrollment::list_hosts,
        routes::service_accounts::create_service_account, routes::service_accounts::list_service_accounts,
        routes::service_accounts::find_service_account, routes::service_accounts::update_service_account,
        routes::service_accounts::delete_service_account, routes::service_accounts::create_service_account_key,
        routes::service_accounts::list_service_account_keys, routes::service_accounts::revoke_service_account_key,
        routes::messaging::upsert_messaging_provider, routes::messaging::list_messaging_providers,
        routes::messaging::test_messaging_provider, routes::messaging::messaging_outbox,
        routes::oauth_providers::upsert_oauth_provider, routes::oauth_providers::list_oauth_providers,
        served::document,
    ),
    components(schemas(AuditRow, FieldIssue, Region, Environment)),
    modifiers(&SecretKeyAuth, &Wire),
)]
pub struct ApiDoc;

struct SecretKeyAuth;

impl Modify for SecretKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description = Some("A secret key (`sk_test_…`/`sk_live_…`) with the `x-application-id` header.".into());
        components.add_security_scheme("secret_key", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build();
        scheme.description = Some("An end user's access token with the `x-application-id` header.".into());
        components.add_security_scheme("access_token", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description =
            Some("A host enrollment token (`het_test_…`/`het_live_…`) with the `x-application-id` header.".into());
        components.add_security_scheme("enrollment_token", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Basic).build();
        scheme.description = Some(
            "A service account's id and one of its `sak_` keys as the client's credentials (RFC 6749 `client_secret_basic`); or both in the form (`client_secret_post`).".into(),
        );
        components.add_security_scheme("client_basic", SecurityScheme::Http(scheme));
    }
}

/// The document a deployment serves: [`json`] with its regions as the
/// `Region` schema's `enum` (for [`served::Served`], and `gatehouse openapi`).
pub fn for_regions(regions: &[Region]) -> serde_json::Value {
    let mut document: serde_json::Value = serde_json::from_str(json()).expect("the document is JSON");
    document["components"]["schemas"]["Region"]["enum"] = serde_json::json!(regions);
    document
}

/// The document every deployment shares (a region is any region name),
/// which the served one and `gatehouse openapi` add the regions to.
pub fn json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut document = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serialises");
        links::add(&mut document);
        conditions::add(&mut document);
        objects::open(&mut document);
        document.to_string()
    })
}

/// The `Allow` header of a route pattern (`/v1/api-keys/{key_id}`): the
/// methods the document gives it, and `HEAD` beside `GET`.
pub fn allowed_methods(pattern: &str) -> Option<&'static str> {
    static TABLE: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let document = ApiDoc::openapi();
        let mut table = HashMap::new();
        for (path, item) in document.paths.paths {
            let methods = [
                ("GET", item.get.is_some()),
                ("HEAD", item.get.is_some() || item.head.is_some()),
                ("POST", item.post.is_some()),
                ("PUT", item.put.is_some()),
                ("PATCH", item.patch.is_some()),
                ("DELETE", item.delete.is_some()),
            ];
            let allow: Vec<&str> = methods.iter().filter(|(_, on)| *on).map(|(m, _)| *m).collect();
            table.insert(path, &*Box::leak(allow.join(", ").into_boxed_str()));
        }
        table
    });
    table.get(pattern).copied()
}
