//! sea-orm entities. Catalog tables: `account`, `application`,
//! `deployment_secret`, `pending_audit_event`, `processor_account`, `processor_account_claim`, `region_move`, `shard`, `unmatched_processor_event`. Regional tables:
//! everything else; every regional row carries `application_id`.
//!
//! Models with secret columns (password, refresh-token and API-key hashes,
//! sealed private keys and webhook/hook secrets) implement `Debug` by hand and
//! print [`REDACTED`] in their place. Their `ActiveModel`s cannot: sea-orm's
//! `DeriveEntityModel` always derives `Debug` on the generated `ActiveModel`,
//! which prints `Set(..)` values as they are. Never log an `ActiveModel` of
//! `api_key`, `billing_profile`, `email_verification`, `enrollment_token`, `hook`, `invitation`, `mail_queue`, `messaging_provider`, `mfa_challenge`, `hosted_login`, `mfa_factor`, `oauth_client`, `oauth_code`, `oauth_flow`, `oauth_provider`, `passkey_ceremony`, `password_reset`, `recovery_code`, `refresh_token`, `scim_directory`, `sso_connection`,
//! `service_account_key`, `signing_key`, `user`, `user_api_key` or `webhook` with `{:?}`.
pub mod access_review;
pub mod access_review_item;
pub mod account;
pub mod api_key;
pub mod application;
pub mod audit_event;
pub mod audit_head;
pub mod audit_pending;
pub mod billing_profile;
pub mod connect_status;
pub mod deployment_secret;
pub mod email_verification;
pub mod enrollment_token;
pub mod entitlement_override;
pub mod feature;
pub mod hook;
pub mod host;
pub mod host_group;
pub mod hosted_login;
pub mod invitation;
pub mod mail_queue;
pub mod membership;
pub mod messaging_outbox;
pub mod messaging_provider;
pub mod mfa_challenge;
pub mod mfa_factor;
pub mod oauth_client;
pub mod oauth_code;
pub mod oauth_consent;
pub mod oauth_flow;
pub mod oauth_provider;
pub mod organization;
pub mod passkey;
pub mod passkey_ceremony;
pub mod password_reset;
pub mod pending_audit_event;
pub mod personal_key;
pub mod plan;
pub mod processor_account;
pub mod processor_account_claim;
pub mod processor_event;
pub mod profile_field;
pub mod recovery_code;
pub mod refresh_token;
pub mod region_move;
pub mod saml_assertion;
pub mod scim_directory;
pub mod scim_group_member;
pub mod scim_resource;
pub mod service_account;
pub mod service_account_key;
pub mod session;
pub mod shard;
pub mod sign_up_restriction;
pub mod signing_key;
pub mod sod_policy;
pub mod sso_connection;
pub mod sso_domain;
pub mod unmatched_processor_event;
pub mod user;
pub mod user_api_key;
pub mod user_identity;
pub mod user_import;
pub mod webhook;
pub mod webhook_attempt;
pub mod webhook_message;

/// What `Debug` prints instead of a secret column.
pub const REDACTED: &str = "[redacted]";
