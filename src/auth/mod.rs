//! Authentication: who is calling. Secret API keys for management routes
//! ([`secret_key::SecretKey`], an extractor that fails before any body is
//! read), their scopes, and the per-application request budget; end users'
//! access tokens ([`end_user::EndUser`]); the public caller of an
//! application. Each principal yields the [`TenantScope`] its request works in.
pub mod end_user;
pub mod public;
pub mod rate_limit;
pub mod secret_key;

use crate::{audit::Actor, state::AppState, storage::TenantScope, tenancy::Tenant};

/// The scope of an unauthenticated caller of an application's public
/// routes (sign-up, sign-in, refresh, its JWKS): the application named by
/// `x-application-id` or the path, acting as `public`. `None` when this
/// node does not hold the application's region.
pub fn public_scope(state: &AppState, tenant: Tenant) -> Option<TenantScope> {
    let shard = state.storage.shard(tenant.shard())?;
    Some(TenantScope::new(tenant, shard, Actor::public()))
}

pub use crate::areas::api_keys::ADMIN_SCOPE;
