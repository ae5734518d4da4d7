//! Every query of the catalog (accounts, the application directory, the
//! outbox of catalog audit rows, processor accounts and the processor events
//! no application claimed). Catalog rows are not tenant rows: the
//! directory is read across applications (routing, an account's list, the
//! CORS origin union), so these queries are raw entity queries, kept here,
//! the one module clippy's `disallowed_methods` allows them in.
#![allow(clippy::disallowed_methods)]

use entity::{account, application, pending_audit_event, processor_account, unmatched_processor_event};
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

/// What linking a processor account to an application did.
#[derive(Debug, PartialEq, Eq)]
pub enum Linked {
    /// The account is now this application's (replacing any other it had).
    Linked,
    /// It already was: nothing changed.
    Unchanged,
    /// It belongs to another application.
    TakenBy(Uuid),
}

/// Links `processor_account_id` to `application_id`, with the audit row of
/// the change in the same catalog transaction (relayed into the regional
/// chain like a settings change). The primary key on the account and the
/// unique index on the application decide between concurrent links: the
/// loser's unique violation is returned as it is.
pub async fn link_processor_account(
    catalog: &Db,
    application_id: Uuid,
    processor_account_id: &str,
    audit: pending_audit_event::Model,
) -> Result<Linked, DbErr> {
    let txn = catalog.begin_write().await?;
    if let Some(existing) = processor_account::Entity::find_by_id(processor_account_id).one(&*txn).await? {
        return Ok(if existing.application_id == application_id {
            Linked::Unchanged
        } else {
            Linked::TakenBy(existing.application_id)
        });
    }
    processor_account::Entity::delete_many()
        .filter(processor_account::Column::ApplicationId.eq(application_id))
        .exec(&*txn)
        .await?;
    processor_account::Entity::insert(processor_account::ActiveModel {
        processor_account_id: Set(processor_account_id.to_string()),
        application_id: Set(application_id),
        created_at: Set(crate::clock::now()),
    })
    .exec_without_returning(&*txn)
    .await?;
    pending_audit_event::Entity::insert(audit.into_active_model()).exec_without_returning(&*txn).await?;
    txn.commit().await?;
    Ok(Linked::Linked)
}

/// The application a processor account belongs to.
pub async fn processor_account_application(catalog: &Db, processor_account_id: &str) -> Result<Option<Uuid>, DbErr> {
    let row = processor_account::Entity::find_by_id(processor_account_id).one(&catalog.conn).await?;
    Ok(row.map(|r| r.application_id))
}

/// The processor account linked to an application.
pub async fn application_processor_account(catalog: &Db, application_id: Uuid) -> Result<Option<String>, DbErr> {
    let row = processor_account::Entity::find()
        .filter(processor_account::Column::ApplicationId.eq(application_id))
        .one(&catalog.conn)
        .await?;
    Ok(row.map(|r| r.processor_account_id))
}

/// Keeps a signed event no application claimed; a second delivery of it
/// changes nothing.
pub async fn record_unmatched_event(catalog: &Db, row: unmatched_processor_event::Model) -> Result<(), DbErr> {
    use sea_orm::sea_query::OnConflict;
    let txn = catalog.begin_write().await?;
    unmatched_processor_event::Entity::insert(row.into_active_model())
        .on_conflict(OnConflict::column(unmatched_processor_event::Column::EventId).do_nothing().to_owned())
        .exec_without_returning(&*txn)
        .await?;
    txn.commit().await
}
