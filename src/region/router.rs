//! The RegionRouter actor: owner of the application directory. It loads
//! entries from the catalog and publishes them into a bounded cache that
//! request handlers read directly; only the router writes that cache.
use std::{sync::Arc, time::Duration};

use actix::prelude::*;
use moka::sync::Cache;
use sea_orm::DbErr;
use uuid::Uuid;

use crate::{
    cache::bus::{Bus, Invalidation},
    error::{ApiError, ApiResult},
    storage::{catalog, Db},
    tenancy::{Tenant, TenantSnapshot},
};

/// How long a directory entry is trusted before the catalog is read again:
/// the bound on how stale another node's view of a change can be.
const ENTRY_TTL: Duration = Duration::from_secs(5);

type Entries = Cache<Uuid, Option<Tenant>>;

pub struct RegionRouter {
    catalog: Db,
    entries: Entries,
}

impl Actor for RegionRouter {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "Result<Option<Tenant>, DbErr>")]
struct Load(Uuid);

#[derive(Message)]
#[rtype(result = "()")]
struct Publish(Tenant);

impl Handler<Load> for RegionRouter {
    type Result = ResponseFuture<Result<Option<Tenant>, DbErr>>;

    fn handle(&mut self, Load(id): Load, _: &mut Context<Self>) -> Self::Result {
        let (catalog, entries) = (self.catalog.clone(), self.entries.clone());
        Box::pin(async move {
            let row = catalog::find_application(&catalog, id).await?;
            let entry = match row {
                Some(row) => Some(Arc::new(TenantSnapshot::from_model(row).map_err(DbErr::Custom)?)),
                None => None,
            };
            entries.insert(id, entry.clone());
            Ok(entry)
        })
    }
}

impl Handler<Publish> for RegionRouter {
    type Result = ();

    fn handle(&mut self, Publish(tenant): Publish, _: &mut Context<Self>) {
        self.entries.insert(tenant.id, Some(tenant));
    }
}

/// The handlers' view of the directory.
#[derive(Clone)]
pub struct Directory {
    entries: Entries,
    router: Addr<RegionRouter>,
}

impl Directory {
    /// Starts the router on the current arbiter and returns its handle.
    pub fn start(catalog: Db) -> Directory {
        let entries: Entries = Cache::builder().max_capacity(100_000).time_to_live(ENTRY_TTL).build();
        let router = RegionRouter { catalog, entries: entries.clone() }.start();
        Directory { entries, router }
    }

    /// The application `id`, from the cache or (once) from the catalog.
    pub async fn resolve(&self, id: Uuid) -> ApiResult<Option<Tenant>> {
        if let Some(entry) = self.entries.get(&id) {
            return Ok(entry);
        }
        self.router.send(Load(id)).await.map_err(ApiError::internal)?.map_err(ApiError::from)
    }

    /// Drops entries another node changed (and all of them after the bus
    /// reconnects), so a change arrives in milliseconds, not at the TTL.
    pub fn listen(&self, bus: &Bus) {
        let entries = self.entries.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::Tenant { application_id, .. } => entries.invalidate(&application_id),
            Invalidation::All => entries.invalidate_all(),
            _ => {}
        });
    }

    /// Publishes a changed application; done before the change is answered.
    pub async fn publish(&self, tenant: Tenant) {
        if self.router.send(Publish(tenant.clone())).await.is_err() {
            self.entries.insert(tenant.id, Some(tenant));
        }
    }
}
