//! Taking a directory's records away: a deleted resource out of every
//! group that holds it, a deleted directory's resources, and a user's
//! records at their erasure. Kept apart from [`super::resources`] so that
//! the users' erasure can call it without importing provisioning.
use entity::{scim_directory, scim_group_member, scim_resource};
use sea_orm::{ActiveValue::Set, ColumnTrait, Condition, DbErr, IntoActiveModel, QueryFilter, QuerySelect};
use serde_json::Value;
use uuid::Uuid;

use crate::{
    clock,
    storage::{TenantConn, TenantTxn},
};

/// Deletes resources and takes them out of every group that holds them
/// (its `members` and version change too).
pub async fn remove_everywhere(txn: &mut TenantTxn, ids: &[Uuid]) -> Result<(), DbErr> {
    let holders: Vec<Uuid> = txn
        .find::<scim_group_member::Entity>()
        .select_only()
        .column(scim_group_member::Column::GroupId)
        .filter(scim_group_member::Column::MemberId.is_in(ids.iter().copied()))
        .distinct()
        .into_tuple()
        .all(txn.conn())
        .await?;
    for group_id in holders.into_iter().filter(|g| !ids.contains(g)) {
        let Some(group) = txn.find_by_id::<scim_resource::Entity>(group_id).one(txn.conn()).await? else { continue };
        let mut attributes = group.attributes.as_object().cloned().unwrap_or_default();
        if let Some(Value::Array(members)) = attributes.get_mut("members") {
            members.retain(|m| {
                let id = m.get("value").and_then(Value::as_str).and_then(|v| Uuid::parse_str(v).ok());
                !id.is_some_and(|id| ids.contains(&id))
            });
            if members.is_empty() {
                attributes.remove("members");
            }
        }
        let version = group.version + 1;
        let mut row = group.into_active_model();
        row.attributes = Set(Value::Object(attributes));
        row.version = Set(version);
        row.updated_at = Set(clock::now());
        txn.update(row).await?;
    }
    let condition = Condition::any()
        .add(scim_group_member::Column::MemberId.is_in(ids.iter().copied()))
        .add(scim_group_member::Column::GroupId.is_in(ids.iter().copied()));
    txn.delete::<scim_group_member::Entity>(condition).await?;
    txn.delete::<scim_resource::Entity>(scim_resource::Column::Id.is_in(ids.iter().copied())).await?;
    Ok(())
}

/// A directory's resources go with it; answers how many.
pub async fn forget_directory(txn: &mut TenantTxn, directory_id: Uuid) -> Result<u64, DbErr> {
    let ids: Vec<Uuid> = txn
        .find::<scim_resource::Entity>()
        .select_only()
        .column(scim_resource::Column::Id)
        .filter(scim_resource::Column::DirectoryId.eq(directory_id))
        .into_tuple()
        .all(txn.conn())
        .await?;
    for chunk in ids.chunks(500) {
        remove_everywhere(txn, chunk).await?;
    }
    Ok(ids.len() as u64)
}

/// A user's erasure: the directory records of them go (they hold their
/// name and addresses); answers how many.
pub async fn forget_user(txn: &mut TenantTxn, user_id: Uuid) -> Result<u64, DbErr> {
    let ids: Vec<Uuid> = txn
        .find::<scim_resource::Entity>()
        .select_only()
        .column(scim_resource::Column::Id)
        .filter(scim_resource::Column::UserId.eq(user_id))
        .into_tuple()
        .all(txn.conn())
        .await?;
    remove_everywhere(txn, &ids).await?;
    Ok(ids.len() as u64)
}

/// An organization's directories go with it, with their records; answers
/// how many directories.
pub async fn forget_directories_of(txn: &mut TenantTxn, organization_id: Uuid) -> Result<u64, DbErr> {
    let ids: Vec<Uuid> = txn
        .find::<scim_directory::Entity>()
        .select_only()
        .column(scim_directory::Column::Id)
        .filter(scim_directory::Column::OrganizationId.eq(organization_id))
        .into_tuple()
        .all(txn.conn())
        .await?;
    for id in &ids {
        forget_directory(txn, *id).await?;
    }
    txn.delete::<scim_directory::Entity>(scim_directory::Column::OrganizationId.eq(organization_id)).await?;
    Ok(ids.len() as u64)
}
