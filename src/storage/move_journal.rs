//! The region-move journal in the catalog (`region_moves`, and the
//! `moving_to` mark on the application's directory row). Each step of a
//! move is recorded here before the next starts, so a move resumes after a
//! crash from the last recorded step; every write after the start is
//! conditional on the writer's lease, so two nodes never run one
//! application's move at once.
#![allow(clippy::disallowed_methods)] // catalog rows, not tenant rows (see catalog.rs)

use chrono::{DateTime, Utc};
use entity::{application, region_move};
use sea_orm::{sea_query::Expr, ColumnTrait, Condition, DbErr, EntityTrait, IntoActiveModel, QueryFilter};
use uuid::Uuid;

use super::Db;
use crate::{audit::Actor, region::Shard};

/// How far a move got. Each step's work is redone whole if the process
/// dies before the next step is recorded, so every step is idempotent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Journaled; the application's requests are held; nothing copied yet.
    Pending,
    /// Every row is in the new region (one committed transaction there).
    Copied,
    /// The directory names the new region; requests flow again.
    Switched,
    /// The old region holds nothing of the application: the move is over.
    Cleaned,
    /// Given up before the switch (the copy did not succeed within its
    /// bound, or an operator cancelled it): the application serves from
    /// its old region, and the new one holds nothing of it.
    RolledBack,
}

impl Step {
    const ALL: [Step; 5] = [Step::Pending, Step::Copied, Step::Switched, Step::Cleaned, Step::RolledBack];
    /// Where a move ends.
    const FINISHED: [&'static str; 2] = ["cleaned", "rolled_back"];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Pending => "pending",
            Step::Copied => "copied",
            Step::Switched => "switched",
            Step::Cleaned => "cleaned",
            Step::RolledBack => "rolled_back",
        }
    }

    pub fn parse(value: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// What asking for a move found.
pub enum Begun {
    /// Journaled now (the application is marked as moving).
    Started(region_move::Model),
    /// A move of the application is not finished (this one's target may differ).
    Unfinished(region_move::Model),
    /// The application is no longer in `from` (another move switched it).
    NotInRegion,
}

pub async fn find(catalog: &Db, application_id: Uuid) -> Result<Option<region_move::Model>, DbErr> {
    region_move::Entity::find_by_id(application_id).one(&catalog.conn).await
}

/// The application's rows on `shard` (stored without a name when it is its
/// region's first).
fn on_shard(shard: Shard) -> Condition {
    let named = match shard.stored_name() {
        Some(name) => application::Column::Shard.eq(name),
        None => application::Column::Shard.is_null(),
    };
    Condition::all().add(application::Column::Region.eq(shard.region.as_str())).add(named)
}

/// Journals a move from `from` to `to` (shards of one region or of two) and
/// marks the application as moving, in one catalog transaction, with
/// `lease` (an operator's command journals with one already expired: a
/// node of the old region takes it).
pub async fn begin(
    catalog: &Db,
    application_id: Uuid,
    (from, to): (Shard, Shard),
    actor: &Actor,
    lease: (Uuid, DateTime<Utc>),
) -> Result<Begun, DbErr> {
    let txn = catalog.begin_write().await?;
    let previous = region_move::Entity::find_by_id(application_id).one(&*txn).await?;
    if let Some(unfinished) = previous.clone().filter(|m| !Step::FINISHED.contains(&m.step.as_str())) {
        return Ok(Begun::Unfinished(unfinished));
    }
    let marked = application::Entity::update_many()
        .col_expr(application::Column::MovingTo, Expr::value(to.region.as_str()))
        .col_expr(application::Column::MovingToShard, Expr::value(to.stored_name()))
        .filter(application::Column::Id.eq(application_id))
        .filter(on_shard(from))
        .filter(application::Column::MovingTo.is_null())
        .exec(&*txn)
        .await?;
    if marked.rows_affected == 0 {
        return Ok(Begun::NotInRegion);
    }
    let now = crate::clock::now();
    let row = region_move::Model {
        application_id,
        from_region: from.region.as_str().to_string(),
        to_region: to.region.as_str().to_string(),
        from_shard: from.stored_name(),
        to_shard: to.stored_name(),
        step: Step::Pending.as_str().to_string(),
        lease_owner: Some(lease.0),
        lease_expires_at: Some(lease.1),
        actor_kind: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        rows_copied: 0,
        started_at: now,
        updated_at: now,
        finished_at: None,
        cancel_requested_at: None,
    };
    if previous.is_some() {
        region_move::Entity::delete_by_id(application_id).exec(&*txn).await?;
    }
    region_move::Entity::insert(row.clone().into_active_model()).exec_without_returning(&*txn).await?;
    txn.commit().await?;
    Ok(Begun::Started(row))
}

/// The shards a journaled move goes from and to; `None` for a row naming a
/// region or shard that is not a name (edited by hand).
pub fn shards_of(row: &region_move::Model) -> Option<(Shard, Shard)> {
    let shard = |region: &str, name: &Option<String>| {
        crate::region::Region::new(region).ok().and_then(|r| Shard::stored(r, name.as_deref()).ok())
    };
    Some((shard(&row.from_region, &row.from_shard)?, shard(&row.to_region, &row.to_shard)?))
}

/// Takes (or renews) the lease of an unfinished move: free, expired, or
/// already `owner`'s. `None`: another node holds it, or nothing to run.
pub async fn take_lease(
    catalog: &Db,
    application_id: Uuid,
    owner: Uuid,
    until: DateTime<Utc>,
    predecessor: Option<Uuid>,
) -> Result<Option<region_move::Model>, DbErr> {
    let now = crate::clock::now();
    let mut free = Condition::any()
        .add(region_move::Column::LeaseOwner.eq(owner))
        .add(region_move::Column::LeaseOwner.is_null())
        .add(region_move::Column::LeaseExpiresAt.lt(now));
    if let Some(predecessor) = predecessor {
        free = free.add(region_move::Column::LeaseOwner.eq(predecessor));
    }
    let taken = region_move::Entity::update_many()
        .col_expr(region_move::Column::LeaseOwner, Expr::value(owner))
        .col_expr(region_move::Column::LeaseExpiresAt, Expr::value(until))
        .filter(region_move::Column::ApplicationId.eq(application_id))
        .filter(region_move::Column::Step.is_not_in(Step::FINISHED))
        .filter(free)
        .exec(&catalog.conn)
        .await?;
    if taken.rows_affected == 0 {
        return Ok(None);
    }
    find(catalog, application_id).await
}

/// What recording a step came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Advanced {
    Done,
    /// The lease was lost: another node runs the move now.
    LeaseLost,
    /// An operator asked to cancel before the switch: roll it back.
    Cancelled,
}

