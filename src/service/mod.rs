//! Domain logic and queries, one file per area. Functions take
//! `&impl ConnectionTrait` where the caller decides the transaction, and every
//! query of a regional table filters on `application_id`.
pub mod api_keys;
pub mod applications;
pub mod auth;
pub mod hooks;
pub mod organizations;
pub mod personal_keys;
pub mod profile_fields;
pub mod rotations;
pub mod sessions;
pub mod users;
pub mod validate;
pub mod webhooks;
