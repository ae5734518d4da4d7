//! The registry of tenant tables: every regional entity with an
//! `application_id` column. The handles add the filter through
//! [`TenantEntity`]; a region move copies and deletes exactly these tables
//! ([`copy_all`], [`delete_all`]); and a test fails when the regional schema
//! has a table with `application_id` that is not listed here.
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, StreamTrait};
use uuid::Uuid;

use super::tenant_rows;

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

        /// The table names, in the order a copy inserts them (parents first).
        pub fn tenant_tables() -> Vec<&'static str> {
            vec![$(sea_orm::EntityName::table_name(&entity::$table::Entity)),*]
        }

        /// Copies every row of the application from `source` to `target`;
        /// answers how many rows were written.
        pub async fn copy_all<S, T>(source: &S, target: &T, application_id: Uuid) -> Result<u64, DbErr>
        where
            S: ConnectionTrait + StreamTrait,
            T: ConnectionTrait,
        {
            let mut copied = 0;
            $(copied += tenant_rows::copy::<entity::$table::Entity, _, _>(source, target, application_id).await?;)*
            Ok(copied)
        }

        /// Makes `target` hold every row of the application that `source`
        /// holds, keeping the audit rows `target` already has of the same
        /// chain ([`tenant_rows::audit_prefix`]: a move copies them ahead,
        /// while the application serves); every other row of it in
        /// `target` is replaced. Answers how many rows of it `target` holds
        /// afterwards.
        pub async fn copy_all_onto_audit_prefix<S, T>(source: &S, target: &T, application_id: Uuid) -> Result<u64, DbErr>
        where
            S: ConnectionTrait + StreamTrait,
            T: ConnectionTrait,
        {
            let kept = tenant_rows::audit_prefix(source, target, application_id).await?;
            let audit = sea_orm::EntityName::table_name(&entity::audit_event::Entity);
            $(if sea_orm::EntityName::table_name(&entity::$table::Entity) == audit {
                tenant_rows::delete_audit_after(target, application_id, kept).await?;
            } else {
                tenant_rows::delete::<entity::$table::Entity>(target, application_id).await?;
            })*
            // The rows kept count as copied: the move's figure is what the new region holds.
            let mut copied = kept as u64;
            $(copied += if sea_orm::EntityName::table_name(&entity::$table::Entity) == audit {
                tenant_rows::copy_audit_after(source, target, application_id, kept).await?
            } else {
                tenant_rows::copy::<entity::$table::Entity, _, _>(source, target, application_id).await?
            };)*
            Ok(copied)
        }

        /// Deletes every row of the application; answers how many went.
        pub async fn delete_all(db: &impl ConnectionTrait, application_id: Uuid) -> Result<u64, DbErr> {
            let mut deleted = 0;
            $(deleted += tenant_rows::delete::<entity::$table::Entity>(db, application_id).await?;)*
            Ok(deleted)
        }

        /// How many rows of the application each table holds (the tables
        /// that hold none are left out).
        pub async fn count_all(
            db: &impl ConnectionTrait,
            application_id: Uuid,
        ) -> Result<Vec<(&'static str, u64)>, DbErr> {
            let mut counts = Vec::new();
            $(let rows = tenant_rows::count::<entity::$table::Entity>(db, application_id).await?;
            if rows > 0 {
                counts.push((sea_orm::EntityName::table_name(&entity::$table::Entity), rows));
            })*
            Ok(counts)
        }
    };
}

/// Brings `target`'s copy of the application's audit chain up to what
/// `source` holds now: a region move does this while the application still
/// serves (audit rows never change), so its copy under the fence writes only
/// the rows appended since. Answers how many rows were written.
pub async fn copy_audit_ahead<S, T>(source: &S, target: &T, application_id: Uuid) -> Result<u64, DbErr>
where
    S: ConnectionTrait + StreamTrait,
    T: ConnectionTrait,
{
    let kept = tenant_rows::audit_prefix(source, target, application_id).await?;
    tenant_rows::delete_audit_after(target, application_id, kept).await?;
    tenant_rows::copy_audit_after(source, target, application_id, kept).await
}

tenant_tables!(
    audit_head,
    audit_event,
    audit_pending,
    personal_key,
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
    mail_queue,
    oauth_provider,
    oauth_client,
    oauth_code,
    oauth_consent,
    hosted_login,
    user_identity,
    oauth_flow,
    password_reset,
    sod_policy,
    sign_up_restriction,
    access_review,
    access_review_item,
    feature,
    plan,
    entitlement_override,
    invitation,
    sso_domain,
    email_verification,
    mfa_factor,
    recovery_code,
    mfa_challenge,
    passkey,
    passkey_ceremony,
    user_import,
    scim_directory,
    scim_resource,
    scim_group_member,
    sso_connection,
    saml_assertion,
);
