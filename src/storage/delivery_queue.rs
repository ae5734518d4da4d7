//! The webhook delivery queue as the region's delivery worker reads and
//! writes it. The worker serves every application of its region and has no
//! principal: each statement here names the claimed rows' own
//! `application_id`. Two of them are raw SQL, the only raw SQL outside
//! start-up's own statements: leasing (`FOR UPDATE SKIP LOCKED`, `UPDATE …
//! RETURNING`) and settling a batch on PostgreSQL (`UPDATE … FROM (VALUES
//! …)`), which sea-orm has no form of.
use std::{collections::HashSet, time::Duration};

use chrono::{DateTime, Utc};
use entity::webhook_message;
use sea_orm::{
    sea_query::Expr, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QuerySelect, Statement,
};
use uuid::Uuid;

use super::Db;
use crate::{clock, events::outbox};

/// Leases up to `limit` due messages of any application in the region for
/// `lease`: several nodes never hold one message at once, and a crashed
/// node's lease expires. A read first: an idle region takes no write lock.
#[allow(clippy::disallowed_methods)] // the region's queue across applications; raw for the lease (see the module)
pub async fn lease_due(shard: &Db, limit: u64, lease: Duration) -> Result<Vec<webhook_message::Model>, DbErr> {
    let now = clock::now();
    let due = webhook_message::Column::Status
        .eq(outbox::PENDING)
        .and(webhook_message::Column::NextAttemptAt.lte(now))
        .and(webhook_message::Column::LeaseUntil.is_null().or(webhook_message::Column::LeaseUntil.lt(now)));
    if webhook_message::Entity::find()
        .filter(due)
        .select_only()
        .column(webhook_message::Column::Id)
        .into_tuple::<Uuid>()
        .one(&shard.conn)
        .await?
        .is_none()
    {
        return Ok(Vec::new());
    }
    let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
    let statement = match shard.backend() {
        DbBackend::Postgres => Statement::from_sql_and_values(
            DbBackend::Postgres,
            "UPDATE webhook_messages SET lease_until = $1 WHERE id IN (SELECT id FROM webhook_messages \
             WHERE status = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until < $2) \
             ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING *",
            [until.into(), now.into(), (limit as i64).into()],
        ),
        backend => Statement::from_sql_and_values(
            backend,
            "UPDATE webhook_messages SET lease_until = ? WHERE id IN (SELECT id FROM webhook_messages \
             WHERE status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?) \
             ORDER BY next_attempt_at LIMIT ?) RETURNING *",
            [until.into(), now.into(), now.into(), (limit as i64).into()],
        ),
    };
    let txn = shard.begin_write().await?;
    let claimed = webhook_message::Entity::find().from_raw_sql(statement).all(&*txn).await?;
    txn.commit().await?;
    Ok(claimed)
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
