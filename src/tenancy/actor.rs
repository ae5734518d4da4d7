//! The tenant actor: the single writer of one application's tenant-wide
//! changes. Messages are handled one at a time (atomically), so two settings
//! changes never interleave; after each change the new snapshot is published
//! to the directory before the caller is answered.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use actix::prelude::*;
use uuid::Uuid;

use super::Tenant;
use crate::{
    audit::Actor as AuditActor,
    cache::bus::{Bus, Invalidation},
    error::ApiResult,
    region::router::Directory,
    service::applications::{self, SettingsPatch},
    storage::Storage,
};

const IDLE_AFTER: Duration = Duration::from_secs(300);

pub struct TenantActor {
    id: Uuid,
    storage: Arc<Storage>,
    directory: Directory,
    bus: Bus,
    registry: Arc<Mutex<HashMap<Uuid, Addr<TenantActor>>>>,
    last_active: Instant,
}

impl TenantActor {
    pub fn new(
        id: Uuid,
        storage: Arc<Storage>,
        directory: Directory,
        bus: Bus,
        registry: Arc<Mutex<HashMap<Uuid, Addr<TenantActor>>>>,
    ) -> Self {
        Self { id, storage, directory, bus, registry, last_active: Instant::now() }
    }
}

impl Actor for TenantActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(IDLE_AFTER / 5, |actor, ctx| {
            if actor.last_active.elapsed() >= IDLE_AFTER {
                actor.registry.lock().expect("registry lock").remove(&actor.id);
                ctx.stop();
            }
        });
    }
}

#[derive(Message, Clone)]
#[rtype(result = "ApiResult<Tenant>")]
pub struct UpdateSettings {
    pub patch: SettingsPatch,
    pub actor: AuditActor,
}

impl Handler<UpdateSettings> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<Tenant>>;

    fn handle(&mut self, msg: UpdateSettings, _: &mut Context<Self>) -> Self::Result {
        self.last_active = Instant::now();
        let (id, storage, directory, bus) = (self.id, self.storage.clone(), self.directory.clone(), self.bus.clone());
        AtomicResponse::new(Box::pin(
            async move {
                let tenant = applications::update_settings(&storage, id, msg.patch, &msg.actor).await?;
                // Every node drops its copy (this one's listeners run first),
                // then this node holds the new snapshot before answering.
                let version = tenant.updated_at.timestamp_micros() as u64;
                bus.publish(Invalidation::Tenant { application_id: id, version }).await;
                directory.publish(tenant.clone()).await;
                Ok(tenant)
            }
            .into_actor(self),
        ))
    }
}
