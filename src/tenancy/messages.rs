//! The messages a tenant actor handles: every tenant-wide change is one, and
//! carries the scope of the principal that asked for it.
use std::sync::Arc;

use actix::Message;
use entity::hook;
use uuid::Uuid;

use super::{state::TenantState, Tenant};
use crate::{
    error::ApiResult,
    service::{
        applications::SettingsPatch,
        hooks::{HookPatch, NewHook},
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

#[derive(Message)]
#[rtype(result = "ApiResult<Uuid>")]
pub struct RotateSigningKey {
    pub scope: TenantScope,
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