/// Records that the move reached `to` from `from`, if `owner` still holds
/// its lease, and, for the switch, if no one asked to cancel it.
pub async fn advance(
    catalog: &Db,
    application_id: Uuid,
    owner: Uuid,
    (from, to): (Step, Step),
    rows_copied: Option<u64>,
) -> Result<Advanced, DbErr> {
    let txn = catalog.begin_write().await?;
    let now = crate::clock::now();
    let mut update = region_move::Entity::update_many()
        .col_expr(region_move::Column::Step, Expr::value(to.as_str()))
        .col_expr(region_move::Column::UpdatedAt, Expr::value(now));
    if let Some(rows) = rows_copied {
        update = update.col_expr(region_move::Column::RowsCopied, Expr::value(rows as i64));
    }
    if to == Step::Cleaned {
        update = update
            .col_expr(region_move::Column::FinishedAt, Expr::value(now))
            .col_expr(region_move::Column::LeaseOwner, Expr::value(Option::<Uuid>::None))
            .col_expr(region_move::Column::LeaseExpiresAt, Expr::value(Option::<DateTime<Utc>>::None));
    }
    if to == Step::Switched {
        update = update.filter(region_move::Column::CancelRequestedAt.is_null());
    }
    let advanced = update
        .filter(region_move::Column::ApplicationId.eq(application_id))
        .filter(region_move::Column::Step.eq(from.as_str()))
        .filter(region_move::Column::LeaseOwner.eq(owner))
        .exec(&*txn)
        .await?;
    if advanced.rows_affected == 0 {
        let row = region_move::Entity::find_by_id(application_id).one(&*txn).await?;
        let cancelled = row.is_some_and(|m| m.lease_owner == Some(owner) && m.cancel_requested_at.is_some());
        return Ok(if cancelled { Advanced::Cancelled } else { Advanced::LeaseLost });
    }
    if to == Step::Switched {
        let journaled = region_move::Entity::find_by_id(application_id).one(&*txn).await?;
        let (region, shard) = journaled.map(|m| (m.to_region, m.to_shard)).unwrap_or_default();
        application::Entity::update_many()
            .col_expr(application::Column::Region, Expr::value(region))
            .col_expr(application::Column::Shard, Expr::value(shard))
            .col_expr(application::Column::MovingTo, Expr::value(Option::<String>::None))
            .col_expr(application::Column::MovingToShard, Expr::value(Option::<String>::None))
            .col_expr(application::Column::UpdatedAt, Expr::value(now))
            .filter(application::Column::Id.eq(application_id))
            .exec(&*txn)
            .await?;
    }
    txn.commit().await?;
    Ok(Advanced::Done)
}

