//! Features and plans: `PUT /v1/features/{key}`, `PUT /v1/plans/{key}`
//! (create or replace), their lists and deletes. They are tenant state:
//! changes go through the tenant actor, and each write takes the tenant
//! lock so that checks across them (a grant names a feature of its kind; a
//! kind changes only while nothing holds a value of it) are exact on every
//! backend and node.
use entity::{entitlement_override, feature, organization, plan};
use sea_orm::{ActiveModelTrait, ColumnTrait, DbErr, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{json, Map, Value};

use super::{canonical, value_issue, Catalog, EntitlementError, KINDS};
use crate::{
    areas::validate::{is_scope, Issues},
    error::ApiResult,
    events::catalog::EventType,
    storage::{Limit, TenantConn, TenantScope, TenantTxn},
    tenancy::{parts::TenantPart, InTurn},
};

/// Feature and plan keys: `^[a-z][a-z0-9_:.-]{0,63}$`.
fn key_issue(issues: &mut Issues, field: &str, key: &str) {
    if !is_scope(key) {
        issues.add(field, "must match ^[a-z][a-z0-9_:.-]{0,63}$");
    }
}

pub struct FeatureInput {
    pub kind: String,
    pub default_value: Value,
    pub description: Option<String>,
}

/// Every feature and plan of the application: what the tenant's state holds.
pub async fn catalog(db: &impl TenantConn) -> Result<Catalog, DbErr> {
    let features = db.find::<feature::Entity>().all(db.conn()).await?;
    let plans = db.find::<plan::Entity>().all(db.conn()).await?;
    Ok(Catalog::new(features, plans))
}

/// The features and plans entitlements resolve against (a tenant part).
impl TenantPart for Catalog {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(catalog(scope).await?)
    }
}

async fn find_feature(db: &impl TenantConn, key: &str) -> Result<Option<feature::Model>, DbErr> {
    db.find::<feature::Entity>().filter(feature::Column::Key.eq(key)).one(db.conn()).await
}

async fn find_plan(db: &impl TenantConn, key: &str) -> Result<Option<plan::Model>, DbErr> {
    db.find::<plan::Entity>().filter(plan::Column::Key.eq(key)).one(db.conn()).await
}

/// The plans that grant the feature and the overrides of it.
async fn holders_of(txn: &TenantTxn, key: &str) -> Result<(Vec<String>, u64), DbErr> {
    let plans = txn.find::<plan::Entity>().order_by_asc(plan::Column::Key).all(txn.conn()).await?;
    let granting = plans.into_iter().filter(|p| p.grants.get(key).is_some()).map(|p| p.key).collect();
    let overrides = txn
        .find::<entitlement_override::Entity>()
        .filter(entitlement_override::Column::FeatureKey.eq(key))
        .count(txn.conn())
        .await?;
    Ok((granting, overrides))
}

fn in_use(what: &str, (plans, overrides): &(Vec<String>, u64)) -> Option<EntitlementError> {
    if plans.is_empty() && *overrides == 0 {
        return None;
    }
    Some(EntitlementError::InUse(format!(
        "{what}: plans [{}] grant it and {overrides} organizations override it",
        plans.join(", ")
    )))
}

/// Creates or replaces a feature. Its kind may change only while no plan
/// grants it and no organization overrides it (their values are of the old kind).
pub async fn put_feature(
    turn: &InTurn,
    key: &str,
    mut input: FeatureInput,
    limit: u64,
) -> Result<feature::Model, EntitlementError> {
    let scope = turn.scope();
    input.default_value = canonical(&input.kind, input.default_value);
    let mut issues = Issues::default();
    key_issue(&mut issues, "feature_key", key);
    if !KINDS.contains(&input.kind.as_str()) {
        issues.add("kind", format!("must be one of {}", KINDS.join(", ")));
    } else if let Some(issue) = value_issue(&input.kind, &input.default_value) {
        issues.add("default_value", issue);
    }
    if let Some(description) = &input.description {
        issues.text("description", description, 1024);
    }
    issues.finish()?;
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let now = crate::clock::now();
    let feature = match find_feature(&txn, key).await? {
        Some(existing) => {
            if existing.kind != input.kind {
                let holders = holders_of(&txn, key).await?;
                if let Some(err) = in_use("the kind of a feature in use cannot change", &holders) {
                    return Err(err);
                }
            }
            let feature = feature::Model {
                kind: input.kind,
                default_value: input.default_value,
                description: input.description,
                updated_at: now,
                ..existing
            };
            txn.update(feature::ActiveModel::from(feature).reset_all()).await?
        }
        None => {
            txn.reserve::<feature::Entity>(Limit { max: limit, what: "features", field: "feature_key" }, |all| all)
                .await?;
            let feature = feature::Model {
                id: uuid::Uuid::now_v7(),
                application_id: txn.application_id(),
                key: key.to_string(),
                kind: input.kind,
                default_value: input.default_value,
                description: input.description,
                created_at: now,
                updated_at: now,
            };
            txn.insert(feature::ActiveModel::from(feature.clone())).await?;
            feature
        }
    };
    let data = json!({"feature_key": feature.key, "kind": feature.kind, "default_value": feature.default_value});
    txn.audit(EventType::FeatureUpdated, Some(feature.id), data).await?;
    txn.commit().await?;
    Ok(feature)
}

