//! How a tenant actor handles each message.
use std::sync::Arc;

use actix::prelude::*;

use super::{
    actor::TenantActor,
    messages::*,
    state::{version_now, TenantState},
};
use crate::{
    error::ApiResult,
    region::{moves::Mover, Region, Shard},
};

impl Handler<Load> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Arc<TenantState>>>;

    fn handle(&mut self, msg: Load, _: &mut Context<Self>) -> Self::Result {
        let (id, deps, published) = (self.id, self.deps.clone(), self.published.clone());
        AtomicResponse::new(Box::pin(
            async move {
                // A load queued behind another may find its work done (for an
                // unknown `kid`: at most one load a second, or a newer `kid`).
                let done = |s: &Arc<TenantState>| match msg.unknown_kid {
                    Some(kid) => s.keys.published(kid).is_some() || !s.keys.may_reload_for(kid),
                    None => s.is_fresh(super::registry::fresh_for(&deps)),
                };
                if let Some(state) = published.load_full().filter(done) {
                    return Ok(state);
                }
                let state = Arc::new(TenantActor::load(&deps, id, version_now()).await?);
                published.store(Some(state.clone()));
                Ok(state)
            }
            .into_actor(self),
        ))
    }
}

impl TenantActor {
    fn mover(&self) -> Mover {
        Mover {
            storage: self.deps.storage.clone(),
            directory: self.deps.directory.clone(),
            bus: self.deps.bus.clone(),
            policy: self.deps.moves,
        }
    }
}

/// The move runs in the actor's one-at-a-time order: no other tenant-wide
/// change of the application interleaves with it on this node.
impl Handler<MoveRegion> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Region>>;

    fn handle(&mut self, msg: MoveRegion, _: &mut Context<Self>) -> Self::Result {
        let mover = self.mover();
        self.change(async move { mover.start(&msg.scope, msg.to).await })
    }
}

impl Handler<ResumeMove> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Option<Shard>>>;

    fn handle(&mut self, _: ResumeMove, _: &mut Context<Self>) -> Self::Result {
        let (mover, id) = (self.mover(), self.id);
        self.change(async move { mover.resume(id).await })
    }
}

impl Handler<EnsureSigningKey> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Arc<TenantState>>>;

    fn handle(&mut self, msg: EnsureSigningKey, _: &mut Context<Self>) -> Self::Result {
        let (id, deps, published) = (self.id, self.deps.clone(), self.published.clone());
        AtomicResponse::new(Box::pin(
            async move {
                let algorithm = msg.algorithm;
                if let Some(state) = published.load_full().filter(|s| s.keys.current_of(algorithm).is_some()) {
                    return Ok(state);
                }
                let system = msg.scope.acting_as(crate::audit::Actor::system());
                let created = deps.keys.create_first(&system, algorithm).await?;
                let published_now =
                    if created { TenantActor::publish_change(&deps, id, &published).await } else { None };
                match published_now {
                    Some(state) => Ok(state),
                    // Another node made it (or the reload failed): read it.
                    None => {
                        let state = Arc::new(TenantActor::load(&deps, id, version_now()).await?);
                        published.store(Some(state.clone()));
                        Ok(state)
                    }
                }
            }
            .into_actor(self),
        ))
    }
}
