//! Access reviews (operation 15, with create, get, list, items and close).
//! A review snapshots the memberships (of one organization, or all) as
//! items; each item is decided once, `approved` or `revoked`. A decision is
//! taken against the membership as it is when decided: `revoked` removes
//! the user's membership in the organization whatever its role now (the
//! review errs towards less access), with the user's sessions that have the
//! organization active, in the decision's transaction; a membership gone
//! since the snapshot leaves nothing to remove. Closing a review decides
//! every pending item one way.
pub mod http;

use entity::{access_review, access_review_item, membership};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    memberships,
    organizations::{self, OrganizationError},
    validate::{Invalid, Issues},
};
use crate::{
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope, TenantTxn},
};

pub const APPROVED: &str = "approved";
pub const REVOKED: &str = "revoked";
pub const DECISIONS: [&str; 2] = [APPROVED, REVOKED];
pub const OPEN: &str = "open";
pub const CLOSED: &str = "closed";

/// Rows inserted per statement when a review snapshots memberships.
const SNAPSHOT_BATCH: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum AccessReviewError {
    #[error("access review `{0}` not found")]
    NotFound(Uuid),
    #[error("access review item `{0}` not found")]
    ItemNotFound(Uuid),
    #[error("the item is already decided")]
    AlreadyDecided,
    #[error("the review is already closed")]
    AlreadyClosed,
    /// The organization to review is unknown, or a revocation would take
    /// an organization's last owner.
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<AccessReviewError> for ApiError {
    fn from(err: AccessReviewError) -> Self {
        match err {
            AccessReviewError::NotFound(id) => ApiError::not_found("Access review", id),
            AccessReviewError::ItemNotFound(id) => ApiError::not_found("Access review item", id),
            AccessReviewError::AlreadyDecided => {
                ApiError::new(Code::AlreadyDecided, "The item is already decided; a decision is final.")
            }
            AccessReviewError::AlreadyClosed => ApiError::new(Code::AlreadyDecided, "The review is already closed."),
            AccessReviewError::Organization(err) => err.into(),
            AccessReviewError::Invalid(err) => err.into(),
            AccessReviewError::Db(err) => err.into(),
        }
    }
}

fn decision_issue(issues: &mut Issues, field: &str, decision: &str) {
    if !DECISIONS.contains(&decision) {
        issues.add(field, format!("must be one of {}", DECISIONS.join(", ")));
    }
}

pub async fn create(
    scope: &TenantScope,
    name: &str,
    organization_id: Option<Uuid>,
) -> Result<access_review::Model, AccessReviewError> {
    let mut issues = Issues::default();
    let name = issues.text("name", name, 255);
    issues.finish()?;
    let mut txn = scope.begin().await?;
    let mut snapshot = txn.find::<membership::Entity>();
    if let Some(organization_id) = organization_id {
        organizations::find(&txn, organization_id).await?;
        snapshot = snapshot.filter(membership::Column::OrganizationId.eq(organization_id));
    }
    let memberships = snapshot
        .order_by_asc(membership::Column::OrganizationId)
        .order_by_asc(membership::Column::UserId)
        .all(txn.conn())
        .await?;
    let review = access_review::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name,
        organization_id,
        status: OPEN.to_string(),
        item_count: memberships.len() as i64,
        created_at: crate::clock::now(),
        closed_at: None,
    };
    txn.insert(access_review::ActiveModel::from(review.clone())).await?;
    for batch in memberships.chunks(SNAPSHOT_BATCH) {
        let items = batch.iter().map(|m| {
            access_review_item::ActiveModel::from(access_review_item::Model {
                id: Uuid::now_v7(),
                application_id: review.application_id,
                review_id: review.id,
                user_id: m.user_id,
                organization_id: m.organization_id,
                role: m.role.clone(),
                decision: None,
                decided_at: None,
                decided_by: None,
            })
        });
        txn.insert_many(items).await?;
    }
    let data = json!({"name": review.name, "organization_id": organization_id, "item_count": review.item_count});
    txn.audit(EventType::AccessReviewCreated, Some(review.id), data).await?;
    txn.commit().await?;
    Ok(review)
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<access_review::Model, AccessReviewError> {
    db.find_by_id::<access_review::Entity>(id).one(db.conn()).await?.ok_or(AccessReviewError::NotFound(id))
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<access_review::Model>, bool), DbErr> {
    let newest_first = db
        .find::<access_review::Entity>()
        .order_by_desc(access_review::Column::CreatedAt)
        .order_by_desc(access_review::Column::Id);
    page.fetch(newest_first, db.conn()).await
}

/// A review's items in snapshot order.
pub async fn items(
    db: &impl TenantConn,
    review_id: Uuid,
    page: Page,
) -> Result<(Vec<access_review_item::Model>, bool), AccessReviewError> {
    find(db, review_id).await?;
    let query = db
        .find::<access_review_item::Entity>()
        .filter(access_review_item::Column::ReviewId.eq(review_id))
        .order_by_asc(access_review_item::Column::Id);
    Ok(page.fetch(query, db.conn()).await?)
}

/// Marks pending items (those `narrow` selects) decided by the
/// transaction's actor; answers the items this call decided.
async fn mark_decided(
    txn: &mut TenantTxn,
    decision: &str,
    narrow: impl FnOnce(UpdateMany<access_review_item::Entity>) -> UpdateMany<access_review_item::Entity>,
) -> Result<Vec<access_review_item::Model>, DbErr> {
    let decided_by = txn.actor().id.clone();
    let now = crate::clock::now();
    txn.update_many_returning(|q: UpdateMany<access_review_item::Entity>| {
        narrow(
            q.col_expr(access_review_item::Column::Decision, Expr::value(decision))
                .col_expr(access_review_item::Column::DecidedAt, Expr::value(now))
                .col_expr(access_review_item::Column::DecidedBy, Expr::value(decided_by))
                .filter(access_review_item::Column::Decision.is_null()),
        )
    })
    .await
}

/// Decides one item. Of two concurrent decisions, one wins;
/// the other is 409 `already_decided`.
pub async fn decide(
    scope: &TenantScope,
    item_id: Uuid,
    decision: &str,
) -> Result<access_review_item::Model, AccessReviewError> {
    let mut issues = Issues::default();
    decision_issue(&mut issues, "decision", decision);
    issues.finish()?;
    let mut txn = scope.begin().await?;
    txn.find_by_id::<access_review_item::Entity>(item_id)
        .one(txn.conn())
        .await?
        .ok_or(AccessReviewError::ItemNotFound(item_id))?;
    let decided = mark_decided(&mut txn, decision, |q| q.filter(access_review_item::Column::Id.eq(item_id))).await?;
    let Some(item) = decided.into_iter().next() else {
        return Err(AccessReviewError::AlreadyDecided);
    };
    let removed = carry_out(&mut txn, &item).await?;
    let data = json!({
        "review_id": item.review_id,
        "user_id": item.user_id,
        "organization_id": item.organization_id,
        "role": item.role,
        "decision": decision,
        "membership_removed": removed,
    });
    txn.audit(EventType::AccessReviewItemDecided, Some(item.id), data).await?;
    txn.commit().await?;
    Ok(item)
}

/// What a decided item does: a revocation removes the membership.
async fn carry_out(txn: &mut TenantTxn, item: &access_review_item::Model) -> Result<bool, AccessReviewError> {
    if item.decision.as_deref() != Some(REVOKED) {
        return Ok(false);
    }
    Ok(memberships::revoke_in(txn, item.organization_id, item.user_id, item.id).await?)
}

/// Closes a review, deciding every pending item as `remaining`
/// (`approved` when the caller says nothing). A revocation that would take
/// an organization's last owner refuses the whole close (409 `last_owner`):
/// decide that item first.
pub async fn close(scope: &TenantScope, id: Uuid, remaining: &str) -> Result<access_review::Model, AccessReviewError> {
    let mut issues = Issues::default();
    decision_issue(&mut issues, "remaining", remaining);
    issues.finish()?;
    let mut txn = scope.begin().await?;
    let review = find(&txn, id).await?;
    let now = crate::clock::now();
    let closed = txn
        .update_many(|q: UpdateMany<access_review::Entity>| {
            q.col_expr(access_review::Column::Status, Expr::value(CLOSED))
                .col_expr(access_review::Column::ClosedAt, Expr::value(now))
                .filter(access_review::Column::Id.eq(id))
                .filter(access_review::Column::Status.eq(OPEN))
        })
        .await?;
    if closed == 0 {
        return Err(AccessReviewError::AlreadyClosed);
    }
    let decided = mark_decided(&mut txn, remaining, |q| q.filter(access_review_item::Column::ReviewId.eq(id))).await?;
    let mut removed = 0;
    for item in &decided {
        removed += u64::from(carry_out(&mut txn, item).await?);
    }
    let data = json!({"remaining": remaining, "decided": decided.len(), "memberships_removed": removed});
    txn.audit(EventType::AccessReviewClosed, Some(id), data).await?;
    txn.commit().await?;
    Ok(access_review::Model { status: CLOSED.to_string(), closed_at: Some(now), ..review })
}