/// Unfinished moves whose lease is free, expired, or held by `predecessor`
/// (this node's previous process, which is gone): what a node may resume.
pub async fn stalled(catalog: &Db, predecessor: Option<Uuid>) -> Result<Vec<region_move::Model>, DbErr> {
    let mut free = Condition::any()
        .add(region_move::Column::LeaseOwner.is_null())
        .add(region_move::Column::LeaseExpiresAt.lt(crate::clock::now()));
    if let Some(predecessor) = predecessor {
        free = free.add(region_move::Column::LeaseOwner.eq(predecessor));
    }
    region_move::Entity::find()
        .filter(region_move::Column::Step.is_not_in(Step::FINISHED))
        .filter(free)
        .all(&catalog.conn)
        .await
}

/// Every move in the journal (each application's latest), unfinished first,
/// then newest; or only the unfinished ones.
pub async fn list(catalog: &Db, unfinished_only: bool) -> Result<Vec<region_move::Model>, DbErr> {
    let mut query = region_move::Entity::find();
    if unfinished_only {
        query = query.filter(region_move::Column::Step.is_not_in(Step::FINISHED));
    }
    let mut moves = query.all(&catalog.conn).await?;
    moves.sort_by_key(|m| (Step::FINISHED.contains(&m.step.as_str()), std::cmp::Reverse(m.started_at)));
    Ok(moves)
}

/// What asking to cancel a move found.
pub enum CancelAsked {
    /// Recorded: the node running the move (or the next to resume it) rolls it back.
    Requested(region_move::Model),
    /// The move has switched (or ended): it completes as it is.
    TooLate(region_move::Model),
    NoMove,
}

/// Asks to cancel the application's move: recorded only while it has not
/// switched, which [`advance`] to `switched` checks in the same catalog.
pub async fn request_cancel(catalog: &Db, application_id: Uuid) -> Result<CancelAsked, DbErr> {
    let now = crate::clock::now();
    let before_switch = [Step::Pending.as_str(), Step::Copied.as_str()];
    region_move::Entity::update_many()
        .col_expr(region_move::Column::CancelRequestedAt, Expr::value(now))
        .col_expr(region_move::Column::UpdatedAt, Expr::value(now))
        .filter(region_move::Column::ApplicationId.eq(application_id))
        .filter(region_move::Column::Step.is_in(before_switch))
        .filter(region_move::Column::CancelRequestedAt.is_null())
        .exec(&catalog.conn)
        .await?;
    Ok(match find(catalog, application_id).await? {
        None => CancelAsked::NoMove,
        Some(row) if before_switch.contains(&row.step.as_str()) => CancelAsked::Requested(row),
        Some(row) => CancelAsked::TooLate(row),
    })
}

/// Whether an operator asked to cancel the application's move.
pub async fn cancel_requested(catalog: &Db, application_id: Uuid) -> Result<bool, DbErr> {
    Ok(find(catalog, application_id).await?.is_some_and(|m| m.cancel_requested_at.is_some()))
}

/// Ends a move that has not switched as `rolled_back`, and clears the
/// application's `moving` mark (its region unchanged), in one catalog
/// transaction, if `owner` still holds the lease.
pub async fn roll_back(catalog: &Db, application_id: Uuid, owner: Uuid) -> Result<bool, DbErr> {
    let txn = catalog.begin_write().await?;
    let now = crate::clock::now();
    let ended = region_move::Entity::update_many()
        .col_expr(region_move::Column::Step, Expr::value(Step::RolledBack.as_str()))
        .col_expr(region_move::Column::UpdatedAt, Expr::value(now))
        .col_expr(region_move::Column::FinishedAt, Expr::value(now))
        .col_expr(region_move::Column::LeaseOwner, Expr::value(Option::<Uuid>::None))
        .col_expr(region_move::Column::LeaseExpiresAt, Expr::value(Option::<DateTime<Utc>>::None))
        .filter(region_move::Column::ApplicationId.eq(application_id))
        .filter(region_move::Column::Step.is_in([Step::Pending.as_str(), Step::Copied.as_str()]))
        .filter(region_move::Column::LeaseOwner.eq(owner))
        .exec(&*txn)
        .await?;
    if ended.rows_affected == 0 {
        return Ok(false);
    }
    application::Entity::update_many()
        .col_expr(application::Column::MovingTo, Expr::value(Option::<String>::None))
        .col_expr(application::Column::MovingToShard, Expr::value(Option::<String>::None))
        .col_expr(application::Column::UpdatedAt, Expr::value(now))
        .filter(application::Column::Id.eq(application_id))
        .exec(&*txn)
        .await?;
    txn.commit().await?;
    Ok(true)
}
