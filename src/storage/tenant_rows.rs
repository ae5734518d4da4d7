//! Whole-application row operations across one regional database, for a
//! region move: copy every row of an application into another database,
//! delete them all, count them. They act on exactly the application's rows
//! (every query filters by `application_id`) but on a connection of the
//! caller's choosing, not through a tenant handle, since a move spans two
//! databases.
#![allow(clippy::disallowed_methods)]

use futures_util::TryStreamExt;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel, Iterable,
    PaginatorTrait, QueryFilter, StreamTrait,
};
use uuid::Uuid;

use super::TenantEntity;

/// Bind parameters one insert may carry: under SQLite's 32,766 and
/// PostgreSQL's 65,535 with room to spare.
const BINDS_PER_INSERT: usize = 20_000;

/// Streams the application's rows of one table from `source` into `target`,
/// in multi-row inserts.
pub async fn copy<E, S, T>(source: &S, target: &T, application_id: Uuid) -> Result<u64, DbErr>
where
    E: TenantEntity,
    E::Model: IntoActiveModel<E::ActiveModel>,
    E::ActiveModel: ActiveModelTrait<Entity = E> + Send,
    S: ConnectionTrait + StreamTrait,
    T: ConnectionTrait,
{
    copy_where::<E, _, _>(source, target, application_id, Condition::all()).await
}

/// [`copy`] of the rows that also meet `also`.
async fn copy_where<E, S, T>(source: &S, target: &T, application_id: Uuid, also: Condition) -> Result<u64, DbErr>
where
    E: TenantEntity,
    E::Model: IntoActiveModel<E::ActiveModel>,
    E::ActiveModel: ActiveModelTrait<Entity = E> + Send,
    S: ConnectionTrait + StreamTrait,
    T: ConnectionTrait,
{
    let batch_size = (BINDS_PER_INSERT / E::Column::iter().count()).max(1);
    let query = E::find().filter(E::application_id_column().eq(application_id)).filter(also);
    let mut rows = query.stream(source).await?;
    let mut batch = Vec::with_capacity(batch_size);
    let mut copied = 0;
    while let Some(row) = rows.try_next().await? {
        batch.push(row.into_active_model());
        if batch.len() == batch_size {
            copied += batch.len() as u64;
            E::insert_many(std::mem::take(&mut batch)).exec_without_returning(target).await?;
        }
    }
    if !batch.is_empty() {
        copied += batch.len() as u64;
        E::insert_many(batch).exec_without_returning(target).await?;
    }
    Ok(copied)
}

/// How far `target`'s audit rows of the application are the chain
/// `source` holds: the last `seq` of a prefix `1..=seq` whose last row has
/// the same hash in both (so, the chain being linked, every row up to it
/// does); 0 when `target` holds no such prefix.
pub async fn audit_prefix<S, T>(source: &S, target: &T, application_id: Uuid) -> Result<i64, DbErr>
where
    S: ConnectionTrait,
    T: ConnectionTrait,
{
    use entity::audit_event::{Column, Entity};
    use sea_orm::{QueryOrder, QuerySelect};
    let of_application = || Entity::find().filter(Column::ApplicationId.eq(application_id));
    let Some(last) = of_application().order_by_desc(Column::Seq).limit(1).one(target).await? else {
        return Ok(0);
    };
    let held = of_application().count(target).await?;
    let theirs = of_application().filter(Column::Seq.eq(last.seq)).one(source).await?;
    let same = theirs.is_some_and(|row| row.hash == last.hash) && held == last.seq as u64;
    Ok(if same { last.seq } else { 0 })
}

/// Copies the application's audit rows after `seq` (all of them after 0).
pub async fn copy_audit_after<S, T>(source: &S, target: &T, application_id: Uuid, seq: i64) -> Result<u64, DbErr>
where
    S: ConnectionTrait + StreamTrait,
    T: ConnectionTrait,
{
    let after = Condition::all().add(entity::audit_event::Column::Seq.gt(seq));
    copy_where::<entity::audit_event::Entity, _, _>(source, target, application_id, after).await
}

/// Deletes the application's audit rows after `seq`.
pub async fn delete_audit_after(db: &impl ConnectionTrait, application_id: Uuid, seq: i64) -> Result<u64, DbErr> {
    let after = Condition::all().add(entity::audit_event::Column::Seq.gt(seq));
    let deleted = entity::audit_event::Entity::delete_many()
        .filter(entity::audit_event::Column::ApplicationId.eq(application_id))
        .filter(after)
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}

pub async fn delete<E: TenantEntity>(db: &impl ConnectionTrait, application_id: Uuid) -> Result<u64, DbErr> {
    let deleted = E::delete_many().filter(E::application_id_column().eq(application_id)).exec(db).await?;
    Ok(deleted.rows_affected)
}

pub async fn count<E: TenantEntity>(db: &impl ConnectionTrait, application_id: Uuid) -> Result<u64, DbErr>
where
    E::Model: Sync,
{
    E::find().filter(E::application_id_column().eq(application_id)).count(db).await
}
