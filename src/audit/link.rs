//! Group commit of the audit chain. A change commits its audit rows as
//! pending rows beside its other writes, without the chain's head: writers
//! of one application commit side by side (PostgreSQL flushes their commits
//! together) instead of in turn behind the head's row lock. Right after
//! its commit, the change links what is pending: one transaction takes the
//! head, chains every pending row of the application in order, writes them
//! and their webhook messages, and deletes them from pending. Changes that
//! committed meanwhile find their rows linked by it and return, so one head
//! update commits many rows.
//!
//! A pending row is part of its change's commit: an acknowledged change
//! never loses its audit row. One whose linking did not happen (the process
//! died, the database failed at that moment) is linked by the sweep
//! ([`leftovers`] and [`link_in_turn`], with the stalled-move scan); one fenced by a region
//! move is copied with the application and linked in its new region.
//!
//! SQLite has one writer, whose queued changes already share a transaction
//! and its flush (`storage::write_txn`): there the flush itself links the
//! group's applications, in that transaction ([`before_flush`]), so the
//! rows commit chained and a group of changes moves each head once.
use std::{
    collections::{BTreeSet, HashMap},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, LazyLock, Weak,
    },
    time::Duration,
};

use entity::{audit_event, audit_pending};
use sea_orm::{
    sea_query::LockType, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, TransactionTrait,
};
use tokio::sync::Mutex;
use uuid::Uuid;

use crate::storage::Db;

/// Pending rows one linking transaction chains at most.
const BATCH: u64 = 512;

/// One application's linking in one database on this node: one run at a
/// time, counted, so that a change whose commit a later run saw needs
/// neither a run of its own nor a query.
#[derive(Default)]
struct Turn {
    /// Runs begun so far.
    begun: AtomicU64,
    /// The last run that linked everything pending when it read; held
    /// while a run is in progress.
    drained: Mutex<u64>,
}

