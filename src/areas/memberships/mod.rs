//! Memberships: a user's role in an organization. Three rules hold on every
//! path that writes one:
//!
//! - a role is granted only through `grant`, which passes the
//!   separation-of-duties policies ([`super::sod::admit`]) in the same
//!   transaction;
//! - where an end user grants the role (an invitation, an SSO domain's
//!   auto-join), they may grant only what [`may_grant`] allows their role;
//! - an organization that has an owner never loses its last one (removal,
//!   role change, an access review's revocation): `keep_an_owner`.
//!
//! Every write locks the organization's row first (then, for a grant a
//! policy names, the user's), so two changes of one organization take turns
//! on PostgreSQL as they do on SQLite's one writer, and the second counts
//! what the first left.
pub mod view;

use entity::{membership, organization, session, sod_policy};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    organizations::{self, OrganizationError},
    sessions,
    sod::{self, Grant},
    unless_unique, users,
    validate::Issues,
};
use crate::{
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope, TenantTxn},
};

pub const OWNER: &str = "owner";
pub const ADMIN: &str = "admin";
pub const MEMBER: &str = "member";

/// Who may grant what, in one place: an `owner` may grant any role, an
/// `admin` only `member`, any other role nothing. Every path on which an
/// end user grants a role asks it: inviting (at the invitation), claiming
/// an SSO domain with an auto-join role (at the claim, and again at each
/// auto-join: [`super::sso_domains::auto_join`]). The application's own
/// secret key (`/v1/organizations/{id}/members`) is not an end user of
/// the organization and is not bound by it.
pub fn may_grant(granter_role: &str, role: &str) -> bool {
    match granter_role {
        OWNER => true,
        ADMIN => role == MEMBER,
        _ => false,
    }
}

/// An end user acting on their session's active organization as one of
/// its owners or admins (team invitations, SSO domains).
pub struct Manager {
    pub organization_id: Uuid,
    pub user_id: Uuid,
    /// `owner` or `admin`, as the membership is now (not as the token says).
    pub role: String,
}

/// Why a caller may not manage: 403 either way.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the session has no active organization")]
    NoActiveOrganization,
    #[error("the caller's role in the organization does not allow this")]
    InsufficientRole,
    /// An owner's alone (an SSO connection: who controls it can sign in
    /// as anyone at the organization's domains).
    #[error("only the organization's owners may do this")]
    OwnersOnly,
    /// A role above what the caller may grant ([`may_grant`]).
    #[error("the caller's role `{granter}` may not grant the role `{role}`")]
    MayNotGrant { granter: String, role: String },
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<Refusal> for ApiError {
    fn from(err: Refusal) -> Self {
        match err {
            Refusal::NoActiveOrganization => ApiError::new(
                Code::NoActiveOrganization,
                "The session has no active organization; activate one first (POST /v1/auth/organizations/{id}/activate).",
            ),
            Refusal::InsufficientRole => ApiError::new(
                Code::InsufficientRole,
                "Only the organization's owners and admins may do this.",
            ),
            Refusal::OwnersOnly => ApiError::new(Code::InsufficientRole, "Only the organization's owners may do this."),
            Refusal::MayNotGrant { granter, role } => ApiError::new(
                Code::InsufficientRole,
                format!(
                    "An {granter} may not grant the role `{role}`: an owner may grant any role, an admin only `member`."
                ),
            ),
            Refusal::Db(err) => err.into(),
        }
    }
}

/// The caller as a manager of the session's active organization (the
/// token's `org`): an `owner` or `admin` membership there now.
pub async fn manager(
    db: &impl TenantConn,
    user_id: Uuid,
    active_organization: Option<Uuid>,
) -> Result<Manager, Refusal> {
    let organization_id = active_organization.ok_or(Refusal::NoActiveOrganization)?;
    let membership = find(db, organization_id, user_id).await?.ok_or(Refusal::InsufficientRole)?;
    if membership.role != OWNER && membership.role != ADMIN {
        return Err(Refusal::InsufficientRole);
    }
    Ok(Manager { organization_id, user_id, role: membership.role })
}

