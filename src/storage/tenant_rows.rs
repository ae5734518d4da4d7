//! Whole-application row operations across one regional database, for a
//! region move: copy every row of an application into another database,
//! delete them all, count them. They act on exactly the application's rows
//! (every query filters by `application_id`) but on a connection of the
//! caller's choosing, not through a tenant handle, since a move spans two
//! databases.
#![allow(clippy::disallowed_methods)]

use futures_util::TryStreamExt;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, IntoActiveModel, Iterable, PaginatorTrait, QueryFilter,
    StreamTrait,
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
    let batch_size = (BINDS_PER_INSERT / E::Column::iter().count()).max(1);
    let query = E::find().filter(E::application_id_column().eq(application_id));
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
