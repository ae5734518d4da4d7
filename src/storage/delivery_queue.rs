//! The outbox queues as the region's workers read and write them: webhook
//! messages (`events::delivery`) and mail (`areas::mail_queue`). A worker
//! serves every application of its region and has no principal: each
//! statement here names the claimed rows' own `application_id`. Three of
//! them are raw SQL, the only raw SQL outside start-up's own statements:
//! the due check and leasing (`FOR UPDATE SKIP LOCKED`, `UPDATE …
//! RETURNING`), which run on either queue's table, and settling a batch of
//! webhook messages on PostgreSQL (`UPDATE … FROM (VALUES …)`), which
//! sea-orm has no form of.
use std::{collections::HashSet, time::Duration};

use chrono::{DateTime, Utc};
use entity::{mail_queue, user_import, webhook_message};
use sea_orm::{
    sea_query::Expr, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter,
    QuerySelect, Statement, UpdateMany,
};
use uuid::Uuid;

use super::{Db, TenantEntity};
use crate::{clock, events::outbox};

/// A queue table: `id`, `application_id`, `status` (`pending` until
/// settled), `next_attempt_at` and `lease_until` columns, leased by one
/// worker at a time.
pub trait Queue: TenantEntity + Default
where
    Self::Model: FromQueryResult + Send + Sync,
{
    fn id_column() -> Self::Column;
    fn status_column() -> Self::Column;
    fn next_attempt_column() -> Self::Column;
    fn lease_column() -> Self::Column;
}

macro_rules! queue {
    ($table:ident) => {
        impl Queue for $table::Entity {
            fn id_column() -> Self::Column {
                $table::Column::Id
            }
            fn status_column() -> Self::Column {
                $table::Column::Status
            }
            fn next_attempt_column() -> Self::Column {
                $table::Column::NextAttemptAt
            }
            fn lease_column() -> Self::Column {
                $table::Column::LeaseUntil
            }
        }
    };
}

queue!(webhook_message);
queue!(mail_queue);
queue!(user_import);

/// A leased row, by what names it.
pub struct Leased {
    pub application_id: Uuid,
    pub id: Uuid,
    pub lease_until: Option<DateTime<Utc>>,
}

/// Lets go of a leased row without an attempt, due again `after` (its
/// application is not served from this database now: it is moving). Only
/// while the lease is still the caller's.
pub async fn release<Q: Queue>(shard: &Db, leased: Leased, after: Duration) -> Result<(), DbErr>
where
    Q::Model: FromQueryResult + Send + Sync,
{
    let next = clock::now() + chrono::Duration::from_std(after).unwrap_or_default();
    update_leased::<Q>(shard, leased, |q| {
        q.col_expr(Q::next_attempt_column(), Expr::value(Some(next)))
            .col_expr(Q::lease_column(), Expr::value(Option::<DateTime<Utc>>::None))
    })
    .await
}

/// Changes a leased row while the lease is still the caller's (one that
/// expired belongs to the worker that took it over, which settles it).
#[allow(clippy::disallowed_methods)] // by the leased row's own application and id
pub async fn update_leased<Q: Queue>(
    shard: &Db,
    leased: Leased,
    build: impl FnOnce(UpdateMany<Q>) -> UpdateMany<Q>,
) -> Result<(), DbErr>
where
    Q::Model: FromQueryResult + Send + Sync,
{
    let txn = shard.begin_write().await?;
    build(Q::update_many())
        .filter(Q::application_id_column().eq(leased.application_id))
        .filter(Q::id_column().eq(leased.id))
        .filter(Q::lease_column().eq(leased.lease_until))
        .exec(&*txn)
        .await?;
    txn.commit().await
}

/// Leases up to `limit` due rows of any application in the region for
/// `lease`: several nodes never hold one row at once, and a crashed node's
/// lease expires. A read first: an idle region takes no write lock.
#[allow(clippy::disallowed_methods)] // the region's queue across applications; raw for the lease (see the module)
pub async fn lease_due<Q: Queue>(shard: &Db, limit: u64, lease: Duration) -> Result<Vec<Q::Model>, DbErr>
where
    Q::Model: FromQueryResult + Send + Sync,
{
    let now = clock::now();
    let table = Q::default().table_name().to_owned();
    let backend = shard.backend();
    let (first, second) = match backend {
        DbBackend::Postgres => ("$1", "$2"),
        _ => ("?", "?"),
    };
    let due = Statement::from_sql_and_values(
        backend,
        format!(
            "SELECT id FROM {table} WHERE status = 'pending' AND next_attempt_at <= {first} \
             AND (lease_until IS NULL OR lease_until < {second}) LIMIT 1"
        ),
        [now.into(), now.into()],
    );
    if shard.conn.query_one(due).await?.is_none() {
        return Ok(Vec::new());
    }
    let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
    let statement = match backend {
        DbBackend::Postgres => Statement::from_sql_and_values(
            DbBackend::Postgres,
            format!(
                "UPDATE {table} SET lease_until = $1 WHERE id IN (SELECT id FROM {table} \
                 WHERE status = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until < $2) \
                 ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING *"
            ),
            [until.into(), now.into(), (limit as i64).into()],
        ),
        backend => Statement::from_sql_and_values(
            backend,
            format!(
                "UPDATE {table} SET lease_until = ? WHERE id IN (SELECT id FROM {table} \
                 WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) \
                 ORDER BY next_attempt_at LIMIT ?) RETURNING *"
            ),
            [until.into(), now.into(), now.into(), (limit as i64).into()],
        ),
    };
    let txn = shard.begin_write().await?;
    let claimed = Q::find().from_raw_sql(statement).all(&*txn).await?;
    txn.commit().await?;
    Ok(claimed)
}

