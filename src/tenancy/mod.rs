//! Tenancy: an application is the tenant. Its directory entry
//! ([`crate::application::Tenant`]) is what routing attaches to each request; its
//! [`actor::TenantActor`] (one per application, started on demand, stopped
//! when idle) owns the rest of its in-memory state ([`state::TenantState`]:
//! settings, signing keys, and each area's [`parts::TenantPart`]), publishes it as an
//! immutable snapshot, and is the single writer of tenant-wide changes
//! ([`change::Change`], one closure per change; its own operations, such as
//! a region move, are [`messages`] handled in [`handlers`]). Handlers reach
//! it through the [`registry::TenantRegistry`].
pub mod actor;
pub mod change;
pub mod handlers;
pub mod messages;
pub mod parts;
pub mod registry;
pub mod state;

pub use self::change::InTurn;
pub use crate::application::{Environment, Tenant, TenantSnapshot};
