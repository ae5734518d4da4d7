//! How a tenant actor handles each message.
use std::sync::Arc;

use actix::prelude::*;
use entity::{feature, hook, messaging_provider, oauth_provider, plan, sod_policy};

use super::{
    actor::TenantActor,
    messages::*,
    state::{version_now, TenantState},
    Tenant,
};
use crate::{
    error::ApiResult,
    region::{moves::Mover, Region},
    service::{applications, entitlements::definitions, sod},
    tokens::keys::Rotation,
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
                    Some(kid) => s.keys.public(kid).is_some() || !s.keys.may_reload_for(kid),
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

impl Handler<UpdateSettings> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Tenant>>;

    fn handle(&mut self, msg: UpdateSettings, _: &mut Context<Self>) -> Self::Result {
        let (id, deps, published) = (self.id, self.deps.clone(), self.published.clone());
        AtomicResponse::new(Box::pin(
            async move {
                let tenant = applications::update_settings(&deps.storage, id, msg.patch, msg.scope.actor()).await?;
                // Before the bus message, so the nodes that drop their copy read this one.
                deps.directory.publish(tenant.clone()).await;
                TenantActor::publish_change(&deps, id, &published).await;
                Ok(tenant)
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
            lease: self.deps.move_lease,
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
    type Result = AtomicResponse<Self, ApiResult<Option<Region>>>;

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
                if let Some(state) = published.load_full().filter(|s| s.keys.current().is_some()) {
                    return Ok(state);
                }
                let system = msg.scope.acting_as(crate::audit::Actor::system());
                let created = deps.keys.create_first(&system).await?;
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

impl Handler<RotateSigningKey> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Rotation>>;

    fn handle(&mut self, msg: RotateSigningKey, _: &mut Context<Self>) -> Self::Result {
        let keys = self.deps.keys.clone();
        self.change(async move {
            if msg.immediate {
                keys.rotate_immediately(&msg.scope).await
            } else {
                keys.rotate(&msg.scope).await
            }
        })
    }
}

impl Handler<CreateHook> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<(hook::Model, String)>>;

    fn handle(&mut self, msg: CreateHook, _: &mut Context<Self>) -> Self::Result {
        let deps = self.deps.clone();
        self.change(
            async move { crate::service::hooks::create(&msg.scope, &deps.master_key, msg.new, msg.limit).await },
        )
    }
}

impl Handler<UpdateHook> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<hook::Model>>;

    fn handle(&mut self, msg: UpdateHook, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { crate::service::hooks::update(&msg.scope, msg.id, msg.patch).await })
    }
}

impl Handler<DeleteHook> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<()>>;

    fn handle(&mut self, msg: DeleteHook, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { crate::service::hooks::delete(&msg.scope, msg.id).await })
    }
}

impl Handler<UpsertMessagingProvider> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<messaging_provider::Model>>;

    fn handle(&mut self, msg: UpsertMessagingProvider, _: &mut Context<Self>) -> Self::Result {
        let deps = self.deps.clone();
        self.change(async move { crate::service::messaging::upsert(&msg.scope, &deps.master_key, msg.update).await })
    }
}

impl Handler<RecordMessagingOutcome> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Option<messaging_provider::Model>>>;

    fn handle(&mut self, msg: RecordMessagingOutcome, _: &mut Context<Self>) -> Self::Result {
        self.change(async move {
            crate::service::messaging::record_outcome(
                &msg.scope,
                msg.provider_id,
                msg.settings_at,
                msg.outcome,
                msg.test,
            )
            .await
        })
    }
}

impl Handler<UpsertOAuthProvider> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<oauth_provider::Model>>;

    fn handle(&mut self, msg: UpsertOAuthProvider, _: &mut Context<Self>) -> Self::Result {
        let deps = self.deps.clone();
        self.change(
            async move { crate::service::oauth_providers::upsert(&msg.scope, &deps.master_key, msg.update).await },
        )
    }
}

impl Handler<CreateSodPolicy> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<sod_policy::Model>>;

    fn handle(&mut self, msg: CreateSodPolicy, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { sod::create(&msg.scope, msg.input, msg.limit).await })
    }
}

impl Handler<UpdateSodPolicy> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<sod_policy::Model>>;

    fn handle(&mut self, msg: UpdateSodPolicy, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { sod::update(&msg.scope, msg.id, msg.input).await })
    }
}

impl Handler<DeleteSodPolicy> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<()>>;

    fn handle(&mut self, msg: DeleteSodPolicy, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { sod::delete(&msg.scope, msg.id).await })
    }
}

impl Handler<PutFeature> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<feature::Model>>;

    fn handle(&mut self, msg: PutFeature, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { definitions::put_feature(&msg.scope, &msg.key, msg.input, msg.limit).await })
    }
}

impl Handler<DeleteFeature> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<()>>;

    fn handle(&mut self, msg: DeleteFeature, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { definitions::delete_feature(&msg.scope, &msg.key).await })
    }
}

impl Handler<PutPlan> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<plan::Model>>;

    fn handle(&mut self, msg: PutPlan, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { definitions::put_plan(&msg.scope, &msg.key, &msg.name, msg.grants, msg.limit).await })
    }
}

impl Handler<DeletePlan> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<()>>;

    fn handle(&mut self, msg: DeletePlan, _: &mut Context<Self>) -> Self::Result {
        self.change(async move { definitions::delete_plan(&msg.scope, &msg.key).await })
    }
}
