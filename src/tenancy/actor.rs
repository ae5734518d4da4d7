//! The tenant actor: owner of one application's state and the single writer
//! of its tenant-wide changes. Messages are handled one at a time
//! (atomically), so two changes of one application never interleave on a
//! node (across nodes, the transactions take turns on the audit-chain head).
//! After each change it publishes the new state, sends the invalidation on
//! the bus, and only then answers.
use std::{
    collections::HashMap,
    future::Future,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use actix::prelude::*;
use arc_swap::ArcSwapOption;
use uuid::Uuid;

use super::{
    parts::Parts,
    state::{version_now, TenantState},
};
use crate::{
    audit::Actor as AuditActor,
    cache::{
        bus::{Bus, Invalidation},
        layer::ReadThrough,
    },
    crypto::master_key::MasterKey,
    error::{ApiError, ApiResult},
    region::{moves::MovePolicy, router::Directory},
    storage::{Storage, TenantScope},
    tokens::keys::{JwksDocument, SigningKeys},
};

/// An actor nobody asked for anything this long stops (its state goes with it).
pub(super) const IDLE_AFTER: Duration = Duration::from_secs(300);

/// What every tenant actor of a node works with.
pub(super) struct Deps {
    pub storage: Arc<Storage>,
    pub directory: Directory,
    pub bus: Bus,
    pub keys: SigningKeys,
    pub master_key: MasterKey,
    /// The public JWKS documents (moka, then Redis).
    pub documents: ReadThrough<JwksDocument>,
    /// This node's claims on region moves.
    pub moves: MovePolicy,
    /// The areas' settings every tenant state holds.
    pub parts: Parts,
}

pub(super) type Published = Arc<ArcSwapOption<TenantState>>;

/// The registry's entry for one actor: its address, the state it publishes,
/// and when it was last asked for (the registry touches it under its lock,
/// so an actor never stops between a lookup and its use).
#[derive(Clone)]
pub(super) struct Handle {
    pub addr: Addr<TenantActor>,
    pub published: Published,
    pub last_used: Arc<AtomicU64>,
}

pub(super) type Handles = Arc<Mutex<HashMap<Uuid, Handle>>>;

pub struct TenantActor {
    pub(super) id: Uuid,
    pub(super) deps: Arc<Deps>,
    pub(super) published: Published,
    pub(super) last_used: Arc<AtomicU64>,
    pub(super) handles: Handles,
}

impl Actor for TenantActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(IDLE_AFTER / 5, |actor, ctx| {
            let mut handles = actor.handles.lock().expect("registry lock");
            let idle_since = actor.last_used.load(Ordering::Relaxed);
            if crate::clock::now().timestamp() as u64 >= idle_since + IDLE_AFTER.as_secs() {
                handles.remove(&actor.id);
                ctx.stop();
            }
        });
    }
}

impl TenantActor {
    /// Reads the application's state from the catalog and its shard, as the
    /// system (the actor is the tenant's owner, not a caller).
    pub(super) async fn load(deps: &Deps, id: Uuid, version: u64) -> ApiResult<TenantState> {
        let settings = deps.directory.resolve(id).await?.ok_or_else(|| ApiError::not_found("Application", id))?;
        let shard = deps
            .storage
            .shard(settings.shard())
            .ok_or_else(|| ApiError::unavailable("The application's region is not held here."))?;
        let scope = TenantScope::new(settings.clone(), shard.clone(), AuditActor::system());
        let keys = deps.keys.load(&scope).await?;
        let parts = deps.parts.load(&scope).await?;
        Ok(TenantState::new(version, settings, keys, parts))
    }

    /// After a committed change: this node's copies go, the other nodes
    /// hear of it on the bus, and the new state is loaded before the caller
    /// is answered (a failed reload leaves it to the next read).
    pub(super) async fn publish_change(deps: &Deps, id: Uuid, published: &Published) -> Option<Arc<TenantState>> {
        let version = version_now();
        published.store(None);
        deps.documents.invalidate(id).await;
        deps.bus.publish(Invalidation::Tenant { application_id: id, version }).await;
        match Self::load(deps, id, version).await {
            Ok(state) => {
                let state = Arc::new(state);
                published.store(Some(state.clone()));
                Some(state)
            }
            Err(err) => {
                tracing::warn!(application_id = %id, error = %err.message, "reloading a tenant's state failed");
                None
            }
        }
    }

    /// Runs one change (its transaction and audit row are the service's),
    /// then publishes it, in the actor's one-at-a-time order. The service's
    /// error becomes the message's `ApiError` here, through the one table.
    pub(super) fn change<R, E, F>(&mut self, work: F) -> AtomicResponse<Self, ApiResult<R>>
    where
        R: 'static,
        ApiError: From<E>,
        F: Future<Output = Result<R, E>> + 'static,
    {
        let (id, deps, published) = (self.id, self.deps.clone(), self.published.clone());
        AtomicResponse::new(Box::pin(
            async move {
                let result = work.await?;
                Self::publish_change(&deps, id, &published).await;
                Ok(result)
            }
            .into_actor(self),
        ))
    }
}
