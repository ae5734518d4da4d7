//! The application as every layer sees it: its directory entry ([`Tenant`],
//! its settings and where its data lives), which routing attaches to each
//! request. Below everything that holds or changes it (`tenancy`).
use std::sync::Arc;

use chrono::{DateTime, Utc};
use entity::application;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::region::{Region, Shard, ShardName};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Development,
    Staging,
    Production,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Development => "development",
            Environment::Staging => "staging",
            Environment::Production => "production",
        }
    }

    pub fn parse(value: &str) -> Option<Environment> {
        [Environment::Development, Environment::Staging, Environment::Production]
            .into_iter()
            .find(|e| e.as_str() == value)
    }

    pub fn is_live(self) -> bool {
        self == Environment::Production
    }
}

/// Serialised only into the shared cache (Redis): application settings, no
/// end-user data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantSnapshot {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    pub environment: Environment,
    pub region: Region,
    pub allowed_origins: Vec<String>,
    pub branding: serde_json::Value,
    /// Entries cached by a node that predates the field read as 0.
    #[serde(default)]
    pub refresh_reuse_interval_seconds: u32,
    /// The feature keys an access token with an active organization
    /// carries resolved, as its `ent` claim (entries cached by an older node: none).
    #[serde(default)]
    pub entitlement_claims: Vec<String>,
    /// Sign-in refuses a user whose email is not verified (403 `email_not_verified`).
    #[serde(default)]
    pub require_verified_email: bool,
    /// The allowed origins may show the hosted sign-in pages in a frame
    /// (`frame-ancestors`); off, no page may.
    #[serde(default)]
    pub hosted_pages_in_frames: bool,
    /// End-user actions that need a session at `aal2` (403 `aal2_required`).
    #[serde(default)]
    pub require_aal2_for: Vec<String>,
    /// The WebAuthn relying-party id of the application's passkeys; none: passkeys are off.
    #[serde(default)]
    pub passkey_rp_id: Option<String>,
    /// Set while the application's data moves to this region: its requests
    /// are answered 503 `region_migration_in_progress` until the switch.
    #[serde(default)]
    pub moving_to: Option<Region>,
    /// The shard of its region that holds the application's data (entries
    /// cached by an older node, and applications on their region's first
    /// shard: none).
    #[serde(default)]
    pub shard_name: Option<ShardName>,
    /// The shard of `moving_to` a move copies into (none: its first).
    #[serde(default)]
    pub moving_to_shard_name: Option<ShardName>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub type Tenant = Arc<TenantSnapshot>;

impl TenantSnapshot {
    /// The shard that holds the application's data.
    pub fn shard(&self) -> Shard {
        Shard::named(self.region, self.shard_name)
    }

    /// The shard a move copies the application into, while it moves.
    pub fn moving_to_shard(&self) -> Option<Shard> {
        Some(Shard::named(self.moving_to?, self.moving_to_shard_name))
    }

    /// A catalog row written by this code always converts; a row that does
    /// not (edited by hand) is reported rather than guessed at.
    pub fn from_model(row: application::Model) -> Result<TenantSnapshot, String> {
        Ok(TenantSnapshot {
            id: row.id,
            account_id: row.account_id,
            environment: Environment::parse(&row.environment)
                .ok_or_else(|| format!("application {} has environment {:?}", row.id, row.environment))?,
            region: Region::new(&row.region)
                .map_err(|_| format!("application {} has region {:?}", row.id, row.region))?,
            allowed_origins: serde_json::from_value(row.allowed_origins).unwrap_or_default(),
            branding: row.branding,
            refresh_reuse_interval_seconds: row.refresh_reuse_interval_seconds.clamp(0, 60) as u32,
            entitlement_claims: row.entitlement_claims.and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default(),
            require_verified_email: row.require_verified_email,
            hosted_pages_in_frames: row.hosted_pages_in_frames,
            require_aal2_for: row.require_aal2_for.and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default(),
            passkey_rp_id: row.passkey_rp_id,
            moving_to: row.moving_to.as_deref().and_then(|r| Region::new(r).ok()),
            shard_name: row.shard.as_deref().and_then(|name| ShardName::new(name).ok()),
            moving_to_shard_name: row.moving_to_shard.as_deref().and_then(|name| ShardName::new(name).ok()),
            name: row.name,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}
