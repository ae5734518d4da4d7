//! The actor's own operations: loading its state, its first signing key,
//! region moves. Every other tenant-wide change is a
//! [`super::change::Change`].
use std::sync::Arc;

use actix::Message;

use super::state::TenantState;
use crate::{
    error::ApiResult,
    region::{Region, Shard},
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

/// Makes the first signing key of an algorithm if there is none.
#[derive(Message)]
#[rtype(result = "ApiResult<Arc<TenantState>>")]
pub struct EnsureSigningKey {
    pub scope: TenantScope,
    pub algorithm: crate::tokens::algorithms::Algorithm,
}

/// Moves the application to another region.
#[derive(Message)]
#[rtype(result = "ApiResult<Region>")]
pub struct MoveRegion {
    pub scope: TenantScope,
    pub to: Region,
}

/// Resumes the application's unfinished region move, if no node runs it;
/// answers where it ended (`None`: another node has it).
#[derive(Message)]
#[rtype(result = "ApiResult<Option<Shard>>")]
pub struct ResumeMove;
