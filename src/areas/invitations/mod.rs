//! Team invitations (operation 13, with list, revoke and accept). An end
//! user invites into the active organization of their session: an `owner`
//! may invite any role, an `admin` only `member` ([`memberships::may_grant`];
//! their role is read from the membership as it is now, not from the
//! token). An invitation's token
//! is 256 random bits, sent by email through the application's email
//! provider, stored hashed, valid 7 days, used once. Accepting needs a
//! signed-in user whose email is the invited one: the token proves the
//! address receives the invitation (accepting marks the email verified),
//! the session proves the account; the membership is then written through
//! the one grant path (separation of duties applies).
pub mod http;

use chrono::Duration;
use entity::{invitation, membership, sod_policy, user};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    mail_queue::{self, Mail},
    mailer::Message,
    memberships::{self, Manager, Refusal},
    organizations::OrganizationError,
    sod::Grant,
    users,
    validate::{Invalid, Issues},
};
use crate::{
    crypto::{master_key::MasterKey, sha256},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope},
};

pub const TTL_DAYS: i64 = 7;
pub const PENDING: &str = "pending";
pub const ACCEPTED: &str = "accepted";
pub const REVOKED: &str = "revoked";
pub const EXPIRED: &str = "expired";

#[derive(Debug, thiserror::Error)]
pub enum InvitationError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("the email belongs to a member of the organization")]
    AlreadyMember,
    #[error("a pending invitation for this email exists")]
    AlreadyInvited,
    #[error("invitation `{0}` not found")]
    NotFound(Uuid),
    /// Accepted or revoked already: only a pending invitation can be revoked.
    #[error("the invitation is {0}")]
    NotPending(String),
    /// Unknown, expired, revoked or used: one answer for each.
    #[error("the invitation token is unknown, expired, revoked or already used")]
    InvalidToken,
    #[error("the invitation is for another email address")]
    EmailMismatch,
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<InvitationError> for ApiError {
    fn from(err: InvitationError) -> Self {
        match err {
            InvitationError::Refused(err) => err.into(),
            InvitationError::AlreadyMember => {
                ApiError::new(Code::AlreadyMember, "The email belongs to a member of the organization.")
            }
            InvitationError::AlreadyInvited => {
                ApiError::new(Code::AlreadyInvited, "A pending invitation for this email exists.")
            }
            InvitationError::NotFound(id) => ApiError::not_found("Invitation", id),
            InvitationError::NotPending(status) => {
                ApiError::new(Code::Conflict, format!("The invitation is {status}: only a pending one can be revoked."))
            }
            InvitationError::InvalidToken => {
                ApiError::new(Code::InvalidGrant, "The invitation token is unknown, expired, revoked or already used.")
            }
            InvitationError::EmailMismatch => ApiError::new(
                Code::InvitationEmailMismatch,
                "The invitation is for another email address; sign in as the invited user.",
            ),
            InvitationError::Organization(err) => err.into(),
            InvitationError::Invalid(err) => err.into(),
            InvitationError::Db(err) => err.into(),
        }
    }
}

/// What the status reads as now: a pending invitation past its time is expired.
pub fn status_now(invitation: &invitation::Model) -> &str {
    if invitation.status == PENDING && invitation.expires_at <= crate::clock::now() {
        EXPIRED
    } else {
        &invitation.status
    }
}

pub struct NewInvitation {
    pub email: String,
    pub role: String,
    pub name: Option<String>,
}

pub async fn invite(
    scope: &TenantScope,
    master_key: &MasterKey,
    inviter: &Manager,
    new: NewInvitation,
) -> Result<invitation::Model, InvitationError> {
    let mut issues = Issues::default();
    // Normalised and checked as users' emails are (a user could not sign up with anything else).
    let email = users::email(&mut issues, &new.email);
    issues.role("role", &new.role);
    let name = new.name.map(|n| issues.text("name", &n, 255));
    issues.finish()?;
    inviter.may_grant(&new.role)?;
    let mut txn = scope.begin().await?;
    let organization = memberships::lock_organization(&txn, inviter.organization_id).await?;
    if let Some(invitee) = users::find_by_email(&txn, &email).await? {
        if memberships::find(&txn, organization.id, invitee.id).await?.is_some() {
            return Err(InvitationError::AlreadyMember);
        }
    }
    let now = crate::clock::now();
    let pending = txn
        .find::<invitation::Entity>()
        .filter(invitation::Column::OrganizationId.eq(organization.id))
        .filter(invitation::Column::Email.eq(email.clone()))
        .filter(invitation::Column::Status.eq(PENDING))
        .filter(invitation::Column::ExpiresAt.gt(now))
        .one(txn.conn())
        .await?;
    if pending.is_some() {
        return Err(InvitationError::AlreadyInvited);
    }
    let token = crate::oauth::random_token(32);
    let row = invitation::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        organization_id: organization.id,
        email,
        name,
        role: new.role,
        status: PENDING.to_string(),
        token_hash: sha256(&token).to_vec(),
        invited_by: inviter.user_id,
        created_at: now,
        expires_at: now + Duration::days(TTL_DAYS),
        decided_at: None,
        accepted_by: None,
    };
    txn.insert(row.clone().into_active_model()).await?;
    let data = json!({"invitation_id": row.id, "role": row.role, "expires_at": crate::clock::format(row.expires_at)});
    txn.audit(EventType::TeamInvitationCreated, Some(organization.id), data).await?;
    let message = message(&scope.tenant().name, &row, &organization.name, &token);
    mail_queue::queue(&mut txn, master_key, &Mail::Message(message)).await?;
    txn.commit().await?;
    Ok(row)
}

