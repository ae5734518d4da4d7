//! The RegionRouter actor: owner of the application directory and of the
//! route table. Directory entries are read through the cache layer (this
//! node's copy, then the one in Redis that any node loaded, then the
//! catalog, which only the router reads); a changed entry is published by
//! the router, and every node drops its copy when the bus says an
//! application changed. The route table (which nodes serve each region) is
//! kept by the router's heartbeat ([`super::membership`]) and read by the
//! forwarding path ([`super::forward`]).
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use actix::prelude::*;
use sea_orm::DbErr;
use tokio::sync::{oneshot, Notify};
use uuid::Uuid;

use crate::{
    application::{Tenant, TenantSnapshot},
    cache::{
        bus::{Bus, Invalidation},
        layer::ReadThrough,
        redis::SharedRedis,
    },
    error::{ApiError, ApiResult},
    region::{
        membership::{Membership, HEARTBEAT},
        route_table::RouteTable,
        Shard,
    },
    storage::{catalog, Db, Storage},
};

/// How long a node trusts its own copy of an entry when no invalidation can
/// reach it (without Redis): the bound on how stale another node's view of
/// a change can be then.
pub(super) const ENTRY_TTL: Duration = Duration::from_secs(5);
/// The copy in Redis; a change replaces it at once.
const SHARED_TTL: Duration = Duration::from_secs(60);

type Entries = ReadThrough<Option<Tenant>>;

pub struct RegionRouter {
    catalog: Db,
    entries: Entries,
    routes: RouteTable,
    /// Taken by the heartbeat when the router starts (none without Redis).
    membership: Option<Membership>,
    bus: Bus,
    /// Wakes the heartbeat early: another node joined or left.
    refresh: Arc<Notify>,
    /// Tells the heartbeat to leave; it answers once this node is out of
    /// the table in Redis.
    leave: Option<oneshot::Sender<oneshot::Sender<()>>>,
}

impl Actor for RegionRouter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(membership) = self.membership.take() {
            let (leave, asked) = oneshot::channel();
            self.leave = Some(leave);
            let heartbeat =
                keep_membership(membership, self.routes.clone(), self.bus.clone(), self.refresh.clone(), asked);
            ctx.spawn(heartbeat.into_actor(self));
        }
    }
}