/// The role a past grant decision is re-checked with ([`may_grant`]): an
/// SSO domain's auto-join (its claimer), an invitation's acceptance (its
/// inviter). `owner` while `granter` is an owner of the organization now;
/// otherwise (an admin, demoted, gone, or unknown: `None`) `admin`, the
/// least role that ever grants: such a grant stays good for `member` only.
pub async fn granting_role(
    db: &impl TenantConn,
    organization_id: Uuid,
    granter: Option<Uuid>,
) -> Result<&'static str, DbErr> {
    let Some(granter) = granter else { return Ok(ADMIN) };
    Ok(match find(db, organization_id, granter).await? {
        Some(membership) if membership.role == OWNER => OWNER,
        _ => ADMIN,
    })
}

impl Manager {
    /// Refuses (403 `insufficient_role`) an admin.
    pub fn owner_only(&self) -> Result<(), Refusal> {
        if self.role == OWNER {
            Ok(())
        } else {
            Err(Refusal::OwnersOnly)
        }
    }

    /// Refuses (403 `insufficient_role`) a role this manager may not grant.
    pub fn may_grant(&self, role: &str) -> Result<(), Refusal> {
        if may_grant(&self.role, role) {
            Ok(())
        } else {
            Err(Refusal::MayNotGrant { granter: self.role.clone(), role: role.to_string() })
        }
    }
}

fn of_organization(db: &impl TenantConn, organization_id: Uuid) -> sea_orm::Select<membership::Entity> {
    db.find::<membership::Entity>().filter(membership::Column::OrganizationId.eq(organization_id))
}

pub async fn find(
    db: &impl TenantConn,
    organization_id: Uuid,
    user_id: Uuid,
) -> Result<Option<membership::Model>, DbErr> {
    of_organization(db, organization_id).filter(membership::Column::UserId.eq(user_id)).one(db.conn()).await
}

/// The active organization and the user's role in it, if still a member.
pub async fn active_membership(
    db: &impl TenantConn,
    session: &session::Model,
) -> Result<Option<membership::Model>, DbErr> {
    let Some(organization_id) = session.active_organization_id else {
        return Ok(None);
    };
    find(db, organization_id, session.user_id).await
}

/// The organization, locked until the transaction ends.
pub async fn lock_organization(txn: &TenantTxn, id: Uuid) -> Result<organization::Model, OrganizationError> {
    txn.find_by_id::<organization::Entity>(id)
        .lock_exclusive()
        .one(txn.conn())
        .await?
        .ok_or(OrganizationError::NotFound(id))
}

fn checked_role(role: &str) -> Result<(), OrganizationError> {
    let mut issues = Issues::default();
    issues.role("role", role);
    Ok(issues.finish()?)
}

/// Writes a grant the policies admitted: a new membership, or the new role
/// of `existing`. The only writer of a membership's role.
async fn grant(
    txn: &mut TenantTxn,
    policies: &[sod_policy::Model],
    wanted: Grant,
    existing: Option<&membership::Model>,
) -> Result<membership::Model, OrganizationError> {
    if let Some(existing) = existing {
        keep_an_owner(txn, existing, Some(&wanted.role)).await?;
    }
    let admitted = sod::admit(txn, policies, wanted).await?;
    let Grant { organization_id, user_id, role } = admitted.grant().clone();
    let written = match existing {
        None => {
            let row = membership::Model {
                application_id: txn.application_id(),
                organization_id,
                user_id,
                role: role.clone(),
                created_at: crate::clock::now(),
            };
            txn.insert(membership::ActiveModel::from(row.clone()))
                .await
                .map_err(unless_unique(OrganizationError::AlreadyMember))?;
            let data = json!({"user_id": user_id, "role": role});
            txn.audit(EventType::OrganizationMembershipCreated, Some(organization_id), data).await?;
            row
        }
        Some(existing) => {
            txn.update_many(|q: UpdateMany<membership::Entity>| {
                q.col_expr(membership::Column::Role, Expr::value(role.clone()))
                    .filter(membership::Column::OrganizationId.eq(organization_id))
                    .filter(membership::Column::UserId.eq(user_id))
            })
            .await?;
            let data = json!({"user_id": user_id, "role": role, "previous_role": existing.role});
            txn.audit(EventType::OrganizationMembershipUpdated, Some(organization_id), data).await?;
            membership::Model { role, ..existing.clone() }
        }
    };
    admitted.report(txn).await?;
    Ok(written)
}

