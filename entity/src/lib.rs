//! sea-orm entities. Catalog tables: `account`, `application`. Regional tables:
//! everything else; every regional row carries `application_id`.
pub mod account;
pub mod api_key;
pub mod application;
pub mod audit_event;
pub mod audit_head;
pub mod webhook;
pub mod webhook_attempt;
pub mod webhook_message;