/// The invitation's email, queued with it: a failed send leaves the
/// invitation pending (revoke it and invite again to resend).
fn message(application: &str, invitation: &invitation::Model, organization: &str, token: &str) -> Message {
    let body = format!(
        "You are invited to join {organization} on {application} as {role}.\n\nSign up or sign in with this email address, then accept with this code within {TTL_DAYS} days:\n\n{token}\n\nIf you did not expect this, ignore this message.\n",
        role = invitation.role,
    );
    Message { to: invitation.email.clone(), subject: format!("Join {organization} on {application}"), body }
}

/// The organization's pending invitations, newest first.
pub async fn pending(db: &impl TenantConn, inviter: &Manager) -> Result<Vec<invitation::Model>, DbErr> {
    db.find::<invitation::Entity>()
        .filter(invitation::Column::OrganizationId.eq(inviter.organization_id))
        .filter(invitation::Column::Status.eq(PENDING))
        .filter(invitation::Column::ExpiresAt.gt(crate::clock::now()))
        .order_by_desc(invitation::Column::CreatedAt)
        .all(db.conn())
        .await
}

pub async fn revoke(scope: &TenantScope, inviter: &Manager, id: Uuid) -> Result<invitation::Model, InvitationError> {
    let mut txn = scope.begin().await?;
    let found = txn
        .find_by_id::<invitation::Entity>(id)
        .filter(invitation::Column::OrganizationId.eq(inviter.organization_id))
        .one(txn.conn())
        .await?
        .ok_or(InvitationError::NotFound(id))?;
    let now = crate::clock::now();
    let revoked = txn
        .update_many(|q: UpdateMany<invitation::Entity>| {
            q.col_expr(invitation::Column::Status, Expr::value(REVOKED))
                .col_expr(invitation::Column::DecidedAt, Expr::value(now))
                .filter(invitation::Column::Id.eq(id))
                .filter(invitation::Column::Status.eq(PENDING))
        })
        .await?;
    if revoked == 0 {
        return Err(InvitationError::NotPending(found.status));
    }
    txn.audit(EventType::TeamInvitationRevoked, Some(inviter.organization_id), json!({"invitation_id": id})).await?;
    txn.commit().await?;
    Ok(invitation::Model { status: REVOKED.to_string(), decided_at: Some(now), ..found })
}

/// Accepts an invitation as the signed-in `user`: their email must be the
/// invited one, and the inviter must still be allowed to grant its role
/// (an owner demoted since: 403 `insufficient_role`, the invitation left
/// pending). The token is taken once (of two acceptances one wins), the
/// membership written through the grant path, in one transaction.
pub async fn accept(
    scope: &TenantScope,
    policies: &[sod_policy::Model],
    user: &user::Model,
    token: &str,
) -> Result<(invitation::Model, membership::Model), InvitationError> {
    if token.is_empty() || token.len() > 256 {
        return Err(InvitationError::InvalidToken);
    }
    let now = crate::clock::now();
    let found = scope
        .find::<invitation::Entity>()
        .filter(invitation::Column::TokenHash.eq(sha256(token).to_vec()))
        .one(scope.conn())
        .await?
        .filter(|row| row.status == PENDING && row.expires_at > now)
        .ok_or(InvitationError::InvalidToken)?;
    if found.email != user.email {
        return Err(InvitationError::EmailMismatch);
    }
    let mut txn = scope.begin().await?;
    let taken = txn
        .update_many(|q: UpdateMany<invitation::Entity>| {
            q.col_expr(invitation::Column::Status, Expr::value(ACCEPTED))
                .col_expr(invitation::Column::DecidedAt, Expr::value(now))
                .col_expr(invitation::Column::AcceptedBy, Expr::value(user.id))
                .filter(invitation::Column::Id.eq(found.id))
                .filter(invitation::Column::Status.eq(PENDING))
        })
        .await?;
    if taken == 0 {
        return Err(InvitationError::InvalidToken);
    }
    // Granted on the inviter's authority, checked again now: an owner demoted since grants no more than an admin.
    let granter = memberships::granting_role(&txn, found.organization_id, Some(found.invited_by)).await?;
    if !memberships::may_grant(granter, &found.role) {
        return Err(Refusal::MayNotGrant { granter: granter.to_string(), role: found.role }.into());
    }
    let grant = Grant { organization_id: found.organization_id, user_id: user.id, role: found.role.clone() };
    let joined = memberships::join_in(&mut txn, policies, grant).await.map_err(|err| match err {
        OrganizationError::AlreadyMember => InvitationError::AlreadyMember,
        // The organization was deleted since: the invitation went with it.
        OrganizationError::NotFound(_) => InvitationError::InvalidToken,
        other => other.into(),
    })?;
    txn.audit(
        EventType::TeamInvitationAccepted,
        Some(found.organization_id),
        json!({"invitation_id": found.id, "user_id": user.id}),
    )
    .await?;
    // The code reached the invited address: that address is proven.
    super::email_verifications::mark_verified(&mut txn, user.id, "invitation").await?;
    txn.commit().await?;
    let accepted =
        invitation::Model { status: ACCEPTED.to_string(), decided_at: Some(now), accepted_by: Some(user.id), ..found };
    Ok((accepted, joined))
}