/// Refuses a change that would take the organization's last owner away
/// (`new_role` is the role the membership keeps; none when it goes).
async fn keep_an_owner(
    txn: &TenantTxn,
    membership: &membership::Model,
    new_role: Option<&str>,
) -> Result<(), OrganizationError> {
    if membership.role != OWNER || new_role == Some(OWNER) {
        return Ok(());
    }
    let other_owners = of_organization(txn, membership.organization_id)
        .filter(membership::Column::Role.eq(OWNER))
        .filter(membership::Column::UserId.ne(membership.user_id))
        .count(txn.conn())
        .await?;
    if other_owners == 0 {
        return Err(OrganizationError::LastOwner);
    }
    Ok(())
}

pub async fn add(
    scope: &TenantScope,
    policies: &[sod_policy::Model],
    organization_id: Uuid,
    user_id: Uuid,
    role: String,
) -> Result<membership::Model, OrganizationError> {
    checked_role(&role)?;
    let mut txn = scope.begin().await?;
    users::find(&txn, user_id).await.map_err(|_| OrganizationError::NoSuchUser)?;
    let added = join_in(&mut txn, policies, Grant { organization_id, user_id, role }).await?;
    txn.commit().await?;
    Ok(added)
}

/// A new membership in the caller's transaction (an invitation's
/// acceptance, for one): the organization locked, not a member yet, the
/// policies passed.
pub async fn join_in(
    txn: &mut TenantTxn,
    policies: &[sod_policy::Model],
    wanted: Grant,
) -> Result<membership::Model, OrganizationError> {
    lock_organization(txn, wanted.organization_id).await?;
    if find(txn, wanted.organization_id, wanted.user_id).await?.is_some() {
        return Err(OrganizationError::AlreadyMember);
    }
    grant(txn, policies, wanted, None).await
}

pub async fn update(
    scope: &TenantScope,
    policies: &[sod_policy::Model],
    organization_id: Uuid,
    user_id: Uuid,
    role: String,
) -> Result<membership::Model, OrganizationError> {
    checked_role(&role)?;
    let mut txn = scope.begin().await?;
    lock_organization(&txn, organization_id).await?;
    let existing = find(&txn, organization_id, user_id).await?.ok_or(OrganizationError::MembershipNotFound(user_id))?;
    let updated = grant(&mut txn, policies, Grant { organization_id, user_id, role }, Some(&existing)).await?;
    txn.commit().await?;
    Ok(updated)
}

/// Gives a user `wanted.role` in the caller's transaction: a new
/// membership, or the new role of the one they have (nothing when it is
/// already theirs), through the same grant and policies as every grant.
pub async fn set_role_in(
    txn: &mut TenantTxn,
    policies: &[sod_policy::Model],
    wanted: Grant,
) -> Result<(), OrganizationError> {
    lock_organization(txn, wanted.organization_id).await?;
    match find(txn, wanted.organization_id, wanted.user_id).await? {
        None => grant(txn, policies, wanted, None).await.map(|_| ()),
        Some(existing) if existing.role == wanted.role => Ok(()),
        Some(existing) => grant(txn, policies, wanted, Some(&existing)).await.map(|_| ()),
    }
}

/// Ends a user's membership, if they have one, in the caller's
/// transaction (a directory's deprovisioning); `why` joins the audit row.
/// Whether one ended.
pub async fn end_in(
    txn: &mut TenantTxn,
    organization_id: Uuid,
    user_id: Uuid,
    why: serde_json::Value,
) -> Result<bool, OrganizationError> {
    lock_organization(txn, organization_id).await?;
    let Some(membership) = find(txn, organization_id, user_id).await? else {
        return Ok(false);
    };
    remove_in(txn, &membership, why).await?;
    Ok(true)
}

