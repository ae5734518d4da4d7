//! The registry of tenant tables: every regional entity with an
//! `application_id` column. The handles add the filter through
//! [`TenantEntity`]; a region move copies exactly [`tenant_tables`]; and a
//! test fails when the regional schema has a table with `application_id`
//! that is not listed here.
use sea_orm::EntityTrait;

/// A regional entity whose rows belong to one application.
pub trait TenantEntity: EntityTrait {
    fn application_id_column() -> Self::Column;
}

macro_rules! tenant_tables {
    ($($table:ident),* $(,)?) => {
        $(impl TenantEntity for entity::$table::Entity {
            fn application_id_column() -> Self::Column {
                entity::$table::Column::ApplicationId
            }
        })*

        /// The table names, in the order a copy must insert them (parents first).
        pub fn tenant_tables() -> Vec<&'static str> {
            vec![$(sea_orm::EntityName::table_name(&entity::$table::Entity)),*]
        }
    };
}

tenant_tables!(
    audit_head,
    audit_event,
    api_key,
    signing_key,
    user,
    session,
    refresh_token,
    organization,
    membership,
    user_api_key,
    profile_field,
    hook,
    webhook,
    webhook_message,
    webhook_attempt,
    billing_profile,
    connect_status,
    processor_event,
    host_group,
    enrollment_token,
    host,
    service_account,
    service_account_key,
    messaging_provider,
    messaging_outbox,
    oauth_provider,
    user_identity,
    oauth_flow,
    password_reset,
    sod_policy,
    access_review,
    access_review_item,
    feature,
    plan,
    entitlement_override,
    invitation,
    sso_domain,
    email_verification,
);