pub async fn delete_feature(turn: &InTurn, key: &str) -> Result<(), EntitlementError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let feature = find_feature(&txn, key).await?.ok_or_else(|| EntitlementError::FeatureNotFound(key.into()))?;
    if let Some(err) = in_use("a feature in use cannot be deleted", &holders_of(&txn, key).await?) {
        return Err(err);
    }
    txn.delete::<feature::Entity>(feature::Column::Id.eq(feature.id)).await?;
    txn.audit(EventType::FeatureDeleted, Some(feature.id), json!({"feature_key": key})).await?;
    txn.commit().await?;
    Ok(())
}

/// Every grant names a feature and fits its kind.
fn check_grants(issues: &mut Issues, features: &[feature::Model], grants: &mut Map<String, Value>) {
    for (key, value) in grants {
        let field = format!("grants.{key}");
        match features.iter().find(|f| f.key == *key) {
            None => issues.add(&field, "no such feature"),
            Some(feature) => {
                *value = canonical(&feature.kind, value.take());
                if let Some(issue) = value_issue(&feature.kind, value) {
                    issues.add(&field, issue);
                }
            }
        }
    }
}

pub async fn put_plan(
    turn: &InTurn,
    key: &str,
    name: &str,
    mut grants: Map<String, Value>,
    limit: u64,
) -> Result<plan::Model, EntitlementError> {
    let scope = turn.scope();
    let mut issues = Issues::default();
    key_issue(&mut issues, "plan_key", key);
    let name = issues.text("name", name, 255);
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let features = txn.find::<feature::Entity>().all(txn.conn()).await?;
    check_grants(&mut issues, &features, &mut grants);
    issues.finish()?;
    let now = crate::clock::now();
    let plan = match find_plan(&txn, key).await? {
        Some(existing) => {
            let plan = plan::Model { name, grants: Value::Object(grants), updated_at: now, ..existing };
            txn.update(plan::ActiveModel::from(plan).reset_all()).await?
        }
        None => {
            txn.reserve::<plan::Entity>(Limit { max: limit, what: "plans", field: "plan_key" }, |all| all).await?;
            let plan = plan::Model {
                id: uuid::Uuid::now_v7(),
                application_id: txn.application_id(),
                key: key.to_string(),
                name,
                grants: Value::Object(grants),
                created_at: now,
                updated_at: now,
            };
            txn.insert(plan::ActiveModel::from(plan.clone())).await?;
            plan
        }
    };
    txn.audit(
        EventType::PlanUpdated,
        Some(plan.id),
        json!({"plan_key": plan.key, "name": plan.name, "grants": plan.grants}),
    )
    .await?;
    txn.commit().await?;
    Ok(plan)
}

pub async fn delete_plan(turn: &InTurn, key: &str) -> Result<(), EntitlementError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let plan = find_plan(&txn, key).await?.ok_or_else(|| EntitlementError::PlanNotFound(key.into()))?;
    let on_it =
        txn.find::<organization::Entity>().filter(organization::Column::PlanKey.eq(key)).count(txn.conn()).await?;
    if on_it > 0 {
        return Err(EntitlementError::InUse(format!(
            "a plan in use cannot be deleted: {on_it} organizations are on it"
        )));
    }
    txn.delete::<plan::Entity>(plan::Column::Id.eq(plan.id)).await?;
    txn.audit(EventType::PlanDeleted, Some(plan.id), json!({"plan_key": key})).await?;
    txn.commit().await?;
    Ok(())
}