/// For a region move, in the transaction that copies the application:
/// locks its pending mail (a worker's lease skips it until the copy ends)
/// and answers whether one is in a worker's hands now (its lease is live),
/// which the copy must wait out, else the old region sends what the new one
/// sends again. Webhook messages are not waited for: an endpoint may take
/// its whole timeout, the application would be held that long, and
/// receivers deduplicate on `webhook-id` (Standard Webhooks).
pub async fn any_in_flight(db: &impl ConnectionTrait, application_id: Uuid) -> Result<bool, DbErr> {
    in_flight::<mail_queue::Entity>(db, application_id).await
}

#[allow(clippy::disallowed_methods)] // by the application's own id, on the copy's connection
async fn in_flight<Q: Queue>(db: &impl ConnectionTrait, application_id: Uuid) -> Result<bool, DbErr>
where
    Q::Model: FromQueryResult + Send + Sync,
{
    let now = clock::now();
    let leases: Vec<Option<DateTime<Utc>>> = Q::find()
        .filter(Q::application_id_column().eq(application_id))
        .filter(Q::status_column().eq(outbox::PENDING))
        .select_only()
        .column(Q::lease_column())
        .lock_exclusive()
        .into_tuple()
        .all(db)
        .await?;
    Ok(leases.into_iter().any(|until| until.is_some_and(|until| until > now)))
}

/// A leased message's new state after an attempt.
pub struct Settlement {
    pub application_id: Uuid,
    pub id: Uuid,
    /// The lease it was claimed under: settled only while it is still that.
    pub lease_until: Option<DateTime<Utc>>,
    pub status: &'static str,
    pub attempts_made: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Settles the messages still under their claim (a message whose lease
/// expired, or that was retried by hand, belongs to its new owner, who
/// settles it); answers their ids.
pub async fn settle(
    db: &impl ConnectionTrait,
    backend: DbBackend,
    settlements: &[Settlement],
) -> Result<HashSet<Uuid>, DbErr> {
    match backend {
        DbBackend::Postgres => settle_all(db, settlements).await,
        _ => settle_each(db, settlements).await,
    }
}

/// One `UPDATE` by primary key each (SQLite: in process, and its planner
/// scans an application's messages for an `IN` list).
#[allow(clippy::disallowed_methods)] // each statement names the message's own application
async fn settle_each(db: &impl ConnectionTrait, settlements: &[Settlement]) -> Result<HashSet<Uuid>, DbErr> {
    let mut updated = HashSet::new();
    for s in settlements {
        let changed = webhook_message::Entity::update_many()
            .col_expr(webhook_message::Column::Status, Expr::value(s.status))
            .col_expr(webhook_message::Column::AttemptsMade, Expr::value(s.attempts_made))
            .col_expr(webhook_message::Column::NextAttemptAt, Expr::value(s.next_attempt_at))
            .col_expr(webhook_message::Column::LeaseUntil, Expr::value(Option::<DateTime<Utc>>::None))
            .filter(webhook_message::Column::ApplicationId.eq(s.application_id))
            .filter(webhook_message::Column::Id.eq(s.id))
            .filter(webhook_message::Column::LeaseUntil.eq(s.lease_until))
            .exec(db)
            .await?;
        if changed.rows_affected > 0 {
            updated.insert(s.id);
        }
    }
    Ok(updated)
}

/// The whole batch in one `UPDATE … FROM (VALUES …)` on PostgreSQL (one
/// round trip instead of one per message).
#[allow(clippy::disallowed_methods)] // raw: sea-orm has no UPDATE … FROM (VALUES …); each row names its application
async fn settle_all(db: &impl ConnectionTrait, settlements: &[Settlement]) -> Result<HashSet<Uuid>, DbErr> {
    use std::fmt::Write;
    let mut sql = String::from(
        "UPDATE webhook_messages AS m SET status = v.status, attempts_made = v.attempts_made, \
         next_attempt_at = v.next_attempt_at, lease_until = NULL FROM (VALUES ",
    );
    let mut values: Vec<sea_orm::Value> = Vec::with_capacity(settlements.len() * 6);
    for (i, s) in settlements.iter().enumerate() {
        let n = i * 6;
        let separator = if i == 0 { "" } else { ", " };
        let _ = write!(
            sql,
            "{separator}(${}::uuid, ${}::uuid, ${}::timestamptz, ${}::text, ${}::integer, ${}::timestamptz)",
            n + 1,
            n + 2,
            n + 3,
            n + 4,
            n + 5,
            n + 6
        );
        values.extend([
            s.application_id.into(),
            s.id.into(),
            s.lease_until.into(),
            s.status.into(),
            s.attempts_made.into(),
            s.next_attempt_at.into(),
        ]);
    }
    sql.push_str(
        ") AS v(application_id, id, lease_until, status, attempts_made, next_attempt_at) \
         WHERE m.application_id = v.application_id AND m.id = v.id AND m.lease_until = v.lease_until RETURNING m.id",
    );
    let rows = db.query_all(Statement::from_sql_and_values(DbBackend::Postgres, sql, values)).await?;
    rows.iter().map(|row| row.try_get::<Uuid>("", "id")).collect()
}
