//! Region moves (operation 17): an application's data moves from one
//! regional database to another while its requests are held. Each step is
//! journaled in the catalog ([`move_journal`]) before the next starts, and
//! redone whole if the process dies in it:
//!
//! 1. `pending`: the move is journaled and the directory marks the
//!    application as moving, so every node answers its requests 503
//!    `region_migration_in_progress`; the copy starts at once.
//! 2. `copied`: under the old region's chain-head lock (no audited write of
//!    the application can run there), the old region is fenced (a write of
//!    the application that began before the move and commits after the
//!    copy is refused with 503 there, not acknowledged and lost) and every
//!    row of every tenant table is copied into the new region in one
//!    transaction there, which also removes what an interrupted copy left,
//!    lifts the fence in the copy, and appends the move's audit row to the
//!    chain it continues.
//! 3. `switched`: the directory names the new region (one catalog
//!    transaction with the journal), every node drops its copy, requests
//!    flow to the new region.
//! 4. `cleaned`: after a settling pause (reads already inside finish, other
//!    nodes hear of it), the application's rows are deleted from the old
//!    region.
//!
//! A lease in the journal (renewed while the move runs) keeps two nodes from
//! running one application's move; a node resumes a move whose lease has
//! expired ([`resume_stalled`]). Moves run on a node that holds the old
//! region and can reach the new one (held, or its `database_url` configured).
use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use entity::region_move;
use serde_json::json;
use uuid::Uuid;

use super::{router::Directory, Region, Shard};
use crate::{
    audit::{Actor, ActorKind},
    cache::bus::{Bus, Invalidation},
    error::{ApiError, ApiResult, Code, MOVE_RETRY_AFTER_SECONDS},
    events::catalog::EventType,
    storage::{
        delivery_queue,
        move_journal::{self, Advanced, Begun, Step},
        tenant_tables, Db, Storage, TenantConn, TenantScope,
    },
    tenancy::state::version_now,
};

/// What a move needs of its node.
#[derive(Clone)]
pub struct Mover {
    pub storage: Arc<Storage>,
    pub directory: Directory,
    pub bus: Bus,
    pub policy: MovePolicy,
}

/// How this node runs moves.
#[derive(Clone, Copy, Debug)]
pub struct MovePolicy {
    /// How long a claim on a move lasts unrenewed (renewed every third of it).
    pub lease: Duration,
    /// The process that ran on this node's data directory before this one
    /// and is gone (`region::predecessor`): its claims are this node's to
    /// take at once.
    pub predecessor: Option<Uuid>,
    /// How long after its start a move may still be copying; past it the
    /// move is rolled back (`node.move_copy_timeout_seconds`).
    pub copy_within: Duration,
    /// The mail worker's lease: how long a copy waits at most for mail in
    /// flight to settle.
    pub sends_settle_within: Duration,
}

/// A move in progress: the journal's row with its two regions parsed.
struct Journaled {
    application_id: Uuid,
    from: Shard,
    to: Shard,
    step: Step,
    actor: Actor,
    started_at: DateTime<Utc>,
}

impl Journaled {
    fn parse(row: &region_move::Model) -> ApiResult<Journaled> {
        let bad = || ApiError::internal(format!("region move of {} is journaled unreadably", row.application_id));
        let (from, to) = move_journal::shards_of(row).ok_or_else(bad)?;
        Ok(Journaled {
            application_id: row.application_id,
            from,
            to,
            step: Step::parse(&row.step).ok_or_else(bad)?,
            actor: Actor {
                kind: ActorKind::parse(&row.actor_kind).unwrap_or(ActorKind::System),
                id: row.actor_id.clone(),
            },
            started_at: row.started_at,
        })
    }
}

fn cancelled() -> ApiError {
    ApiError::new(Code::Conflict, "An operator cancelled the move (`gatehouse moves cancel`).")
}

fn lease_lost() -> ApiError {
    ApiError::new(Code::RegionMigrationInProgress, "Another node took over the region move.")
        .with_retry_after(MOVE_RETRY_AFTER_SECONDS)
}

/// A move's audit row: `data` with its two regions (`from`, `to`) and the
/// shards within them (`from_shard`, `to_shard`).
fn audit_data(journaled: &Journaled, mut data: serde_json::Value) -> serde_json::Value {
    let (from, to) = (journaled.from, journaled.to);
    data["from"] = json!(from.region.as_str());
    data["to"] = json!(to.region.as_str());
    data["from_shard"] = json!(from.name.as_str());
    data["to_shard"] = json!(to.name.as_str());
    data
}