/// Every [`HEARTBEAT`] (or at once when the bus says the nodes changed):
/// announce this node, read the others, publish the route table. Until
/// told to leave.
async fn keep_membership(
    membership: Membership,
    routes: RouteTable,
    bus: Bus,
    refresh: Arc<Notify>,
    mut leave: oneshot::Receiver<oneshot::Sender<()>>,
) {
    let mut joined = false;
    loop {
        if let Some(nodes) = membership.beat().await {
            routes.publish(&nodes);
            if !joined {
                // The others take this node's share at once, not at their next beat.
                bus.publish(Invalidation::Nodes).await;
                joined = true;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(HEARTBEAT) => {}
            _ = refresh.notified() => {}
            asked = &mut leave => {
                membership.leave().await;
                bus.publish(Invalidation::Nodes).await;
                if let Ok(done) = asked {
                    let _ = done.send(());
                }
                return;
            }
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Leave;

impl Handler<Leave> for RegionRouter {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Leave, _: &mut Context<Self>) -> Self::Result {
        let leave = self.leave.take();
        Box::pin(async move {
            let Some(leave) = leave else { return };
            let (done, left) = oneshot::channel();
            if leave.send(done).is_ok() {
                let _ = left.await;
            }
        })
    }
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
        let catalog = self.catalog.clone();
        Box::pin(async move {
            match catalog::find_application(&catalog, id).await? {
                Some(row) => Ok(Some(TenantSnapshot::from_model(row).map_err(DbErr::Custom)?.into())),
                None => Ok(None),
            }
        })
    }
}

impl Handler<Publish> for RegionRouter {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, Publish(tenant): Publish, _: &mut Context<Self>) -> Self::Result {
        let entries = self.entries.clone();
        Box::pin(async move { entries.put(tenant.id, Some(tenant)).await })
    }
}

/// What [`Directory::serving`] found.
pub enum Serving {
    Here(Tenant),
    /// The application was deleted.
    Gone,
    /// Another database serves it and it is not moving: the row is a
    /// leftover (of a move's old region until it is cleaned, or of a
    /// rolled-back copy until the next copy there removes it).
    Elsewhere,
    /// It is moving, or cannot be read this moment: look again soon.
    NotNow,
}

/// The handlers' view of the directory.
#[derive(Clone)]
pub struct Directory {
    entries: Entries,
    router: Addr<RegionRouter>,
    routes: RouteTable,
    announced: bool,
    leaving: Arc<AtomicBool>,
}

impl Directory {
    /// Starts the router on the current arbiter and returns its handle.
    /// With `membership` (Redis configured), the router keeps the route
    /// table from the nodes' heartbeats; `routes` starts from `node.peers`.
    pub fn start(
        catalog: Db,
        redis: Option<SharedRedis>,
        bus: &Bus,
        routes: RouteTable,
        membership: Option<Membership>,
    ) -> Directory {
        let entries = ReadThrough::new("directory", redis, ENTRY_TTL, SHARED_TTL);
        let announced = membership.as_ref().is_some_and(Membership::announces);
        let refresh = Arc::new(Notify::new());
        let heard = refresh.clone();
        bus.listen(move |invalidation| {
            if *invalidation == Invalidation::Nodes {
                heard.notify_one();
            }
        });
        let router = RegionRouter {
            catalog,
            entries: entries.clone(),
            routes: routes.clone(),
            membership,
            bus: bus.clone(),
            refresh,
            leave: None,
        }
        .start();
        Directory { entries, router, routes, announced, leaving: Arc::default() }
    }

    /// Which nodes serve each region (the router's published table).
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// Takes this node out of the route table (on SIGTERM, before it stops
    /// answering): `true` when it had announced itself, so the others may
    /// still be sending it requests for a moment.
    pub async fn leave(&self) -> bool {
        self.leaving.store(true, Ordering::Release);
        let _ = self.router.send(Leave).await;
        self.announced
    }

    /// Whether [`Self::leave`] was called: readiness fails from then on.
    pub fn is_leaving(&self) -> bool {
        self.leaving.load(Ordering::Acquire)
    }

    /// The application `id`: this node's copy, Redis's, or (once, however
    /// many ask at the same moment) the catalog's.
    pub async fn resolve(&self, id: Uuid) -> ApiResult<Option<Tenant>> {
        let load = || async {
            match self.router.send(Load(id)).await {
                Ok(loaded) => loaded.map_err(|err| ApiError::from(&err)),
                Err(err) => Err(ApiError::internal_error(&err)),
            }
        };
        self.entries.get_with(id, load).await.map_err(|err| (*err).clone())
    }

    /// Whether a background worker of `shard`'s database may act on the
    /// application's queued rows now: not while it moves (its rows are
    /// being copied), nor once another database serves it.
    pub async fn serving(&self, id: Uuid, shard: Shard, storage: &Storage) -> Serving {
        match self.resolve(id).await {
            Ok(Some(tenant)) if tenant.moving_to.is_none() && storage.same_database(tenant.shard(), shard) => {
                Serving::Here(tenant)
            }
            Ok(Some(tenant)) if tenant.moving_to.is_none() => Serving::Elsewhere,
            Ok(None) => Serving::Gone,
            _ => Serving::NotNow,
        }
    }

    /// Reads the application's entry from the catalog afresh and publishes
    /// it (after a region move's step changed it there).
    pub async fn reload(&self, id: Uuid) -> ApiResult<Option<Tenant>> {
        let loaded = match self.router.send(Load(id)).await {
            Ok(loaded) => loaded.map_err(|err| ApiError::from(&err))?,
            Err(err) => return Err(ApiError::internal_error(&err)),
        };
        if let Some(tenant) = &loaded {
            self.publish(tenant.clone()).await;
        }
        Ok(loaded)
    }

    /// Drops entries another node changed (and all of them after the bus
    /// reconnects), so a change arrives in milliseconds, not at the TTL.
    pub fn listen(&self, bus: &Bus) {
        let entries = self.entries.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::Tenant { application_id, .. } => entries.invalidate_local(application_id),
            Invalidation::All => entries.invalidate_all_local(),
            _ => {}
        });
    }

    /// Publishes a changed application (here and in Redis); done before the
    /// change's bus message and its answer.
    pub async fn publish(&self, tenant: Tenant) {
        if self.router.send(Publish(tenant.clone())).await.is_err() {
            self.entries.put(tenant.id, Some(tenant)).await;
        }
    }
}
