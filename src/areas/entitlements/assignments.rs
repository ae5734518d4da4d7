//! An organization's own entitlement inputs: its plan
//! (`PUT /v1/organizations/{id}/plan`) and its overrides
//! (`PUT/DELETE /v1/organizations/{id}/entitlement-overrides/{feature_key}`).
//! Each write takes the tenant lock (a plan or feature deleted meanwhile
//! cannot slip past the check) and, after its commit, drops the
//! organization's cached inputs on every node.
use std::collections::BTreeMap;

use entity::{entitlement_override, feature, organization, plan};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, UpdateMany};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{canonical, value_issue, EntitlementError, OrganizationEntitlements, OrganizationInputs};
use crate::{
    areas::{organizations, validate::Issues},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope},
};

/// What the cache layer loads: none when the application has no such organization.
pub async fn load_inputs(db: &impl TenantConn, organization_id: Uuid) -> Result<Option<OrganizationInputs>, DbErr> {
    let Some(organization) = db.find_by_id::<organization::Entity>(organization_id).one(db.conn()).await? else {
        return Ok(None);
    };
    let overrides = db
        .find::<entitlement_override::Entity>()
        .filter(entitlement_override::Column::OrganizationId.eq(organization_id))
        .all(db.conn())
        .await?;
    let overrides: BTreeMap<String, Value> = overrides.into_iter().map(|o| (o.feature_key, o.value)).collect();
    Ok(Some(OrganizationInputs { plan_key: organization.plan_key, overrides }))
}

/// Puts the organization on a plan, or on none (`None`).
pub async fn set_plan(
    scope: &TenantScope,
    cache: &OrganizationEntitlements,
    organization_id: Uuid,
    plan_key: Option<String>,
) -> Result<organization::Model, EntitlementError> {
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let mut organization = organizations::find(&txn, organization_id).await?;
    if let Some(key) = &plan_key {
        let exists = txn.find::<plan::Entity>().filter(plan::Column::Key.eq(key)).one(txn.conn()).await?.is_some();
        if !exists {
            let mut issues = Issues::default();
            issues.add("plan_key", "no such plan");
            issues.finish()?;
        }
    }
    organization.plan_key = plan_key;
    organization.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<organization::Entity>| {
        q.col_expr(organization::Column::PlanKey, Expr::value(organization.plan_key.clone()))
            .col_expr(organization::Column::UpdatedAt, Expr::value(organization.updated_at))
            .filter(organization::Column::Id.eq(organization_id))
    })
    .await?;
    txn.audit(EventType::OrganizationPlanChanged, Some(organization_id), json!({"plan_key": organization.plan_key}))
        .await?;
    txn.commit().await?;
    cache.changed(scope.tenant().id, organization_id).await;
    Ok(organization)
}

pub async fn put_override(
    scope: &TenantScope,
    cache: &OrganizationEntitlements,
    organization_id: Uuid,
    feature_key: &str,
    value: Value,
) -> Result<entitlement_override::Model, EntitlementError> {
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    organizations::find(&txn, organization_id).await?;
    let feature = txn
        .find::<feature::Entity>()
        .filter(feature::Column::Key.eq(feature_key))
        .one(txn.conn())
        .await?
        .ok_or_else(|| EntitlementError::FeatureNotFound(feature_key.into()))?;
    let value = canonical(&feature.kind, value);
    if let Some(issue) = value_issue(&feature.kind, &value) {
        let mut issues = Issues::default();
        issues.add("value", issue);
        issues.finish()?;
    }
    let row = entitlement_override::Model {
        application_id: txn.application_id(),
        organization_id,
        feature_key: feature_key.to_string(),
        value,
        updated_at: crate::clock::now(),
    };
    let condition = entitlement_override::Column::OrganizationId
        .eq(organization_id)
        .and(entitlement_override::Column::FeatureKey.eq(feature_key));
    txn.delete::<entitlement_override::Entity>(condition).await?;
    txn.insert(entitlement_override::ActiveModel::from(row.clone())).await?;
    let data = json!({"feature_key": feature_key, "value": row.value});
    txn.audit(EventType::EntitlementOverrideUpdated, Some(organization_id), data).await?;
    txn.commit().await?;
    cache.changed(scope.tenant().id, organization_id).await;
    Ok(row)
}

pub async fn delete_override(
    scope: &TenantScope,
    cache: &OrganizationEntitlements,
    organization_id: Uuid,
    feature_key: &str,
) -> Result<(), EntitlementError> {
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    organizations::find(&txn, organization_id).await?;
    let condition = entitlement_override::Column::OrganizationId
        .eq(organization_id)
        .and(entitlement_override::Column::FeatureKey.eq(feature_key));
    if txn.delete::<entitlement_override::Entity>(condition).await? == 0 {
        return Err(EntitlementError::OverrideNotFound(feature_key.into()));
    }
    txn.audit(EventType::EntitlementOverrideDeleted, Some(organization_id), json!({"feature_key": feature_key}))
        .await?;
    txn.commit().await?;
    cache.changed(scope.tenant().id, organization_id).await;
    Ok(())
}