type Turns = std::sync::Mutex<HashMap<(&'static str, Uuid), Weak<Turn>>>;

static TURNS: LazyLock<Turns> = LazyLock::new(Turns::default);

fn turn(db: &Db, application_id: Uuid) -> Arc<Turn> {
    let mut turns = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let key = (db.label, application_id);
    if let Some(turn) = turns.get(&key).and_then(Weak::upgrade) {
        return turn;
    }
    if turns.len() >= 4096 {
        turns.retain(|_, turn| turn.strong_count() > 0);
    }
    let turn = Arc::new(Turn::default());
    turns.insert(key, Arc::downgrade(&turn));
    turn
}

/// After a change committed pending rows: links them, with whatever else
/// of the application is pending, unless a run that began after the commit
/// did (the changes that commit while a run is in progress wait for it,
/// and the next run links all of theirs at once). A failure is reported,
/// not returned: the change has committed, and the sweep links its rows.
pub async fn after_commit(db: &Db, application_id: Uuid) {
    let turn = turn(db, application_id);
    let begun_before_the_commit_ended = turn.begun.load(Ordering::SeqCst);
    let mut drained = turn.drained.lock().await;
    if *drained > begun_before_the_commit_ended {
        return;
    }
    let run = turn.begun.fetch_add(1, Ordering::SeqCst) + 1;
    match link(db, application_id).await {
        Ok(_) => *drained = run,
        Err(err) if crate::error::is_fenced(&err) => {} // a move took them: its new region links them
        Err(err) => tracing::warn!(%application_id, error = %err, "linking audit rows failed; the sweep links them"),
    }
}

/// [`link`] in this node's turn for the application (the sweep).
pub async fn link_in_turn(db: &Db, application_id: Uuid) -> Result<u64, DbErr> {
    let turn = turn(db, application_id);
    let _in_turn = turn.drained.lock().await;
    link(db, application_id).await
}

/// Chains every pending row of the application, in batches of a
/// transaction each; answers how many. Fenced (a move copied them):
/// `error::fenced`.
async fn link(db: &Db, application_id: Uuid) -> Result<u64, DbErr> {
    let mut linked = 0;
    loop {
        let txn = db.begin_write().await?;
        let batch = link_batch(&*txn, application_id).await?;
        txn.commit().await?;
        linked += batch;
        if batch < BATCH {
            return Ok(linked);
        }
    }
}

/// SQLite's flush: links the pending rows of `applications` in `txn`, the
/// transaction it is about to commit, each application in a savepoint. One
/// whose linking fails is reported and left pending for the sweep (its
/// change commits all the same); one fenced was copied by its move, whose
/// new region links it.
pub async fn before_flush(txn: &DatabaseTransaction, applications: &BTreeSet<Uuid>) {
    for &application_id in applications {
        match link_in_savepoint(txn, application_id).await {
            Ok(()) => {}
            Err(err) if crate::error::is_fenced(&err) => {}
            Err(err) => {
                tracing::warn!(%application_id, error = %err, "linking audit rows failed; the sweep links them")
            }
        }
    }
}

async fn link_in_savepoint(txn: &DatabaseTransaction, application_id: Uuid) -> Result<(), DbErr> {
    let savepoint = txn.begin().await?;
    loop {
        match link_batch(&savepoint, application_id).await {
            Ok(batch) if batch < BATCH => return savepoint.commit().await,
            Ok(_) => {}
            Err(err) => {
                savepoint.rollback().await.ok();
                return Err(err);
            }
        }
    }
}

/// Chains up to [`BATCH`] pending rows of the application in `txn`;
/// answers how many it took from pending.
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
async fn link_batch(txn: &impl ConnectionTrait, application_id: Uuid) -> Result<u64, DbErr> {
    // Linkers take turns on the head; what one linked is gone for the next.
    super::lock_head(txn, application_id, LockType::NoKeyUpdate).await?;
    let pending = audit_pending::Entity::find()
        .filter(audit_pending::Column::ApplicationId.eq(application_id))
        .order_by_asc(audit_pending::Column::OccurredAt)
        .order_by_asc(audit_pending::Column::Id)
        .limit(BATCH)
        .all(txn)
        .await?;
    if pending.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = pending.iter().map(|row| row.id).collect();
    // A row already chained (a relay that appended it before) is dropped.
    // Looked up by id alone, the primary key: with the application's id
    // too and four ids or more, SQLite's planner (which has no statistics)
    // walks the application's whole chain by its index instead.
    let chained: Vec<(Uuid, Uuid)> = audit_event::Entity::find()
        .select_only()
        .column(audit_event::Column::Id)
        .column(audit_event::Column::ApplicationId)
        .filter(audit_event::Column::Id.is_in(ids.iter().copied()))
        .into_tuple()
        .all(txn)
        .await?;
    let chained: Vec<Uuid> = chained.into_iter().filter(|(_, app)| *app == application_id).map(|(id, _)| id).collect();
    let unchained: Vec<audit_pending::Model> = pending.into_iter().filter(|row| !chained.contains(&row.id)).collect();
    super::chain_rows(txn, application_id, &unchained).await?;
    audit_pending::Entity::delete_many()
        .filter(audit_pending::Column::ApplicationId.eq(application_id))
        .filter(audit_pending::Column::Id.is_in(ids.iter().copied()))
        .exec(txn)
        .await?;
    Ok(ids.len() as u64)
}

/// How old a pending row is before the sweep links it: its change links
/// it within milliseconds of its commit unless it died.
pub const LEFTOVER_AFTER: Duration = Duration::from_secs(2);

/// The applications with pending rows older than [`LEFTOVER_AFTER`] in `db`.
#[allow(clippy::disallowed_methods)] // the chain writer: reads every chain's pending rows
pub async fn leftovers(db: &Db) -> Result<Vec<Uuid>, DbErr> {
    let before = crate::clock::now() - chrono::Duration::from_std(LEFTOVER_AFTER).unwrap_or_default();
    audit_pending::Entity::find()
        .select_only()
        .column(audit_pending::Column::ApplicationId)
        .distinct()
        .filter(audit_pending::Column::OccurredAt.lt(crate::clock::format(before)))
        .into_tuple()
        .all(&db.conn)
        .await
}