/// The answer of a move that was rolled back: the application is where it was.
fn rolled_back(journaled: &Journaled, why: String) -> ApiError {
    ApiError::unavailable(format!(
        "The move to `{}` was rolled back ({why}); the application serves from `{}` as before.",
        journaled.to, journaled.from
    ))
}

/// How long a fenced chain may sit in a database that neither serves its
/// application nor is its move's target before its rows count as left over:
/// far longer than between a copy ahead and its move's start, or a switch
/// and its clean.
const LEFTOVER_AFTER: chrono::Duration = chrono::Duration::seconds(60);

/// Settles every fenced chain head in this node's databases (the
/// stalled-move scan runs this every few seconds):
/// - an application the directory places in that database and that is not
///   moving has its fence lifted: a move cancelled after its copy, whose
///   old region could not be written at its roll-back, left it
///   (`record_roll_back` lifts it otherwise);
/// - an application that neither lives nor is moving there (or no longer
///   exists) has its rows there deleted once the fence is
///   [`LEFTOVER_AFTER`] old: a chain copied ahead of a move that never
///   began, or an old region a clean did not reach. Its data stays in the
///   region it is pinned to.
pub async fn settle_fenced_chains(storage: &Storage, directory: &Directory) {
    for (shard, db) in storage.held() {
        let fenced = match crate::audit::fenced_applications(&db.conn).await {
            Ok(fenced) => fenced,
            Err(err) => {
                tracing::warn!(%shard, error = %err, "reading fenced audit chains failed");
                continue;
            }
        };
        for (id, since) in fenced {
            let here = |s: Shard| storage.same_database(s, shard);
            let settled = match directory.reload(id).await {
                Ok(Some(t)) if t.moving_to.is_none() && here(t.shard()) => {
                    crate::audit::fence(&db.conn, id, None).await.map(|()| "a stale region-move fence was lifted")
                }
                Ok(found) if crate::clock::now() - since > LEFTOVER_AFTER => {
                    if found.is_some_and(|t| here(t.shard()) || t.moving_to_shard().is_some_and(here)) {
                        continue;
                    }
                    delete_application(&db, id).await.map(|()| "an application's leftover rows were deleted")
                }
                _ => continue,
            };
            match settled {
                Ok(what) => tracing::warn!(application_id = %id, %shard, "{what}"),
                Err(err) => {
                    tracing::warn!(application_id = %id, %shard, error = %err, "settling a fenced chain failed")
                }
            }
        }
    }
}

/// Deletes every row of the application from `db`, in one transaction.
async fn delete_application(db: &Db, id: Uuid) -> Result<(), sea_orm::DbErr> {
    let txn = db.begin_write().await?;
    tenant_tables::delete_all(&*txn, id).await?;
    txn.commit().await
}

pub fn in_progress() -> ApiError {
    ApiError::moving()
}

/// The least a move resumed past its deadline has to copy in: a try long
/// enough for a large application (bounded by the whole bound).
const MIN_TRY: chrono::Duration = chrono::Duration::seconds(30);

