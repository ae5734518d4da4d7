//! Every query of the catalog (accounts, the application directory, the
//! outbox of catalog audit rows, processor-account claims and verified links,
//! and the processor events no application's verified claim matched). Catalog rows are not tenant rows: the
//! directory is read across applications (routing, an account's list, the
//! CORS origin union), so these queries are raw entity queries, kept here,
//! the one module clippy's `disallowed_methods` allows them in.
#![allow(clippy::disallowed_methods)]

use entity::{
    account, application, pending_audit_event, processor_account, processor_account_claim, unmatched_processor_event,
};
use sea_orm::{
    sea_query::OnConflict, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::{Db, Page};
use crate::events::catalog::EventType;

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

/// Every region an application is pinned or moving to, with how many.
pub async fn regions_in_use(catalog: &Db) -> Result<Vec<(String, u64)>, DbErr> {
    let mut in_use = std::collections::BTreeMap::<String, u64>::new();
    for column in [application::Column::Region, application::Column::MovingTo] {
        let counts: Vec<(Option<String>, i64)> = application::Entity::find()
            .select_only()
            .column(column)
            .column_as(application::Column::Id.count(), "applications")
            .group_by(column)
            .into_tuple()
            .all(&catalog.conn)
            .await?;
        for (region, count) in counts {
            if let Some(region) = region {
                *in_use.entry(region).or_default() += count as u64;
            }
        }
    }
    Ok(in_use.into_iter().collect())
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

/// The application's catalog rows, its account's and its own, from one
/// database with the catalog's schema into another (an application archive,
/// and back). Into the catalog, `place` puts it in its region and shard and
/// an account already there is kept. `false`: `to` has the application.
pub async fn copy_application_rows(
    from: &impl ConnectionTrait,
    to: &impl ConnectionTrait,
    id: Uuid,
    place: Option<(&str, Option<String>)>,
) -> Result<bool, DbErr> {
    let Some(mut row) = application::Entity::find_by_id(id).one(from).await? else {
        return Err(DbErr::RecordNotFound(format!("application {id}")));
    };
    if application::Entity::find_by_id(id).one(to).await?.is_some() {
        return Ok(false);
    }
    let account = account::Entity::find_by_id(row.account_id).one(from).await?;
    let account = account.ok_or_else(|| DbErr::RecordNotFound(format!("account {}", row.account_id)))?;
    let keep = OnConflict::column(account::Column::Id).do_nothing().to_owned();
    account::Entity::insert(account::ActiveModel::from(account)).on_conflict(keep).do_nothing().exec(to).await?;
    if let Some((region, shard)) = place {
        (row.region, row.shard, row.moving_to, row.moving_to_shard) = (region.to_string(), shard, None, None);
    }
    application::Entity::insert(application::ActiveModel::from(row)).exec_without_returning(to).await?;
    Ok(true)
}

/// Every application's id, oldest first.
pub async fn application_ids(catalog: &Db) -> Result<Vec<Uuid>, DbErr> {
    let ids = application::Entity::find().select_only().column(application::Column::Id);
    ids.order_by_asc(application::Column::CreatedAt).into_tuple().all(&catalog.conn).await
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
/// change in one catalog transaction; [`crate::areas::applications::relay_pending_audit`] later moves
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

/// What recording an application's claim of a processor account did.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The claim is recorded (replacing the application's earlier claim and
    /// dropping the verified link of that earlier account, if any).
    Claimed,
    /// The application had claimed this account already: nothing changed.
    Unchanged,
}

/// Records `application_id`'s claim of `processor_account_id`, with the
/// audit row of the change in the same catalog transaction (relayed into the
/// regional chain like a settings change). One claim per application; any
/// number of applications may claim one account, so nothing here depends on
/// (or reveals) another application's claim or link. A claim of another
/// account removes the application's verified link: a verified link stays
/// only while its application still claims its account.
pub async fn claim_processor_account(
    catalog: &Db,
    application_id: Uuid,
    processor_account_id: &str,
    audit: pending_audit_event::Model,
) -> Result<Claimed, DbErr> {
    use sea_orm::sea_query::OnConflict;
    let txn = catalog.begin_write().await?;
    // `FOR UPDATE` on PostgreSQL (SQLite has one writer): a verification of
    // this application's claim waits for this transaction, and this one for it.
    let existing = processor_account_claim::Entity::find_by_id(application_id).lock_exclusive().one(&*txn).await?;
    if existing.is_some_and(|claim| claim.processor_account_id == processor_account_id) {
        return Ok(Claimed::Unchanged);
    }
    let row = processor_account_claim::ActiveModel {
        application_id: Set(application_id),
        processor_account_id: Set(processor_account_id.to_string()),
        created_at: Set(crate::clock::now()),
    };
    let upsert = OnConflict::column(processor_account_claim::Column::ApplicationId)
        .update_columns([
            processor_account_claim::Column::ProcessorAccountId,
            processor_account_claim::Column::CreatedAt,
        ])
        .to_owned();
    processor_account_claim::Entity::insert(row).on_conflict(upsert).exec_without_returning(&*txn).await?;
    processor_account::Entity::delete_many()
        .filter(processor_account::Column::ApplicationId.eq(application_id))
        .filter(processor_account::Column::ProcessorAccountId.ne(processor_account_id))
        .exec(&*txn)
        .await?;
    pending_audit_event::Entity::insert(audit.into_active_model()).exec_without_returning(&*txn).await?;
    txn.commit().await?;
    Ok(Claimed::Claimed)
}

/// What a verification of a claim did.
#[derive(Debug, PartialEq, Eq)]
pub enum Verified {
    /// The application does not claim the account: nothing written.
    NotClaimed,
    /// The link was verified already.
    Unchanged,
    /// The link is written now; `displaced` is the application whose
    /// verified link of the account it replaced (the account's metadata now
    /// names another application that claims it).
    Linked { displaced: Option<Uuid> },
}

/// Makes `application_id`'s claim of `processor_account_id` the verified
/// link, if the application still claims the account; called only for a
/// correctly signed processor event whose account metadata names the
/// application. The audit rows (`verified` for the application, `unverified`
/// for a displaced one) commit with the link. A concurrent verification of
/// the same account for another application may lose on the primary key:
/// its unique violation is returned as it is (the caller retries). A link
/// already verified is answered from a plain read: a claim changed meanwhile
/// is harmless, since the status shows a projection only while its account
/// is the claimed and verified one.
pub async fn verify_processor_account(
    catalog: &Db,
    application_id: Uuid,
    processor_account_id: &str,
    audit: &dyn Fn(Uuid, &str) -> pending_audit_event::Model,
) -> Result<(Verified, Vec<pending_audit_event::Model>), DbErr> {
    // Every event of a verified account comes here: answer those without the write lock.
    if application_processor_account(catalog, application_id).await? == Some((processor_account_id.to_string(), true)) {
        return Ok((Verified::Unchanged, Vec::new()));
    }
    let txn = catalog.begin_write().await?;
    let claim = processor_account_claim::Entity::find_by_id(application_id).lock_exclusive().one(&*txn).await?;
    if claim.is_none_or(|claim| claim.processor_account_id != processor_account_id) {
        return Ok((Verified::NotClaimed, Vec::new()));
    }
    let existing = processor_account::Entity::find_by_id(processor_account_id).one(&*txn).await?;
    if existing.as_ref().is_some_and(|link| link.application_id == application_id) {
        return Ok((Verified::Unchanged, Vec::new()));
    }
    let displaced = existing.map(|link| link.application_id);
    processor_account::Entity::delete_many()
        .filter(
            processor_account::Column::ProcessorAccountId
                .eq(processor_account_id)
                .or(processor_account::Column::ApplicationId.eq(application_id)),
        )
        .exec(&*txn)
        .await?;
    processor_account::Entity::insert(processor_account::ActiveModel {
        processor_account_id: Set(processor_account_id.to_string()),
        application_id: Set(application_id),
        created_at: Set(crate::clock::now()),
    })
    .exec_without_returning(&*txn)
    .await?;
    let mut audits = vec![audit(application_id, EventType::BillingConnectedAccountVerified.as_str())];
    if let Some(displaced) = displaced {
        audits.push(audit(displaced, EventType::BillingConnectedAccountUnverified.as_str()));
    }
    for row in &audits {
        pending_audit_event::Entity::insert(row.clone().into_active_model()).exec_without_returning(&*txn).await?;
    }
    txn.commit().await?;
    Ok((Verified::Linked { displaced }, audits))
}

/// The application's claim (the account it asked for) and whether that
/// claim is the verified link.
pub async fn application_processor_account(
    catalog: &Db,
    application_id: Uuid,
) -> Result<Option<(String, bool)>, DbErr> {
    let Some(claim) = processor_account_claim::Entity::find_by_id(application_id).one(&catalog.conn).await? else {
        return Ok(None);
    };
    let verified = processor_account::Entity::find_by_id(claim.processor_account_id.as_str())
        .filter(processor_account::Column::ApplicationId.eq(application_id))
        .one(&catalog.conn)
        .await?
        .is_some();
    Ok(Some((claim.processor_account_id, verified)))
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
