//! Domain logic and queries, one file per area. Functions take
//! `&impl ConnectionTrait` where the caller decides the transaction, and every
//! query of a regional table filters on `application_id`.
pub mod api_keys;
pub mod applications;
pub mod validate;
pub mod webhooks;
