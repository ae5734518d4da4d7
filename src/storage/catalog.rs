//! Every query of the catalog (accounts, the application directory, the
//! outbox of catalog audit rows). Catalog rows are not tenant rows: the
//! directory is read across applications (routing, an account's list, the
//! CORS origin union), so these queries are raw entity queries, kept here,
//! the one module clippy's `disallowed_methods` allows them in.
#![allow(clippy::disallowed_methods)]

use entity::{account, application, pending_audit_event};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use uuid::Uuid;

use super::{Db, Page};

pub async fn insert_account(catalog: &Db, id: Uuid, name: String) -> Result<(), DbErr> {
    let txn = catalog.begin_write().await?;
    account::Entity::insert(account::ActiveModel {
        id: Set(id),
        name: Set(name),
        created_at: Set(crate::clock::now()),
    })
    .exec_without_returning(&*txn)
    .await?;
    txn.commit().await
}

pub async fn insert_application(catalog: &Db, row: application::Model) -> Result<(), DbErr> {
    let txn = catalog.begin_write().await?;
    application::Entity::insert(application::ActiveModel::from(row)).exec_without_returning(&*txn).await?;
    txn.commit().await
}

pub async fn count_applications(catalog: &Db) -> Result<u64, DbErr> {
    application::Entity::find().count(&catalog.conn).await
}

pub async fn find_application(catalog: &Db, id: Uuid) -> Result<Option<application::Model>, DbErr> {
    application::Entity::find_by_id(id).one(&catalog.conn).await
}

pub async fn find_application_in_account(
    catalog: &Db,
    account_id: Uuid,
    id: Uuid,
) -> Result<Option<application::Model>, DbErr> {
    application::Entity::find_by_id(id).filter(application::Column::AccountId.eq(account_id)).one(&catalog.conn).await
}

pub async fn list_applications(
    catalog: &Db,
    account_id: Uuid,
    page: Page,
) -> Result<(Vec<application::Model>, bool), DbErr> {
    let query = application::Entity::find()
        .filter(application::Column::AccountId.eq(account_id))
        .order_by_asc(application::Column::CreatedAt)
        .order_by_asc(application::Column::Id);
    page.fetch(query, &catalog.conn).await
}

/// Every application's `allowed_origins` list.
pub async fn origin_lists(catalog: &Db) -> Result<Vec<serde_json::Value>, DbErr> {
    application::Entity::find()
        .select_only()
        .column(application::Column::AllowedOrigins)
        .into_tuple()
        .all(&catalog.conn)
        .await
}

/// Writes a changed application row and the audit row that records the
/// change in one catalog transaction; [`crate::service::applications::relay_pending_audit`] later moves
/// the audit row into the application's regional chain.
pub async fn update_application(
    catalog: &Db,
    row: application::ActiveModel,
    audit: pending_audit_event::Model,
) -> Result<application::Model, DbErr> {
    use sea_orm::ActiveModelTrait;
    let txn = catalog.begin_write().await?;
    let updated = row.update(&*txn).await?;
    pending_audit_event::Entity::insert(audit.into_active_model()).exec_without_returning(&*txn).await?;
    txn.commit().await?;
    Ok(updated)
}

/// Catalog audit rows not yet relayed into their regional chains, oldest first.
pub async fn pending_audit(catalog: &Db) -> Result<Vec<pending_audit_event::Model>, DbErr> {
    let oldest_first = pending_audit_event::Entity::find().order_by_asc(pending_audit_event::Column::Id);
    oldest_first.limit(1000).all(&catalog.conn).await
}

pub async fn forget_pending_audit(catalog: &Db, id: Uuid) -> Result<(), DbErr> {
    let txn = catalog.begin_write().await?;
    pending_audit_event::Entity::delete_by_id(id).exec(&*txn).await?;
    txn.commit().await
}
