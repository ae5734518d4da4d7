#![allow(clippy::disallowed_methods)] // tests tamper with rows as an attacker with database access would
//! The one integration-test binary: every area's tests, against the real
//! application on loopback.
mod api_keys;
mod applications;
mod audit;
mod billing;
mod binary;
mod cli;
mod cross_node;
mod delivery_durability;
mod dns;
mod end_users;
mod enrollment;
mod entitlements;
mod governance;
mod hardening;
mod helpers;
mod hooks;
mod http_surface;
mod invitations;
mod list_plans;
mod machine_tokens;
mod memory;
mod messaging;
mod oauth_providers;
mod oidc;
mod ops;
mod password_reset;
mod profile_fields;
mod provider_sign_in;
mod rate_limits;
mod regions;
mod secrets;
mod service_accounts;
mod sso_domains;
mod structure;
mod webhooks;
