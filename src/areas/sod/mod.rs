//! Separation of duties (operation 12, with create, list, get, delete, the
//! violations and a what-if check). A policy names two roles no user may
//! hold together; a user holds a role when any of their memberships has it.
//!
//! Every path that grants a role passes [`admit`] in its own transaction
//! (the membership writer takes only what `admit` answers): under an
//! enforced policy a grant that would give a user both roles is refused,
//! otherwise it goes through and is reported as `sod.violation_detected`.
//! Two grants that only together break a policy take turns on the user's
//! row (`SELECT … FOR UPDATE` on PostgreSQL; SQLite has one writer), so the
//! second sees the first. The policies themselves are tenant state: the
//! tenant actor holds them, and a grant whose role no policy names costs
//! nothing at all.
pub mod http;

use std::collections::BTreeMap;

use entity::{membership, sod_policy, user};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, QuerySelect, QueryTrait, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::validate::{Invalid, Issues};
use crate::{
    error::{ApiError, ApiResult, Code},
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope, TenantTxn},
    tenancy::{
        parts::{Rows, TenantPart},
        InTurn,
    },
};

#[derive(Debug, thiserror::Error)]
pub enum SodError {
    #[error("separation-of-duties policy `{0}` not found")]
    NotFound(Uuid),
    /// An enforced policy forbids the grant.
    #[error("policy `{}` forbids holding both `{}` and `{}`", .0.name, .0.role_a, .0.role_b)]
    Violation(Box<sod_policy::Model>),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<SodError> for ApiError {
    fn from(err: SodError) -> Self {
        match err {
            SodError::NotFound(id) => ApiError::not_found("Separation-of-duties policy", id),
            SodError::Violation(policy) => ApiError::new(
                Code::SodViolation,
                format!(
                    "The separation-of-duties policy `{}` ({}) forbids a user to hold both `{}` and `{}`.",
                    policy.name, policy.id, policy.role_a, policy.role_b
                ),
            ),
            SodError::Invalid(err) => err.into(),
            SodError::Limit(err) => err.into(),
            SodError::Db(err) => err.into(),
        }
    }
}

/// A policy as asked for (create, or the whole of an update).
pub struct PolicyInput {
    pub name: String,
    pub role_a: String,
    pub role_b: String,
    /// Default true on create; kept as it is when an update leaves it out.
    pub enforced: Option<bool>,
}

fn check_input(input: &PolicyInput) -> Result<(), Invalid> {
    let mut issues = Issues::default();
    issues.text("name", &input.name, 255);
    issues.role("role_a", &input.role_a);
    issues.role("role_b", &input.role_b);
    if input.role_a == input.role_b {
        issues.add("role_b", "must differ from role_a");
    }
    issues.finish()
}

fn describe(policy: &sod_policy::Model) -> serde_json::Value {
    json!({"name": policy.name, "role_a": policy.role_a, "role_b": policy.role_b, "enforced": policy.enforced})
}

pub async fn create(turn: &InTurn, input: PolicyInput, limit: u64) -> Result<sod_policy::Model, SodError> {
    let scope = turn.scope();
    check_input(&input)?;
    let mut txn = scope.begin().await?;
    txn.reserve::<sod_policy::Entity>(
        Limit { max: limit, what: "separation-of-duties policies", field: "name" },
        |all| all,
    )
    .await?;
    let now = crate::clock::now();
    let policy = sod_policy::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name: input.name,
        role_a: input.role_a,
        role_b: input.role_b,
        enforced: input.enforced.unwrap_or(true),
        created_at: now,
        updated_at: now,
    };
    txn.insert(sod_policy::ActiveModel::from(policy.clone())).await?;
    txn.audit(EventType::SodPolicyCreated, Some(policy.id), describe(&policy)).await?;
    txn.commit().await?;
    Ok(policy)
}

fn in_order(db: &impl TenantConn) -> sea_orm::Select<sod_policy::Entity> {
    db.find::<sod_policy::Entity>().order_by_asc(sod_policy::Column::CreatedAt).order_by_asc(sod_policy::Column::Id)
}

/// Every policy of the application: what the tenant's state holds.
pub async fn all(db: &impl TenantConn) -> Result<Vec<sod_policy::Model>, DbErr> {
    in_order(db).all(db.conn()).await
}

/// The policies every grant of a role passes (a tenant part).
pub type Policies = Rows<sod_policy::Model>;

