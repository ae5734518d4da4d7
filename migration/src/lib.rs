#![allow(clippy::disallowed_methods)] // the schema: its raw SQL is DDL and backfills, run before any tenant exists
//! Schema migrations. The catalog database and the regional databases have
//! separate migrators, each with its own bookkeeping table.
pub use sea_orm_migration::prelude::*;

mod m20261122_000001_create_catalog;
mod m20261122_000002_create_api_keys;
mod m20261122_000003_create_audit_events;
mod m20261122_000004_create_webhooks;
mod m20261123_000005_create_end_users;
mod m20261123_000006_create_organizations;
mod m20261123_000007_create_profile_fields_and_hooks;
mod m20261123_000008_create_pending_audit_events;
mod m20261124_000009_add_refresh_reuse_interval;
mod m20261124_000010_create_list_indexes;
mod m20261125_000011_create_billing;
mod m20261125_000012_create_processor_accounts;
mod m20261125_000013_create_service_accounts;
mod m20261125_000014_create_enrollment;
mod m20261125_000015_create_messaging;
mod m20261125_000016_create_oauth_providers;
mod m20261126_000017_create_provider_sign_in;
mod m20261126_000018_create_password_resets;
mod m20261127_000019_create_governance;
mod m20261127_000020_create_entitlements;
mod m20261127_000021_add_entitlement_claims;
mod m20261127_000022_create_invitations;
mod m20261127_000023_create_sso_domains;
mod m20261127_000024_create_email_verifications;
mod m20261127_000025_add_require_verified_email;
mod m20261128_000026_create_region_moves;
mod m20261128_000027_create_second_factors;
mod m20261128_000028_add_require_aal2_for;
mod m20261129_000029_create_passkeys;
mod m20261129_000030_add_passkey_rp_id;
mod m20261130_000031_add_signs_from;
mod m20261130_000032_add_sso_domains_claimed_by;
mod m20261130_000033_create_processor_account_claims;
mod m20261201_000034_create_sign_up_restrictions;
mod m20261202_000035_create_mail_queue;
mod m20261202_000036_add_move_cancel_requested;
mod m20261203_000037_add_audit_head_fence;
mod m20261204_000038_create_shards;
mod m20261204_000039_create_audit_pending;
mod m20261205_000040_create_oauth_clients;
mod m20261205_000041_create_authorization_codes;
mod m20261206_000042_add_signing_key_algorithm;
mod m20261207_000043_add_authorization_code_organization;
mod m20261207_000044_add_sign_in_methods;
mod m20261207_000045_add_hosted_pages_in_frames;
mod m20261208_000046_create_personal_keys;
mod m20261208_000047_create_user_imports;
mod m20261209_000048_create_deployment_secrets;
mod m20261210_000049_create_scim;
mod m20261211_000050_create_sso_connections;
mod m20261212_000051_create_oauth_consents;
mod m20261213_000052_add_saml_connections;

/// Migrations of the catalog database: accounts, the application directory,
/// the region-move journal, the processor accounts that point into it
/// (verified links) and the applications' claims of them.
pub struct CatalogMigrator;

#[async_trait::async_trait]
impl MigratorTrait for CatalogMigrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_create_catalog::Migration),
            Box::new(m20261123_000008_create_pending_audit_events::Migration),
            Box::new(m20261124_000009_add_refresh_reuse_interval::Migration),
            Box::new(m20261125_000012_create_processor_accounts::Migration),
            Box::new(m20261127_000021_add_entitlement_claims::Migration),
            Box::new(m20261127_000025_add_require_verified_email::Migration),
            Box::new(m20261128_000026_create_region_moves::Migration),
            Box::new(m20261128_000028_add_require_aal2_for::Migration),
            Box::new(m20261129_000030_add_passkey_rp_id::Migration),
            Box::new(m20261130_000033_create_processor_account_claims::Migration),
            Box::new(m20261202_000036_add_move_cancel_requested::Migration),
            Box::new(m20261204_000038_create_shards::Migration),
            Box::new(m20261207_000045_add_hosted_pages_in_frames::Migration),
            Box::new(m20261209_000048_create_deployment_secrets::Migration),
        ]
    }

    fn migration_table_name() -> DynIden {
        Alias::new("catalog_migrations").into_iden()
    }
}

/// Migrations of each regional database: everything an application owns.
pub struct RegionMigrator;

#[async_trait::async_trait]
impl MigratorTrait for RegionMigrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000002_create_api_keys::Migration),
            Box::new(m20261122_000003_create_audit_events::Migration),
            Box::new(m20261122_000004_create_webhooks::Migration),
            Box::new(m20261123_000005_create_end_users::Migration),
            Box::new(m20261123_000006_create_organizations::Migration),
            Box::new(m20261123_000007_create_profile_fields_and_hooks::Migration),
            Box::new(m20261124_000010_create_list_indexes::Migration),
            Box::new(m20261125_000011_create_billing::Migration),
            Box::new(m20261125_000013_create_service_accounts::Migration),
            Box::new(m20261125_000014_create_enrollment::Migration),
            Box::new(m20261125_000015_create_messaging::Migration),
            Box::new(m20261125_000016_create_oauth_providers::Migration),
            Box::new(m20261126_000017_create_provider_sign_in::Migration),
            Box::new(m20261126_000018_create_password_resets::Migration),
            Box::new(m20261127_000019_create_governance::Migration),
            Box::new(m20261127_000020_create_entitlements::Migration),
            Box::new(m20261127_000022_create_invitations::Migration),
            Box::new(m20261127_000023_create_sso_domains::Migration),
            Box::new(m20261127_000024_create_email_verifications::Migration),
            Box::new(m20261128_000027_create_second_factors::Migration),
            Box::new(m20261129_000029_create_passkeys::Migration),
            Box::new(m20261130_000031_add_signs_from::Migration),
            Box::new(m20261130_000032_add_sso_domains_claimed_by::Migration),
            Box::new(m20261201_000034_create_sign_up_restrictions::Migration),
            Box::new(m20261202_000035_create_mail_queue::Migration),
            Box::new(m20261203_000037_add_audit_head_fence::Migration),
            Box::new(m20261204_000039_create_audit_pending::Migration),
            Box::new(m20261205_000040_create_oauth_clients::Migration),
            Box::new(m20261205_000041_create_authorization_codes::Migration),
            Box::new(m20261206_000042_add_signing_key_algorithm::Migration),
            Box::new(m20261207_000043_add_authorization_code_organization::Migration),
            Box::new(m20261207_000044_add_sign_in_methods::Migration),
            Box::new(m20261208_000046_create_personal_keys::Migration),
            Box::new(m20261208_000047_create_user_imports::Migration),
            Box::new(m20261210_000049_create_scim::Migration),
            Box::new(m20261211_000050_create_sso_connections::Migration),
            Box::new(m20261212_000051_create_oauth_consents::Migration),
            Box::new(m20261213_000052_add_saml_connections::Migration),
        ]
    }

    fn migration_table_name() -> DynIden {
        Alias::new("region_migrations").into_iden()
    }
}
