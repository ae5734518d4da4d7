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
use crate::{audit::Actor, region::Region};

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
}

impl Step {
    const ALL: [Step; 4] = [Step::Pending, Step::Copied, Step::Switched, Step::Cleaned];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Pending => "pending",
            Step::Copied => "copied",
            Step::Switched => "switched",
            Step::Cleaned => "cleaned",
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

/// Journals a move from `from` to `to` and marks the application as moving,
/// in one catalog transaction, with this node's lease.
pub async fn begin(
    catalog: &Db,
    application_id: Uuid,
    (from, to): (Region, Region),
    actor: &Actor,
    lease: (Uuid, DateTime<Utc>),
) -> Result<Begun, DbErr> {
    let txn = catalog.begin_write().await?;
    let previous = region_move::Entity::find_by_id(application_id).one(&*txn).await?;
    if let Some(unfinished) = previous.clone().filter(|m| m.step != Step::Cleaned.as_str()) {
        return Ok(Begun::Unfinished(unfinished));
    }
    let marked = application::Entity::update_many()
        .col_expr(application::Column::MovingTo, Expr::value(to.as_str()))
        .filter(application::Column::Id.eq(application_id))
        .filter(application::Column::Region.eq(from.as_str()))
        .filter(application::Column::MovingTo.is_null())
        .exec(&*txn)
        .await?;
    if marked.rows_affected == 0 {
        return Ok(Begun::NotInRegion);
    }
    let now = crate::clock::now();
    let row = region_move::Model {
        application_id,
        from_region: from.as_str().to_string(),
        to_region: to.as_str().to_string(),
        step: Step::Pending.as_str().to_string(),
        lease_owner: Some(lease.0),
        lease_expires_at: Some(lease.1),
        actor_kind: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        rows_copied: 0,
        started_at: now,
        updated_at: now,
        finished_at: None,
    };
    if previous.is_some() {
        region_move::Entity::delete_by_id(application_id).exec(&*txn).await?;
    }
    region_move::Entity::insert(row.clone().into_active_model()).exec_without_returning(&*txn).await?;
    txn.commit().await?;
    Ok(Begun::Started(row))
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
        .filter(region_move::Column::Step.ne(Step::Cleaned.as_str()))
        .filter(free)
        .exec(&catalog.conn)
        .await?;
    if taken.rows_affected == 0 {
        return Ok(None);
    }
    find(catalog, application_id).await
}

/// Records that the move reached `to` from `from`, if `owner` still holds
/// its lease; `false`: the lease was lost (another node runs the move now).
pub async fn advance(
    catalog: &Db,
    application_id: Uuid,
    owner: Uuid,
    (from, to): (Step, Step),
    rows_copied: Option<u64>,
) -> Result<bool, DbErr> {
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
    let advanced = update
        .filter(region_move::Column::ApplicationId.eq(application_id))
        .filter(region_move::Column::Step.eq(from.as_str()))
        .filter(region_move::Column::LeaseOwner.eq(owner))
        .exec(&*txn)
        .await?;
    if advanced.rows_affected == 0 {
        return Ok(false);
    }
    if to == Step::Switched {
        let journaled = region_move::Entity::find_by_id(application_id).one(&*txn).await?;
        let target = journaled.map(|m| m.to_region).unwrap_or_default();
        application::Entity::update_many()
            .col_expr(application::Column::Region, Expr::value(target))
            .col_expr(application::Column::MovingTo, Expr::value(Option::<String>::None))
            .col_expr(application::Column::UpdatedAt, Expr::value(now))
            .filter(application::Column::Id.eq(application_id))
            .exec(&*txn)
            .await?;
    }
    txn.commit().await?;
    Ok(true)
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
        .filter(region_move::Column::Step.ne(Step::Cleaned.as_str()))
        .filter(free)
        .all(&catalog.conn)
        .await
}