pub async fn remove(scope: &TenantScope, organization_id: Uuid, user_id: Uuid) -> Result<(), OrganizationError> {
    let mut txn = scope.begin().await?;
    lock_organization(&txn, organization_id).await?;
    let membership =
        find(&txn, organization_id, user_id).await?.ok_or(OrganizationError::MembershipNotFound(user_id))?;
    remove_in(&mut txn, &membership, json!({})).await?;
    txn.commit().await?;
    Ok(())
}

/// Removes a membership in the caller's transaction (the organization
/// locked by the caller), unless it is the last owner; `why` joins the
/// audit row.
async fn remove_in(
    txn: &mut TenantTxn,
    membership: &membership::Model,
    why: serde_json::Value,
) -> Result<(), OrganizationError> {
    keep_an_owner(txn, membership, None).await?;
    txn.delete::<membership::Entity>(
        sea_orm::Condition::all()
            .add(membership::Column::OrganizationId.eq(membership.organization_id))
            .add(membership::Column::UserId.eq(membership.user_id)),
    )
    .await?;
    let mut data = json!({"user_id": membership.user_id, "role": membership.role});
    if let (Some(data), Some(why)) = (data.as_object_mut(), why.as_object()) {
        data.extend(why.clone());
    }
    txn.audit(EventType::OrganizationMembershipDeleted, Some(membership.organization_id), data).await?;
    Ok(())
}

/// An access review's revocation: the user's membership in the
/// organization as it is now goes (whatever its role since the snapshot),
/// with every session of the user that has the organization active; none
/// when the membership is already gone. Whether one was removed.
pub async fn revoke_in(
    txn: &mut TenantTxn,
    organization_id: Uuid,
    user_id: Uuid,
    review_item_id: Uuid,
) -> Result<bool, OrganizationError> {
    match lock_organization(txn, organization_id).await {
        Err(OrganizationError::NotFound(_)) => return Ok(false),
        other => other?,
    };
    let Some(membership) = find(txn, organization_id, user_id).await? else {
        return Ok(false);
    };
    remove_in(txn, &membership, json!({"access_review_item_id": review_item_id})).await?;
    let session_ids: Vec<Uuid> = txn
        .find::<session::Entity>()
        .select_only()
        .column(session::Column::Id)
        .filter(session::Column::UserId.eq(user_id))
        .filter(session::Column::ActiveOrganizationId.eq(organization_id))
        .filter(session::Column::RevokedAt.is_null())
        .into_tuple()
        .all(txn.conn())
        .await?;
    for id in session_ids {
        sessions::revoke_in(txn, id, "access_revoked").await?;
    }
    Ok(true)
}

pub async fn list(
    db: &impl TenantConn,
    organization_id: Uuid,
    page: Page,
) -> Result<(Vec<membership::Model>, bool), OrganizationError> {
    organizations::find(db, organization_id).await?;
    Ok(page
        .fetch(
            of_organization(db, organization_id)
                .order_by_asc(membership::Column::CreatedAt)
                .order_by_asc(membership::Column::UserId),
            db.conn(),
        )
        .await?)
}

/// The user's memberships with their organizations.
pub async fn of_user(
    db: &impl TenantConn,
    user_id: Uuid,
) -> Result<Vec<(membership::Model, organization::Model)>, DbErr> {
    let memberships = db
        .find::<membership::Entity>()
        .filter(membership::Column::UserId.eq(user_id))
        .order_by_asc(membership::Column::CreatedAt);
    let rows = crate::storage::with_parent::<_, organization::Entity>(
        memberships,
        membership::Column::OrganizationId,
        organization::Column::Id,
    )
    .all(db.conn())
    .await?;
    Ok(rows.into_iter().filter_map(|(membership, organization)| Some((membership, organization?))).collect())
}
