//! A directory's Users and Groups, and what they do in Gatehouse.
//!
//! - A User with an email (its primary one, else its first, else a
//!   `userName` that is one) is a Gatehouse user: a new one, or the
//!   application's user with that email when the organization has verified
//!   the email's domain or already has them as a member. Any other taking of
//!   an existing account is refused (409 `uniqueness`): a directory cannot
//!   claim people outside its organization.
//! - An active User is a member of the directory's organization, with the
//!   role of the first of the directory's `group_roles` that names one of
//!   its groups, else `member`, granted through the same grant path and
//!   separation-of-duties policies as every grant.
//! - Deprovisioning (`active` set false, or DELETE) ends that membership and
//!   revokes every session of the user in the same transaction: each
//!   refresh token is refused from the commit on, on every node, because
//!   refresh reads the database.
//!
//! Every write is one transaction with its audit rows; a refusal changes
//! nothing. `If-Match` is checked against the version read in it.
use std::collections::BTreeSet;

use entity::{scim_directory, scim_group_member, scim_resource};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::{
    filter::{lookup, Filter, Indexed},
    group_roles_of,
    patch::PatchRequest,
    records,
    schema::{self, Kind},
    ScimError,
};
use crate::{
    areas::{memberships, sessions, sod::Grant, unless_unique, users},
    clock,
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

/// A directory as its requests see it: its row and its base URL.
pub struct Directory {
    pub row: scim_directory::Model,
    pub base_url: String,
}

/// The resource as answered (RFC 7643 section 3): its attributes with
/// `schemas`, `id` and `meta`.
pub fn render(row: &scim_resource::Model, base_url: &str) -> Value {
    let kind = Kind::of(&row.kind).unwrap_or(Kind::User);
    let mut out = row.attributes.as_object().cloned().unwrap_or_default();
    out.insert("schemas".into(), json!([kind.schema_urn()]));
    out.insert("id".into(), json!(row.id));
    out.insert(
        "meta".into(),
        json!({
            "resourceType": kind.as_str(),
            "created": row.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "lastModified": row.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "location": format!("{base_url}/{}/{}", kind.endpoint(), row.id),
            "version": etag(row),
        }),
    );
    Value::Object(out)
}

pub fn etag(row: &scim_resource::Model) -> String {
    format!("W/\"{}\"", row.version)
}

fn of_directory(db: &impl TenantConn, directory_id: Uuid, kind: Kind) -> sea_orm::Select<scim_resource::Entity> {
    db.find::<scim_resource::Entity>()
        .filter(scim_resource::Column::DirectoryId.eq(directory_id))
        .filter(scim_resource::Column::Kind.eq(kind.as_str()))
}

pub async fn find(
    db: &impl TenantConn,
    directory_id: Uuid,
    kind: Kind,
    raw_id: &str,
) -> Result<scim_resource::Model, ScimError> {
    one(db, directory_id, kind, raw_id, false).await
}

/// The resource, locked until the transaction ends: of two changes of one
/// resource, the second reads what the first wrote (and its version).
async fn find_for_change(
    txn: &TenantTxn,
    directory_id: Uuid,
    kind: Kind,
    raw_id: &str,
) -> Result<scim_resource::Model, ScimError> {
    one(txn, directory_id, kind, raw_id, true).await
}

async fn one(
    db: &impl TenantConn,
    directory_id: Uuid,
    kind: Kind,
    raw_id: &str,
    locked: bool,
) -> Result<scim_resource::Model, ScimError> {
    let missing = || ScimError::not_found(kind.as_str(), raw_id);
    let id = Uuid::parse_str(raw_id).map_err(|_| missing())?;
    let mut query = of_directory(db, directory_id, kind).filter(scim_resource::Column::Id.eq(id));
    if locked {
        query = query.lock_exclusive();
    }
    query.one(db.conn()).await?.ok_or_else(missing)
}

/// One page of a list: RFC 7644's 1-based `startIndex` and `count`.
pub struct Window {
    pub start_index: u64,
    pub count: u64,
}

/// The resources a filter selects, one window of them, and how many it
/// selects in all. The lookups a directory makes before it creates
/// (`userName eq`, `externalId eq`) read an index; other filters read the
/// directory's resources of that kind.
pub async fn list(
    db: &impl TenantConn,
    directory: &Directory,
    kind: Kind,
    filter: Option<&Filter>,
    window: Window,
) -> Result<(u64, Vec<scim_resource::Model>), ScimError> {
    let ordered = of_directory(db, directory.row.id, kind)
        .order_by_asc(scim_resource::Column::CreatedAt)
        .order_by_asc(scim_resource::Column::Id);
    let skip = window.start_index.saturating_sub(1);
    let Some(filter) = filter else {
        let total = ordered.clone().count(db.conn()).await?;
        let rows = ordered.offset(skip).limit(window.count).all(db.conn()).await?;
        return Ok((total, rows));
    };
    let selected = match filter.indexed(kind.key_attribute()) {
        Some(Indexed::Key(key)) => ordered.filter(scim_resource::Column::MatchKey.eq(key)),
        Some(Indexed::ExternalId(id)) => ordered.filter(scim_resource::Column::ExternalId.eq(id)),
        None => ordered,
    };
    let matching: Vec<scim_resource::Model> = selected
        .all(db.conn())
        .await?
        .into_iter()
        .filter(|row| render(row, &directory.base_url).as_object().is_some_and(|o| filter.matches(o)))
        .collect();
    let total = matching.len() as u64;
    Ok((total, matching.into_iter().skip(skip as usize).take(window.count as usize).collect()))
}

/// A directory's answer to a write: the resource as stored.
pub async fn create(
    scope: &TenantScope,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    kind: Kind,
    sent: &Map<String, Value>,
) -> Result<scim_resource::Model, ScimError> {
    let attributes = schema::normalize(kind, sent)?;
    let mut txn = scope.begin().await?;
    let stored = store(&mut txn, directory, policies, kind, None, attributes).await?;
    txn.commit().await?;
    Ok(stored)
}

/// What a PUT or a PATCH makes of the resource.
pub enum Change<'a> {
    Replace(&'a Map<String, Value>),
    Patch(&'a PatchRequest),
}

pub async fn change(
    scope: &TenantScope,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    kind: Kind,
    id: &str,
    change: Change<'_>,
    if_match: Option<&str>,
) -> Result<scim_resource::Model, ScimError> {
    let mut txn = scope.begin().await?;
    let existing = find_for_change(&txn, directory.row.id, kind, id).await?;
    check_if_match(&existing, if_match)?;
    let current = existing.attributes.as_object().cloned().unwrap_or_default();
    let attributes = match change {
        Change::Replace(sent) => schema::normalize(kind, sent)?,
        Change::Patch(request) => request.apply(kind, &current)?,
    };
    let stored = store(&mut txn, directory, policies, kind, Some(existing), attributes).await?;
    txn.commit().await?;
    Ok(stored)
}

pub async fn delete(
    scope: &TenantScope,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    kind: Kind,
    id: &str,
    if_match: Option<&str>,
) -> Result<(), ScimError> {
    let mut txn = scope.begin().await?;
    let existing = find_for_change(&txn, directory.row.id, kind, id).await?;
    check_if_match(&existing, if_match)?;
    if let Some(user_id) = existing.user_id {
        deprovision(&mut txn, directory, &existing, user_id).await?;
    }
    let members = member_rows(&txn, existing.id).await?;
    records::remove_everywhere(&mut txn, &[existing.id]).await?;
    let event = match kind {
        Kind::User => EventType::ScimUserDeleted,
        Kind::Group => EventType::ScimGroupDeleted,
    };
    txn.audit(event, Some(existing.id), audit_data(&existing, &[])).await?;
    for member in members {
        resync(&mut txn, directory, policies, member).await?;
    }
    txn.commit().await?;
    Ok(())
}

fn check_if_match(row: &scim_resource::Model, if_match: Option<&str>) -> Result<(), ScimError> {
    match if_match {
        None => Ok(()),
        Some(given) if given.split(',').map(str::trim).any(|tag| tag == "*" || tag == etag(row)) => Ok(()),
        Some(_) => Err(ScimError::precondition_failed()),
    }
}

fn audit_data(row: &scim_resource::Model, changed: &[&str]) -> Value {
    json!({
        "scim_directory_id": row.directory_id,
        "user_id": row.user_id,
        "active": row.active,
        "changed": changed,
    })
}

/// Writes a resource (new when `existing` is none) and what follows from
/// it in the organization, in the caller's transaction.
async fn store(
    txn: &mut TenantTxn,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    kind: Kind,
    existing: Option<scim_resource::Model>,
    attributes: Map<String, Value>,
) -> Result<scim_resource::Model, ScimError> {
    let key = attributes[kind.key_attribute()].as_str().unwrap_or_default().to_lowercase();
    let external_id = attributes.get("externalId").and_then(Value::as_str).map(str::to_owned);
    let active = kind == Kind::Group || attributes.get("active") != Some(&Value::Bool(false));
    let now = clock::now();
    let id = existing.as_ref().map(|e| e.id).unwrap_or_else(Uuid::now_v7);
    let members = match kind {
        Kind::Group => checked_members(txn, directory, id, &attributes).await?,
        Kind::User => BTreeSet::new(),
    };
    let user_id = match (kind, existing.as_ref().and_then(|e| e.user_id)) {
        (Kind::User, None) => link_user(txn, directory, id, &attributes).await?,
        (_, linked) => linked,
    };
    let changed: Vec<&str> = match &existing {
        None => Vec::new(),
        Some(before) => {
            let before = before.attributes.as_object().cloned().unwrap_or_default();
            let names = before.keys().chain(attributes.keys()).collect::<BTreeSet<_>>();
            let names = names.into_iter().filter(|n| before.get(*n) != attributes.get(*n));
            names.filter_map(|n| schema::find(kind, n).map(|a| a.name)).collect()
        }
    };
    let taken =
        || ScimError::uniqueness(format!("the directory has a {} with this {}", kind.as_str(), kind.key_attribute()));
    let stored = match existing.clone() {
        None => {
            let row = scim_resource::Model {
                id,
                application_id: txn.application_id(),
                directory_id: directory.row.id,
                kind: kind.as_str().to_string(),
                match_key: key,
                external_id,
                user_id,
                active,
                attributes: Value::Object(attributes),
                version: 1,
                created_at: now,
                updated_at: now,
            };
            txn.insert(scim_resource::ActiveModel::from(row.clone())).await.map_err(unless_unique(taken()))?;
            row
        }
        Some(before) => {
            let mut row = before.clone().into_active_model();
            row.match_key = Set(key);
            row.external_id = Set(external_id);
            row.user_id = Set(user_id);
            row.active = Set(active);
            row.attributes = Set(Value::Object(attributes));
            row.version = Set(before.version + 1);
            row.updated_at = Set(now);
            txn.update(row).await.map_err(unless_unique(taken()))?
        }
    };
    let event = match (kind, &existing) {
        (Kind::User, None) => EventType::ScimUserCreated,
        (Kind::User, Some(_)) => EventType::ScimUserUpdated,
        (Kind::Group, None) => EventType::ScimGroupCreated,
        (Kind::Group, Some(_)) => EventType::ScimGroupUpdated,
    };
    txn.audit(event, Some(stored.id), audit_data(&stored, &changed)).await?;
    match kind {
        Kind::User => sync_user(txn, directory, policies, &stored).await?,
        Kind::Group => {
            let renamed = existing.as_ref().is_some_and(|e| e.match_key != stored.match_key);
            for member in replace_members(txn, stored.id, &members, renamed).await? {
                resync(txn, directory, policies, member).await?;
            }
        }
    }
    Ok(stored)
}

/// Makes a group's member rows `members`; answers the resources whose role
/// may have changed: those that joined or left, or every one of both when
/// the group was renamed (`group_roles` names groups).
async fn replace_members(
    txn: &mut TenantTxn,
    group_id: Uuid,
    members: &BTreeSet<Uuid>,
    renamed: bool,
) -> Result<BTreeSet<Uuid>, DbErr> {
    let before = member_rows(txn, group_id).await?;
    txn.delete::<scim_group_member::Entity>(scim_group_member::Column::GroupId.eq(group_id)).await?;
    let application_id = txn.application_id();
    let rows = members.iter().map(|member| {
        scim_group_member::ActiveModel::from(scim_group_member::Model { group_id, member_id: *member, application_id })
    });
    txn.insert_many(rows).await?;
    Ok(if renamed {
        before.union(members).copied().collect()
    } else {
        before.symmetric_difference(members).copied().collect()
    })
}

/// A Group's members: each `value` a resource of the directory, not the
/// group itself.
async fn checked_members(
    txn: &TenantTxn,
    directory: &Directory,
    group_id: Uuid,
    attributes: &Map<String, Value>,
) -> Result<BTreeSet<Uuid>, ScimError> {
    let listed = attributes.get("members").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut ids = BTreeSet::new();
    for (i, member) in listed.iter().enumerate() {
        let value = member.as_object().and_then(|m| lookup(m, "value")).and_then(Value::as_str);
        let id = value.and_then(|v| Uuid::parse_str(v).ok()).filter(|id| *id != group_id);
        let Some(id) = id else {
            return Err(ScimError::invalid_value(format!(
                "`members[{i}].value` must name a user or group of the directory"
            )));
        };
        ids.insert(id);
    }
    let found: Vec<Uuid> = txn
        .find::<scim_resource::Entity>()
        .select_only()
        .column(scim_resource::Column::Id)
        .filter(scim_resource::Column::DirectoryId.eq(directory.row.id))
        .filter(scim_resource::Column::Id.is_in(ids.iter().copied()))
        .into_tuple()
        .all(txn.conn())
        .await?;
    if let Some(missing) = ids.iter().find(|id| !found.contains(id)) {
        return Err(ScimError::invalid_value(format!("member `{missing}` is not a user or group of the directory")));
    }
    Ok(ids)
}

/// The email a User stands for: its primary email, else its first, else
/// its `userName` when that is an email.
fn email_of(attributes: &Map<String, Value>) -> Option<String> {
    let emails = attributes.get("emails").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let primary = emails.iter().find(|e| e.get("primary") == Some(&Value::Bool(true))).or(emails.first());
    let candidates = [primary.and_then(|e| e.get("value")), attributes.get("userName")];
    candidates.into_iter().flatten().filter_map(Value::as_str).find_map(users::normalize_email)
}

/// The Gatehouse user a User stands for, made or found; none while it has
/// no email.
async fn link_user(
    txn: &mut TenantTxn,
    directory: &Directory,
    scim_id: Uuid,
    attributes: &Map<String, Value>,
) -> Result<Option<Uuid>, ScimError> {
    let Some(email) = email_of(attributes) else { return Ok(None) };
    let Some(user) = users::find_by_email(txn, &email).await? else {
        let user = users::insert(txn, email, None, Map::new()).await?;
        return Ok(Some(user.id));
    };
    let organization_id = directory.row.organization_id;
    let member = memberships::find(txn, organization_id, user.id).await?.is_some();
    if !member && !crate::areas::sso_domains::verified_by(txn, organization_id, &email).await? {
        return Err(ScimError::uniqueness(
            "The application has a user with this email. A directory takes over an existing user only when its organization has verified the email's domain or already has the user as a member.",
        ));
    }
    let other = of_directory(txn, directory.row.id, Kind::User)
        .filter(scim_resource::Column::UserId.eq(user.id))
        .filter(scim_resource::Column::Id.ne(scim_id))
        .one(txn.conn())
        .await?;
    if other.is_some() {
        return Err(ScimError::uniqueness("Another user of the directory has this email."));
    }
    Ok(Some(user.id))
}

/// The role a User's groups give: the first of the directory's
/// `group_roles` naming one of them, else `member`.
async fn role_of(txn: &TenantTxn, directory: &Directory, scim_id: Uuid) -> Result<String, DbErr> {
    let roles = group_roles_of(&directory.row);
    if roles.is_empty() {
        return Ok(memberships::MEMBER.to_string());
    }
    let groups: Vec<Uuid> = txn
        .find::<scim_group_member::Entity>()
        .select_only()
        .column(scim_group_member::Column::GroupId)
        .filter(scim_group_member::Column::MemberId.eq(scim_id))
        .into_tuple()
        .all(txn.conn())
        .await?;
    let names: Vec<String> = txn
        .find::<scim_resource::Entity>()
        .select_only()
        .column(scim_resource::Column::MatchKey)
        .filter(scim_resource::Column::Id.is_in(groups))
        .into_tuple()
        .all(txn.conn())
        .await?;
    let role = roles.into_iter().find(|r| names.contains(&r.group.to_lowercase())).map(|r| r.role);
    Ok(role.unwrap_or_else(|| memberships::MEMBER.to_string()))
}

/// Brings the organization in line with a User: a member with its role
/// while active; deprovisioned while not (once there is something to end).
async fn sync_user(
    txn: &mut TenantTxn,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    resource: &scim_resource::Model,
) -> Result<(), ScimError> {
    let Some(user_id) = resource.user_id else { return Ok(()) };
    if resource.active {
        // Locked first, so that the groups read below include every change
        // of them that committed before (two group changes take turns here).
        memberships::lock_organization(txn, directory.row.organization_id).await?;
        let role = role_of(txn, directory, resource.id).await?;
        let grant = Grant { organization_id: directory.row.organization_id, user_id, role };
        memberships::set_role_in(txn, policies, grant).await?;
    } else {
        deprovision(txn, directory, resource, user_id).await?;
    }
    Ok(())
}

/// A User of a group that changed: its role again.
async fn resync(
    txn: &mut TenantTxn,
    directory: &Directory,
    policies: &[entity::sod_policy::Model],
    member: Uuid,
) -> Result<(), ScimError> {
    let row = txn.find_by_id::<scim_resource::Entity>(member).one(txn.conn()).await?;
    match row {
        Some(row) if row.kind == Kind::User.as_str() && row.active => sync_user(txn, directory, policies, &row).await,
        _ => Ok(()),
    }
}

/// Ends the user's membership and every session of theirs; audited when
/// there was either to end.
async fn deprovision(
    txn: &mut TenantTxn,
    directory: &Directory,
    resource: &scim_resource::Model,
    user_id: Uuid,
) -> Result<(), ScimError> {
    let organization_id = directory.row.organization_id;
    let why = json!({"scim_directory_id": directory.row.id});
    let ended = memberships::end_in(txn, organization_id, user_id, why).await?;
    let revoked = sessions::revoke_all_of_user_in(txn, user_id, "deprovisioned").await?;
    if !ended && revoked == 0 {
        return Ok(());
    }
    let data = json!({
        "scim_directory_id": directory.row.id,
        "scim_user_id": resource.id,
        "organization_id": organization_id,
        "membership_ended": ended,
        "sessions_revoked": revoked,
    });
    txn.audit(EventType::ScimUserDeprovisioned, Some(user_id), data).await?;
    Ok(())
}

/// The resources a group holds, as rows.
async fn member_rows(txn: &TenantTxn, group_id: Uuid) -> Result<BTreeSet<Uuid>, DbErr> {
    let ids: Vec<Uuid> = txn
        .find::<scim_group_member::Entity>()
        .select_only()
        .column(scim_group_member::Column::MemberId)
        .filter(scim_group_member::Column::GroupId.eq(group_id))
        .into_tuple()
        .all(txn.conn())
        .await?;
    Ok(ids.into_iter().collect())
}