impl TenantPart for Policies {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(Rows(all(scope).await?))
    }
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<sod_policy::Model>, bool), DbErr> {
    page.fetch(in_order(db), db.conn()).await
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<sod_policy::Model, SodError> {
    db.find_by_id::<sod_policy::Entity>(id).one(db.conn()).await?.ok_or(SodError::NotFound(id))
}

/// Replaces a policy's name and roles (and `enforced`, when given).
/// Memberships that already break it are not touched: they are listed
/// under its violations.
pub async fn update(turn: &InTurn, id: Uuid, input: PolicyInput) -> Result<sod_policy::Model, SodError> {
    let scope = turn.scope();
    check_input(&input)?;
    let mut txn = scope.begin().await?;
    let mut policy = find(&txn, id).await?;
    policy.enforced = input.enforced.unwrap_or(policy.enforced);
    policy.name = input.name;
    policy.role_a = input.role_a;
    policy.role_b = input.role_b;
    policy.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<sod_policy::Entity>| {
        q.col_expr(sod_policy::Column::Name, Expr::value(policy.name.clone()))
            .col_expr(sod_policy::Column::RoleA, Expr::value(policy.role_a.clone()))
            .col_expr(sod_policy::Column::RoleB, Expr::value(policy.role_b.clone()))
            .col_expr(sod_policy::Column::Enforced, Expr::value(policy.enforced))
            .col_expr(sod_policy::Column::UpdatedAt, Expr::value(policy.updated_at))
            .filter(sod_policy::Column::Id.eq(id))
    })
    .await?;
    txn.audit(EventType::SodPolicyUpdated, Some(id), describe(&policy)).await?;
    txn.commit().await?;
    Ok(policy)
}

pub async fn delete(turn: &InTurn, id: Uuid) -> Result<(), SodError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let policy = find(&txn, id).await?;
    txn.delete::<sod_policy::Entity>(sod_policy::Column::Id.eq(id)).await?;
    txn.audit(EventType::SodPolicyDeleted, Some(id), describe(&policy)).await?;
    txn.commit().await?;
    Ok(())
}

/// A user who holds both roles of a policy now, and where.
pub struct Violation {
    pub user_id: Uuid,
    pub role_a_organization_ids: Vec<Uuid>,
    pub role_b_organization_ids: Vec<Uuid>,
}

/// The users holding both of the policy's roles now (whether they got them
/// before the policy, under it unenforced, or through a path that predates
/// it), ordered by user id.
pub async fn violations(db: &impl TenantConn, id: Uuid, page: Page) -> Result<(Vec<Violation>, bool), SodError> {
    let policy = find(db, id).await?;
    let holders_of_b = db
        .find::<membership::Entity>()
        .select_only()
        .column(membership::Column::UserId)
        .filter(membership::Column::Role.eq(policy.role_b.clone()))
        .into_query();
    let mut user_ids: Vec<Uuid> = db
        .find::<membership::Entity>()
        .select_only()
        .column(membership::Column::UserId)
        .distinct()
        .filter(membership::Column::Role.eq(policy.role_a.clone()))
        .filter(membership::Column::UserId.in_subquery(holders_of_b))
        .order_by_asc(membership::Column::UserId)
        .offset(page.offset)
        .limit(page.limit + 1)
        .into_tuple()
        .all(db.conn())
        .await?;
    let has_more = user_ids.len() as u64 > page.limit;
    user_ids.truncate(page.limit as usize);
    let held = db
        .find::<membership::Entity>()
        .filter(membership::Column::UserId.is_in(user_ids.clone()))
        .filter(membership::Column::Role.is_in([policy.role_a.clone(), policy.role_b.clone()]))
        .order_by_asc(membership::Column::OrganizationId)
        .all(db.conn())
        .await?;
    let mut by_user: BTreeMap<Uuid, Violation> = user_ids
        .into_iter()
        .map(|user_id| {
            (user_id, Violation { user_id, role_a_organization_ids: Vec::new(), role_b_organization_ids: Vec::new() })
        })
        .collect();
    for m in held {
        if let Some(v) = by_user.get_mut(&m.user_id) {
            if m.role == policy.role_a {
                v.role_a_organization_ids.push(m.organization_id);
            } else {
                v.role_b_organization_ids.push(m.organization_id);
            }
        }
    }
    Ok((by_user.into_values().collect(), has_more))
}

/// A role given to a user in an organization (a new membership, or a
/// changed role of the user's membership there).
#[derive(Clone, Debug)]
pub struct Grant {
    pub organization_id: Uuid,
    pub user_id: Uuid,
    pub role: String,
}

/// The policies a grant would break, given the roles the user holds in
/// their other organizations (their membership in the grant's organization
/// is the one the grant replaces).
pub fn conflicts<'p>(
    policies: &'p [sod_policy::Model],
    grant: &Grant,
    held: &[membership::Model],
) -> Vec<&'p sod_policy::Model> {
    let holds = |role: &str| held.iter().any(|m| m.organization_id != grant.organization_id && m.role == role);
    policies
        .iter()
        .filter(|p| (p.role_a == grant.role && holds(&p.role_b)) || (p.role_b == grant.role && holds(&p.role_a)))
        .collect()
}

