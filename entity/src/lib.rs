//! sea-orm entities. Catalog tables: `account`, `application`,
//! `pending_audit_event`. Regional tables:
//! everything else; every regional row carries `application_id`.
pub mod account;
pub mod api_key;
pub mod application;
pub mod audit_event;
pub mod audit_head;
pub mod hook;
pub mod membership;
pub mod organization;
pub mod pending_audit_event;
pub mod profile_field;
pub mod refresh_token;
pub mod session;
pub mod signing_key;
pub mod user;
pub mod user_api_key;
pub mod webhook;
pub mod webhook_attempt;
pub mod webhook_message;
