//! The state every handler receives: passed explicitly, no globals.
use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::{
    areas::api_keys::KeyCache,
    auth::rate_limit::RateLimiter,
    config::Settings,
    crypto::{master_key::MasterKey, password::PasswordHasher},
    events::delivery,
    region::router::Directory,
    storage::Storage,
    tenancy::registry::TenantRegistry,
    tokens::AccessTokens,
};

pub struct AppState {
    pub settings: Arc<Settings>,
    pub storage: Arc<Storage>,
    pub directory: Directory,
    pub tenants: TenantRegistry,
    pub keys: KeyCache,
    pub limiter: RateLimiter,
    pub master_key: MasterKey,
    pub passwords: PasswordHasher,
    pub tokens: AccessTokens,
    pub rotations: crate::areas::rotations::Rotations,
    pub metrics: PrometheusHandle,
    pub redis: Option<redis::Client>,
    /// Invalidations across nodes (Redis pub/sub; this node only without Redis).
    pub bus: crate::cache::bus::Bus,
    /// Connected-account statuses, read through the cache layer.
    pub connect_statuses: crate::areas::billing::ConnectStatuses,
    /// Organizations' entitlement inputs, read through the cache layer.
    pub entitlements: crate::areas::entitlements::OrganizationEntitlements,
    /// TXT lookups of SSO domain verification (`dns.nameservers`).
    pub domains: crate::areas::sso_domains::DomainResolver,
    /// Sends through each application's messaging providers.
    pub mailer: crate::areas::mailer::Mailer,
    /// For forwarding to peer nodes.
    pub http: reqwest::Client,
    /// Calls to identity providers (code exchange, user info, their keys).
    pub providers: crate::oauth::client::ProviderClient,
    /// For webhook deliveries.
    pub webhooks: delivery::Clients,
    /// Given once the HTTP server has drained; background workers then stop.
    pub shutdown: crate::shutdown::Shutdown,
}

impl AppState {
    /// What end-user flows sign tokens with.
    pub fn issuer(&self) -> crate::areas::auth::Issuer<'_> {
        crate::areas::auth::Issuer { tenants: &self.tenants, tokens: &self.tokens, entitlements: &self.entitlements }
    }

    /// What queues email verification codes.
    pub fn email_codes(&self) -> crate::areas::email_verifications::Codes<'_> {
        crate::areas::email_verifications::Codes { master_key: &self.master_key }
    }

    /// What a sign-in with an identity provider needs of the node.
    pub fn provider_sign_in(&self) -> crate::areas::provider_sign_in::Deps<'_> {
        crate::areas::provider_sign_in::Deps {
            tenants: &self.tenants,
            settings: &self.settings.oauth,
            master_key: &self.master_key,
            client: &self.providers,
            public_url: self.settings.public_url(),
            private_destinations: self.settings.private_destinations_allowed(),
        }
    }

    /// What runs an application's sign-up hooks (at sign-up, and when a
    /// provider sign-in creates a user).
    pub fn hook_caller(&self) -> crate::areas::hooks::Caller<'_> {
        crate::areas::hooks::Caller {
            master_key: &self.master_key,
            clients: &self.webhooks,
            total_timeout: std::time::Duration::from_millis(self.settings.hooks.total_timeout_ms),
        }
    }
}