/// Copies run one at a time on a node: two moves in opposite directions on
/// SQLite would each hold one file's write lock and wait for the other's.
static COPYING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Mover {
    fn lease_until(&self) -> DateTime<Utc> {
        crate::clock::now() + chrono::Duration::from_std(self.policy.lease).unwrap_or(chrono::Duration::seconds(15))
    }

    /// Moves the caller's application to region `to`, onto the shard there
    /// that placement picks (its move's target while one is unfinished),
    /// and answers once it is there (the same region: nothing to do). An
    /// unfinished move of the application is resumed here if its lease is
    /// free, else 503.
    pub async fn start(&self, scope: &TenantScope, to: Region) -> ApiResult<Region> {
        let tenant = scope.tenant();
        if tenant.region == to && tenant.moving_to.is_none() {
            return Ok(to);
        }
        let target = match tenant.moving_to_shard() {
            Some(target) if target.region == to => target,
            _ => crate::storage::shards::place(&self.storage, to).await?,
        };
        self.start_to(scope, target).await.map(|shard| shard.region)
    }

    /// Moves the caller's application to shard `to` (of its region or
    /// another) and answers once it is there.
    async fn start_to(&self, scope: &TenantScope, to: Shard) -> ApiResult<Shard> {
        let tenant = scope.tenant();
        let from = tenant.shard();
        if !self.storage.holds(from.region) {
            return Err(ApiError::unavailable(format!("Region `{}` is not held by this node.", from.region)));
        }
        self.database(to).await?;
        if self.storage.share_a_database(from, to) {
            return Err(ApiError::unavailable(format!(
                "`{from}` and `{to}` are configured with one database: there is nothing to move."
            )));
        }
        if tenant.moving_to.is_none() {
            self.copy_audit_ahead(tenant.id, from, to).await;
        }
        let lease = (self.bus.node(), self.lease_until());
        let journaled =
            match move_journal::begin(&self.storage.catalog, tenant.id, (from, to), scope.actor(), lease).await? {
                Begun::Started(row) => row,
                Begun::Unfinished(running) => {
                    // Another move of it began meanwhile: what this one
                    // copied ahead must not stay where the application is
                    // not going (nor is: its rows there are its own).
                    let ends = move_journal::shards_of(&running);
                    if !ends.is_some_and(|(from, target)| [from, target].contains(&to)) {
                        self.remove_audit_ahead(tenant.id, to).await;
                    }
                    return self.resume(tenant.id).await?.ok_or_else(in_progress);
                }
                Begun::NotInRegion => return Err(in_progress()),
            };
        tracing::info!(application_id = %tenant.id, %from, %to, "region move started");
        crate::failpoint::hit("region_move.pending");
        self.run(Journaled::parse(&journaled)?).await
    }

    /// Copies the application's audit rows so far to `to` while it still
    /// serves, so that the copy under the fence (the 503 window) takes only
    /// those appended since. Best effort: that copy takes whatever this did
    /// not.
    async fn copy_audit_ahead(&self, id: Uuid, from: Shard, to: Shard) {
        let copied = async {
            let (source, target) = (self.database(from).await?, self.database(to).await?);
            let txn = target.begin_write().await?;
            let copied = tenant_tables::copy_audit_ahead(&source.conn, &*txn, id).await?;
            crate::audit::mark_copied_ahead(&*txn, id).await?;
            txn.commit().await?;
            Ok::<_, ApiError>(copied)
        };
        match copied.await {
            Ok(copied) => tracing::info!(application_id = %id, copied, %to, "audit rows copied ahead of a move"),
            Err(err) => tracing::warn!(application_id = %id, error = %err.message, "copying audit rows ahead failed"),
        }
    }

    /// Removes what [`Self::copy_audit_ahead`] wrote to `to` for a move that
    /// did not begin.
    async fn remove_audit_ahead(&self, id: Uuid, to: Shard) {
        let removed = async { Ok::<_, ApiError>(delete_application(&self.database(to).await?, id).await?) };
        if let Err(err) = removed.await {
            tracing::warn!(application_id = %id, %to, error = %err.message, "removing audit rows copied ahead failed");
        }
    }

    /// Runs the application's unfinished move from its journaled step if
    /// this node can take its lease; `None`: another node runs it.
    pub async fn resume(&self, application_id: Uuid) -> ApiResult<Option<Shard>> {
        let Some(row) = move_journal::find(&self.storage.catalog, application_id).await? else {
            return Ok(None);
        };
        if !self.storage.holds(Journaled::parse(&row)?.from.region) {
            return Ok(None); // a node of the old region runs it
        }
        let (catalog, owner, until) = (&self.storage.catalog, self.bus.node(), self.lease_until());
        let Some(row) =
            move_journal::take_lease(catalog, application_id, owner, until, self.policy.predecessor).await?
        else {
            return Ok(None);
        };
        tracing::info!(%application_id, step = row.step, "resuming a region move");
        self.run(Journaled::parse(&row)?).await.map(Some)
    }

    async fn run(&self, mut journaled: Journaled) -> ApiResult<Shard> {
        let renewal = self.renew_lease_while_running(journaled.application_id);
        let finished = self.steps(&mut journaled).await;
        renewal.abort();
        finished
    }

    async fn steps(&self, journaled: &mut Journaled) -> ApiResult<Shard> {
        let id = journaled.application_id;
        loop {
            let next = match journaled.step {
                Step::Pending => {
                    // Again after a crash: the mark may never have been published.
                    self.publish(id).await?;
                    let copied = match self.copy_within_bound(journaled).await {
                        Ok(copied) => copied,
                        Err(given_up) => return Err(self.roll_back(journaled, given_up).await),
                    };
                    self.advance(id, (Step::Pending, Step::Copied), Some(copied)).await?
                }
                Step::Copied => {
                    let owner = self.bus.node();
                    match move_journal::advance(&self.storage.catalog, id, owner, (Step::Copied, Step::Switched), None)
                        .await?
                    {
                        Advanced::Done => Step::Switched,
                        Advanced::Cancelled => return Err(self.roll_back(journaled, cancelled()).await),
                        Advanced::LeaseLost => return Err(lease_lost()),
                    }
                }
                Step::Switched => {
                    // Again after a crash: every node must drop the `moving` entry.
                    self.publish(id).await?;
                    // The application serves from its new region meanwhile.
                    tokio::time::sleep(self.settling_time()).await;
                    let source = self.database(journaled.from).await?;
                    let txn = source.begin_write().await?;
                    let deleted = tenant_tables::delete_all(&*txn, id).await?;
                    txn.commit().await?;
                    tracing::info!(application_id = %id, deleted, shard = %journaled.from, "old shard cleaned");
                    self.advance(id, (Step::Switched, Step::Cleaned), None).await?
                }
                Step::Cleaned => return Ok(journaled.to),
                Step::RolledBack => return Err(rolled_back(journaled, "it was rolled back".into())),
            };
            crate::failpoint::hit(&format!("region_move.{}", next.as_str()));
            journaled.step = next;
        }
    }

    /// The copy: the old region's chain head and queued rows locked for its
    /// duration, the new region written in one transaction. Mail in a
    /// worker's hands (sent, not yet settled) is waited for, so the new
    /// region does not send it again.
    async fn copy(&self, journaled: &Journaled) -> ApiResult<u64> {
        let _one_at_a_time = COPYING.lock().await;
        let (source, target) = (self.database(journaled.from).await?, self.database(journaled.to).await?);
        let tenant = self
            .directory
            .reload(journaled.application_id)
            .await?
            .ok_or_else(|| ApiError::not_found("Application", journaled.application_id))?;
        let held = TenantScope::new(tenant.clone(), source, Actor::system());
        let waited = std::time::Instant::now();
        let read = loop {
            let mut read = held.begin().await?;
            read.lock_tenant().await?;
            let in_flight = delivery_queue::any_in_flight(read.conn(), journaled.application_id).await?;
            if !in_flight {
                break read;
            }
            if waited.elapsed() > self.policy.sends_settle_within {
                // Past the mail worker's lease: no send taken before the
                // move can still be in hands (a lease that lapsed is not in
                // flight), so this one was taken by a node that has not heard
                // of the move: copied as it is, the new region sends it once
                // the lease lapses (at least once, as after a crash).
                tracing::warn!(application_id = %journaled.application_id, "a send still in flight is copied with its lease");
                break read;
            }
            drop(read); // rolled back: the worker settles in its own transaction
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // From this commit on no write of the application commits in the
        // old region: one that began before the move and writes after the
        // copy is refused (503), not acknowledged there and then lost.
        crate::audit::fence(read.conn(), journaled.application_id, Some(crate::clock::now())).await?;
        let to = journaled.to;
        let mut write = TenantScope::new(tenant, target, journaled.actor.clone()).begin().await.map_err(|err| {
            tracing::warn!(error = %crate::error::cause_chain(&err), shard = %to, "the new shard's database refused the copy");
            ApiError::unavailable(format!("`{to}`'s database did not accept a connection."))
        })?;
        let copied =
            tenant_tables::copy_all_onto_audit_prefix(read.conn(), write.conn(), journaled.application_id).await?;
        crate::audit::fence(write.conn(), journaled.application_id, None).await?;
        let data = audit_data(journaled, json!({"rows": copied}));
        write.audit(EventType::ApplicationRegionChanged, Some(journaled.application_id), data).await?;
        write.commit().await?;
        read.commit().await?;
        tracing::info!(application_id = %journaled.application_id, copied, "application copied to its new region");
        Ok(copied)
    }

    /// Records the next step (other than the switch, which a cancel can stop).
    async fn advance(&self, id: Uuid, steps: (Step, Step), rows: Option<u64>) -> ApiResult<Step> {
        match move_journal::advance(&self.storage.catalog, id, self.bus.node(), steps, rows).await? {
            Advanced::Done => Ok(steps.1),
            Advanced::Cancelled | Advanced::LeaseLost => Err(lease_lost()),
        }
    }

    /// Copies, trying again each second after a failure, until the move's
    /// bound (from its start, so a resumed move keeps its first deadline,
    /// though a move resumed past it still gets one try of the whole bound)
    /// or an operator's cancel; then the error it gives up with.
    async fn copy_within_bound(&self, journaled: &Journaled) -> ApiResult<u64> {
        let bound = chrono::Duration::from_std(self.policy.copy_within).unwrap_or(chrono::Duration::seconds(60));
        let deadline = (journaled.started_at + bound).max(crate::clock::now() + bound.min(MIN_TRY));
        loop {
            match move_journal::cancel_requested(&self.storage.catalog, journaled.application_id).await {
                Ok(true) => return Err(cancelled()),
                Ok(false) => {}
                // Read again at the next try; the copy's own errors decide.
                Err(err) => {
                    tracing::warn!(application_id = %journaled.application_id, error = %err, "reading a move's cancel flag failed")
                }
            }
            let left = (deadline - crate::clock::now()).to_std().unwrap_or_default().max(Duration::from_secs(1));
            let failed = match tokio::time::timeout(left, self.copy(journaled)).await {
                Ok(Ok(copied)) => return Ok(copied),
                Ok(Err(err)) => err,
                Err(_) => ApiError::unavailable(format!(
                    "The copy did not finish within the move's {} s.",
                    self.policy.copy_within.as_secs()
                )),
            };
            tracing::warn!(application_id = %journaled.application_id, error = %failed.message, "a region move's copy failed");
            if crate::clock::now() >= deadline {
                return Err(failed);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Gives the move up before its switch: the journal ends `rolled_back`
    /// and the application serves from its old region again, what the copy
    /// wrote to the new region goes (if it can be reached: else the next
    /// copy there removes it first), and its chain says why. Answers the
    /// error to give the caller.
    async fn roll_back(&self, journaled: &Journaled, why: ApiError) -> ApiError {
        let id = journaled.application_id;
        // The journal first, under this node's lease: a node that lost the
        // lease must not delete the copy of the node that took it over.
        match move_journal::roll_back(&self.storage.catalog, id, self.bus.node()).await {
            Ok(true) => {}
            Ok(false) => return lease_lost(),
            Err(err) => return err.into(),
        }
        if let Err(err) = self.remove_copy(journaled).await {
            tracing::warn!(application_id = %id, error = %err.message, "a rolled-back move's copy could not be removed yet");
        }
        tracing::warn!(application_id = %id, from = %journaled.from, to = %journaled.to, reason = %why.message, "region move rolled back");
        if let Err(err) = self.record_roll_back(journaled, &why).await {
            tracing::warn!(application_id = %id, error = %err.message, "a rolled-back move's audit row could not be written");
        }
        if let Err(err) = self.publish(id).await {
            tracing::warn!(application_id = %id, error = %err.message, "a rolled-back move could not be published");
        }
        rolled_back(journaled, why.message)
    }

    async fn remove_copy(&self, journaled: &Journaled) -> ApiResult<()> {
        let target = self.database(journaled.to).await?;
        Ok(delete_application(&target, journaled.application_id).await?)
    }

    async fn record_roll_back(&self, journaled: &Journaled, why: &ApiError) -> ApiResult<()> {
        let tenant = self
            .directory
            .reload(journaled.application_id)
            .await?
            .ok_or_else(|| ApiError::not_found("Application", journaled.application_id))?;
        let scope = TenantScope::new(tenant, self.database(journaled.from).await?, Actor::system());
        let mut txn = scope.begin().await?;
        // A move cancelled after its copy had fenced the old region.
        crate::audit::fence(txn.conn(), journaled.application_id, None).await?;
        let data = audit_data(journaled, json!({"reason": why.message}));
        txn.audit(EventType::ApplicationRegionMoveRolledBack, Some(journaled.application_id), data).await?;
        txn.commit().await?;
        Ok(())
    }

    /// The directory's entry afresh, here and on every node.
    async fn publish(&self, id: Uuid) -> ApiResult<()> {
        self.directory.reload(id).await?;
        self.bus.publish(Invalidation::Tenant { application_id: id, version: version_now() }).await;
        Ok(())
    }

    /// How long the old region's rows stay after the switch: long enough for
    /// reads already past the directory on other nodes to finish and, when
    /// they cannot hear the bus, for their copies of the entry to expire.
    /// (Writes need no wait: the copy fenced the old region.)
    fn settling_time(&self) -> Duration {
        match self.bus.connected() {
            Some(false) => super::router::ENTRY_TTL + Duration::from_secs(1),
            _ => Duration::from_secs(1),
        }
    }

    async fn database(&self, shard: Shard) -> ApiResult<Db> {
        self.storage.database(shard).await?.ok_or_else(|| {
            let region = shard.region;
            ApiError::unavailable(format!(
                "`{shard}`'s database is not configured on this node (`regions.{region}.database_url`, or `gatehouse shards add`)."
            ))
        })
    }

    fn renew_lease_while_running(&self, id: Uuid) -> tokio::task::JoinHandle<()> {
        let mover = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(mover.policy.lease / 3).await;
                let (catalog, owner, until) = (&mover.storage.catalog, mover.bus.node(), mover.lease_until());
                if let Err(err) = move_journal::take_lease(catalog, id, owner, until, None).await {
                    tracing::warn!(application_id = %id, error = %err, "renewing a region move's lease failed");
                }
            }
        })
    }
}
