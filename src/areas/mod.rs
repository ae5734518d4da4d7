//! Domain logic and queries, one file per area. Functions take
//! `&impl ConnectionTrait` where the caller decides the transaction, and every
//! query of a regional table filters on `application_id`.
pub mod access_reviews;
pub mod api_keys;
pub mod application_archive;
pub mod applications;
pub mod auth;
pub mod billing;
pub mod email_verifications;
pub mod enrollment;
pub mod entitlements;
#[cfg(test)]
mod errors_on_the_wire;
pub mod hooks;
pub mod invitations;
pub mod machine_tokens;
pub mod mail_queue;
pub mod mailer;
pub mod master_key_rotation;
pub mod memberships;
pub mod messaging;
pub mod oauth_clients;
pub mod oauth_providers;
pub mod openid_provider;
pub mod organizations;
pub mod password_resets;
pub mod personal_keys;
pub mod profile_fields;
pub mod provider_sign_in;
pub mod rotations;
pub mod scim;
pub mod second_factors;
pub mod service_accounts;
pub mod sessions;
pub mod sod;
pub mod sso_connections;
pub mod sso_domains;
pub mod users;
pub mod validate;
pub mod webhooks;

use sea_orm::{DbErr, SqlErr};

/// For a write whose unique index stands for a rule (a key name, a slug, an
/// email): a violation is the area's `taken` outcome; any other failure
/// stays a database error.
pub fn unless_unique<E: From<DbErr>>(taken: E) -> impl FnOnce(DbErr) -> E {
    move |err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => taken,
        _ => err.into(),
    }
}
