//! The messages a tenant actor handles: every tenant-wide change is one, and
//! carries the scope of the principal that asked for it.
use std::sync::Arc;

use actix::Message;
use entity::{feature, hook, messaging_provider, oauth_provider, plan, sod_policy};
use uuid::Uuid;

use super::{state::TenantState, Tenant};
use crate::{
    error::ApiResult,
    region::Region,
    service::{
        applications::SettingsPatch,
        entitlements::definitions::FeatureInput,
        hooks::{HookPatch, NewHook},
        messaging::{CheckedUpdate, Outcome},
        oauth_providers,
        sod::PolicyInput,
    },
    storage::TenantScope,
};

/// Loads the state (when it is missing or stale).
#[derive(Message)]
#[rtype(result = "ApiResult<Arc<TenantState>>")]
pub struct Load {
    /// Load even if the published state is fresh, for a `kid` it does not
    /// know, unless a load made since already says the `kid` is unknown.
    pub unknown_kid: Option<uuid::Uuid>,
}

#[derive(Message)]
#[rtype(result = "ApiResult<Tenant>")]
pub struct UpdateSettings {
    pub scope: TenantScope,
    pub patch: SettingsPatch,
}

/// Makes the first signing key if there is none.
#[derive(Message)]
#[rtype(result = "ApiResult<Arc<TenantState>>")]
pub struct EnsureSigningKey {
    pub scope: TenantScope,
}

/// Moves the application to another region (operation 17).
#[derive(Message)]
#[rtype(result = "ApiResult<Region>")]
pub struct MoveRegion {
    pub scope: TenantScope,
    pub to: Region,
}

/// Resumes the application's unfinished region move, if no node runs it;
/// answers where it ended (`None`: another node has it).
#[derive(Message)]
#[rtype(result = "ApiResult<Option<Region>>")]
pub struct ResumeMove;

#[derive(Message)]
#[rtype(result = "ApiResult<crate::tokens::keys::Rotation>")]
pub struct RotateSigningKey {
    pub scope: TenantScope,
    /// A key compromise: the old keys are deleted and the new one signs now.
    pub immediate: bool,
}

#[derive(Message)]
#[rtype(result = "ApiResult<(hook::Model, String)>")]
pub struct CreateHook {
    pub scope: TenantScope,
    pub new: NewHook,
    pub limit: u64,
}

#[derive(Message)]
#[rtype(result = "ApiResult<hook::Model>")]
pub struct UpdateHook {
    pub scope: TenantScope,
    pub id: Uuid,
    pub patch: HookPatch,
}

#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct DeleteHook {
    pub scope: TenantScope,
    pub id: Uuid,
}

/// Creates or replaces a channel's messaging provider.
#[derive(Message)]
#[rtype(result = "ApiResult<messaging_provider::Model>")]
pub struct UpsertMessagingProvider {
    pub scope: TenantScope,
    pub update: CheckedUpdate,
}

/// Records a send's outcome on a messaging provider (its status).
#[derive(Message)]
#[rtype(result = "ApiResult<Option<messaging_provider::Model>>")]
pub struct RecordMessagingOutcome {
    pub scope: TenantScope,
    pub provider_id: Uuid,
    pub settings_at: chrono::DateTime<chrono::Utc>,
    pub outcome: Outcome,
    pub test: bool,
}

/// Creates or replaces an identity provider's settings.
#[derive(Message)]
#[rtype(result = "ApiResult<oauth_provider::Model>")]
pub struct UpsertOAuthProvider {
    pub scope: TenantScope,
    pub update: oauth_providers::CheckedUpdate,
}

#[derive(Message)]
#[rtype(result = "ApiResult<sod_policy::Model>")]
pub struct CreateSodPolicy {
    pub scope: TenantScope,
    pub input: PolicyInput,
    pub limit: u64,
}

#[derive(Message)]
#[rtype(result = "ApiResult<sod_policy::Model>")]
pub struct UpdateSodPolicy {
    pub scope: TenantScope,
    pub id: Uuid,
    pub input: PolicyInput,
}

#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct DeleteSodPolicy {
    pub scope: TenantScope,
    pub id: Uuid,
}

/// Creates or replaces a feature.
#[derive(Message)]
#[rtype(result = "ApiResult<feature::Model>")]
pub struct PutFeature {
    pub scope: TenantScope,
    pub key: String,
    pub input: FeatureInput,
    pub limit: u64,
}

#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct DeleteFeature {
    pub scope: TenantScope,
    pub key: String,
}

/// Creates or replaces a plan.
#[derive(Message)]
#[rtype(result = "ApiResult<plan::Model>")]
pub struct PutPlan {
    pub scope: TenantScope,
    pub key: String,
    pub name: String,
    pub grants: serde_json::Map<String, serde_json::Value>,
    pub limit: u64,
}

#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct DeletePlan {
    pub scope: TenantScope,
    pub key: String,
}
