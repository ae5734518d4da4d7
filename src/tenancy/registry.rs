//! The registry of running tenant actors: one per application, started on
//! first use and removed by the actor itself when it stops for idleness.
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use actix::prelude::*;
use uuid::Uuid;

use super::{
    actor::{TenantActor, UpdateSettings},
    Tenant,
};
use crate::{
    audit::Actor as AuditActor,
    cache::bus::Bus,
    error::{ApiError, ApiResult},
    region::router::Directory,
    service::applications::SettingsPatch,
    storage::Storage,
};

#[derive(Clone)]
pub struct TenantRegistry {
    actors: Arc<Mutex<HashMap<Uuid, Addr<TenantActor>>>>,
    storage: Arc<Storage>,
    directory: Directory,
    bus: Bus,
}

impl TenantRegistry {
    pub fn new(storage: Arc<Storage>, directory: Directory, bus: Bus) -> Self {
        Self { actors: Arc::default(), storage, directory, bus }
    }

    fn actor(&self, tenant: &Tenant) -> Addr<TenantActor> {
        let mut actors = self.actors.lock().expect("registry lock");
        actors
            .entry(tenant.id)
            .or_insert_with(|| {
                let (storage, directory, bus) = (self.storage.clone(), self.directory.clone(), self.bus.clone());
                TenantActor::new(tenant.id, storage, directory, bus, self.actors.clone()).start()
            })
            .clone()
    }

    /// Changes the application's settings through its actor, so that
    /// tenant-wide changes happen one at a time.
    pub async fn update_settings(&self, tenant: &Tenant, patch: SettingsPatch, actor: AuditActor) -> ApiResult<Tenant> {
        let message = UpdateSettings { patch, actor };
        match self.actor(tenant).send(message.clone()).await {
            Ok(result) => result,
            // The actor stopped for idleness between lookup and send: start a new one.
            Err(MailboxError::Closed) => {
                self.actors.lock().expect("registry lock").remove(&tenant.id);
                self.actor(tenant).send(message).await.map_err(ApiError::internal)?
            }
            Err(err) => Err(ApiError::internal(err)),
        }
    }
}