/// A grant that passed the policies, with the unenforced ones it breaks:
/// the only thing a membership writer takes.
pub struct Admitted {
    grant: Grant,
    breaks: Vec<sod_policy::Model>,
}

impl Admitted {
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Records each unenforced policy the grant breaks (after the grant is written).
    pub async fn report(self, txn: &mut TenantTxn) -> Result<Grant, DbErr> {
        for policy in &self.breaks {
            let data = json!({
                "policy_id": policy.id,
                "user_id": self.grant.user_id,
                "organization_id": self.grant.organization_id,
                "role": self.grant.role,
                "role_a": policy.role_a,
                "role_b": policy.role_b,
            });
            txn.audit(EventType::SodViolationDetected, Some(self.grant.user_id), data).await?;
        }
        Ok(self.grant)
    }
}

/// Checks a grant against the policies inside the transaction that will
/// write it. When a policy names the role, the user's row is locked first,
/// so a concurrent grant of the other role to the same user waits and then
/// sees this one.
pub async fn admit(txn: &mut TenantTxn, policies: &[sod_policy::Model], grant: Grant) -> Result<Admitted, SodError> {
    if !names(policies, &grant.role) {
        return Ok(Admitted { grant, breaks: Vec::new() });
    }
    txn.find_by_id::<user::Entity>(grant.user_id).lock_exclusive().one(txn.conn()).await?;
    let held = memberships_of(txn, grant.user_id).await?;
    let broken = conflicts(policies, &grant, &held);
    if let Some(enforced) = broken.iter().find(|p| p.enforced) {
        return Err(SodError::Violation(Box::new((*enforced).clone())));
    }
    let breaks = broken.into_iter().cloned().collect();
    Ok(Admitted { grant, breaks })
}

/// What a grant would meet, without writing anything (the what-if check).
pub async fn would_break(
    db: &impl TenantConn,
    policies: &[sod_policy::Model],
    grant: &Grant,
) -> Result<Vec<sod_policy::Model>, DbErr> {
    if !names(policies, &grant.role) {
        return Ok(Vec::new());
    }
    let held = memberships_of(db, grant.user_id).await?;
    Ok(conflicts(policies, grant, &held).into_iter().cloned().collect())
}

/// Whether a policy names the role: a grant of any other breaks none.
fn names(policies: &[sod_policy::Model], role: &str) -> bool {
    policies.iter().any(|p| p.role_a == role || p.role_b == role)
}

async fn memberships_of(db: &impl TenantConn, user_id: Uuid) -> Result<Vec<membership::Model>, DbErr> {
    db.find::<membership::Entity>().filter(membership::Column::UserId.eq(user_id)).all(db.conn()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(a: &str, b: &str, enforced: bool) -> sod_policy::Model {
        let now = chrono::Utc::now();
        sod_policy::Model {
            id: Uuid::now_v7(),
            application_id: Uuid::nil(),
            name: format!("{a} vs {b}"),
            role_a: a.into(),
            role_b: b.into(),
            enforced,
            created_at: now,
            updated_at: now,
        }
    }

    fn held(organization_id: Uuid, role: &str) -> membership::Model {
        membership::Model {
            application_id: Uuid::nil(),
            organization_id,
            user_id: Uuid::nil(),
            role: role.into(),
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_grant_conflicts_with_the_other_role_held_elsewhere_in_either_order() {
        let policies = [policy("approver", "requester", true), policy("auditor", "admin", false)];
        let (one, two) = (Uuid::now_v7(), Uuid::now_v7());
        let grant = |organization_id, role: &str| Grant { organization_id, user_id: Uuid::nil(), role: role.into() };
        let roles = [held(one, "requester")];
        assert_eq!(conflicts(&policies, &grant(two, "approver"), &roles).len(), 1);
        assert_eq!(conflicts(&policies, &grant(two, "member"), &roles).len(), 0);
        let roles = [held(one, "approver")];
        assert_eq!(conflicts(&policies, &grant(two, "requester"), &roles)[0].role_a, "approver");
        // A change of the one membership replaces its role: no conflict with itself.
        assert!(conflicts(&policies, &grant(one, "requester"), &roles).is_empty());
        let roles = [held(one, "auditor"), held(two, "requester")];
        let both = conflicts(&policies, &grant(Uuid::now_v7(), "admin"), &roles);
        assert_eq!((both.len(), both[0].enforced), (1, false));
    }
}
