//! Entitlements (operation 18): features with a kind and a default, plans
//! that grant values, an organization's plan and its overrides. A feature
//! resolves to the organization's override, else its plan's grant, else the
//! default; the answer has one element per defined feature, sorted by key.
//!
//! Features and plans are tenant state ([`Catalog`], held by the tenant
//! actor and reloaded on every node when one changes). An organization's own
//! inputs (its plan, its overrides) are read through the cache layer
//! ([`OrganizationEntitlements`]: this node, Redis, the database) and
//! dropped on every node after each change. A resolution is then a walk
//! over the features in memory: no query on a warm path.
pub mod assignments;
pub mod definitions;
pub mod http;

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use entity::{feature, plan};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{organizations::OrganizationError, validate::Invalid};
use crate::{
    cache::{pair_key, Bus, Invalidation, ReadThrough, SharedRedis},
    error::{ApiError, Code},
    storage::{ReserveError, TenantScope},
};

pub const BOOLEAN: &str = "boolean";
pub const LIMIT: &str = "limit";
pub const CONFIG: &str = "config";
pub const KINDS: [&str; 3] = [BOOLEAN, LIMIT, CONFIG];
/// The largest `config` value, as JSON text.
pub const MAX_CONFIG_BYTES: usize = 8 * 1024;

/// An organization's inputs: kept this long on a node and in Redis (every
/// change drops them at once; the TTL bounds a missed message).
const LOCAL_TTL: Duration = Duration::from_secs(300);
const SHARED_TTL: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum EntitlementError {
    #[error("feature `{0}` not found")]
    FeatureNotFound(String),
    #[error("plan `{0}` not found")]
    PlanNotFound(String),
    #[error("no override of feature `{0}`")]
    OverrideNotFound(String),
    /// A feature or plan something else still names.
    #[error("{0}")]
    InUse(String),
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
    /// A read through the cache layer (its failure is shared by the waiters).
    #[error(transparent)]
    Read(std::sync::Arc<sea_orm::DbErr>),
}

impl From<EntitlementError> for ApiError {
    fn from(err: EntitlementError) -> Self {
        match err {
            EntitlementError::FeatureNotFound(key) => ApiError::not_found("Feature", key),
            EntitlementError::PlanNotFound(key) => ApiError::not_found("Plan", key),
            EntitlementError::OverrideNotFound(key) => ApiError::not_found("Entitlement override of feature", key),
            EntitlementError::InUse(why) => ApiError::new(Code::Conflict, format!("{why}.")),
            EntitlementError::Organization(err) => err.into(),
            EntitlementError::Invalid(err) => err.into(),
            EntitlementError::Limit(err) => err.into(),
            EntitlementError::Db(err) => err.into(),
            EntitlementError::Read(err) => ApiError::from(&*err),
        }
    }
}

/// `value` as a feature of `kind` stores it: a limit written with a zero
/// fraction (`5.0`, the same JSON number as `5`, and an integer to JSON
/// Schema) is the integer.
pub fn canonical(kind: &str, value: Value) -> Value {
    match value.as_f64() {
        Some(n) if kind == LIMIT && value.is_f64() && n.fract() == 0.0 && (0.0..i64::MAX as f64).contains(&n) => {
            Value::from(n as i64)
        }
        _ => value,
    }
}

/// Whether `value` is a value of a feature of `kind`: a boolean, a
/// non-negative integer (a limit), or any JSON up to 8 KiB (a config).
pub fn value_issue(kind: &str, value: &Value) -> Option<String> {
    match kind {
        BOOLEAN if !value.is_boolean() => Some("must be a boolean (the feature is a boolean)".into()),
        LIMIT if value.as_i64().is_none_or(|n| n < 0) => {
            Some("must be a non-negative integer (the feature is a limit)".into())
        }
        CONFIG if value.to_string().len() > MAX_CONFIG_BYTES => {
            Some(format!("must be at most {MAX_CONFIG_BYTES} bytes of JSON"))
        }
        _ => None,
    }
}

/// The application's features (by key, in order) and plans (by key).
#[derive(Debug, Default)]
pub struct Catalog {
    pub features: BTreeMap<String, feature::Model>,
    pub plans: HashMap<String, plan::Model>,
}

impl Catalog {
    pub fn new(features: Vec<feature::Model>, plans: Vec<plan::Model>) -> Catalog {
        Catalog {
            features: features.into_iter().map(|f| (f.key.clone(), f)).collect(),
            plans: plans.into_iter().map(|p| (p.key.clone(), p)).collect(),
        }
    }
}

/// What an organization adds to the catalog.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OrganizationInputs {
    pub plan_key: Option<String>,
    pub overrides: BTreeMap<String, Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Override,
    Plan,
    Default,
}

/// One feature's value for an organization, and where it came from.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Entitlement {
    pub feature_key: String,
    /// `boolean`, `limit` or `config`.
    pub kind: String,
    pub source: Source,
    #[schema(schema_with = crate::json_schema::any_json)]
    pub value: Value,
}

/// A source of a feature's value that exists for the organization.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Candidate {
    pub source: Source,
    /// The plan, for `source: plan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_key: Option<String>,
    #[schema(schema_with = crate::json_schema::any_json)]
    pub value: Value,
    /// The one that won.
    pub applies: bool,
}

/// The whole resolution of one feature: every source that exists, in
/// order of precedence, and the winner.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Explanation {
    #[serde(flatten)]
    pub entitlement: Entitlement,
    /// The organization's plan (whether or not it grants this feature).
    pub plan_key: Option<String>,
    pub candidates: Vec<Candidate>,
}

/// Every source of one feature's value that exists, in precedence order.
fn candidates(catalog: &Catalog, inputs: &OrganizationInputs, feature: &feature::Model) -> Vec<Candidate> {
    let mut found = Vec::with_capacity(3);
    if let Some(value) = inputs.overrides.get(&feature.key) {
        found.push(Candidate { source: Source::Override, plan_key: None, value: value.clone(), applies: false });
    }
    let plan = inputs.plan_key.as_ref().and_then(|key| catalog.plans.get(key));
    if let Some(value) = plan.and_then(|p| p.grants.get(&feature.key)) {
        let plan_key = plan.map(|p| p.key.clone());
        found.push(Candidate { source: Source::Plan, plan_key, value: value.clone(), applies: false });
    }
    found.push(Candidate {
        source: Source::Default,
        plan_key: None,
        value: feature.default_value.clone(),
        applies: false,
    });
    found[0].applies = true;
    found
}

/// One element per feature, sorted by key: override > plan > default.
/// Only the winning value is copied.
pub fn resolve(catalog: &Catalog, inputs: &OrganizationInputs) -> Vec<Entitlement> {
    let plan = inputs.plan_key.as_ref().and_then(|key| catalog.plans.get(key));
    catalog
        .features
        .values()
        .map(|feature| {
            let (source, value) = if let Some(value) = inputs.overrides.get(&feature.key) {
                (Source::Override, value)
            } else if let Some(value) = plan.and_then(|p| p.grants.get(&feature.key)) {
                (Source::Plan, value)
            } else {
                (Source::Default, &feature.default_value)
            };
            Entitlement { feature_key: feature.key.clone(), kind: feature.kind.clone(), source, value: value.clone() }
        })
        .collect()
}

pub fn explain(catalog: &Catalog, inputs: &OrganizationInputs, key: &str) -> Option<Explanation> {
    let feature = catalog.features.get(key)?;
    let candidates = candidates(catalog, inputs, feature);
    let winner = &candidates[0];
    let entitlement = Entitlement {
        feature_key: feature.key.clone(),
        kind: feature.kind.clone(),
        source: winner.source,
        value: winner.value.clone(),
    };
    Some(Explanation { entitlement, plan_key: inputs.plan_key.clone(), candidates })
}

/// Organizations' inputs, read through the cache layer and dropped on every
/// node by the writer after each commit that changes them.
#[derive(Clone)]
pub struct OrganizationEntitlements {
    /// Keyed by application and organization together (`pair_key`): a
    /// lookup by another application's caller never shares an entry.
    cache: ReadThrough<Option<Arc<OrganizationInputs>>>,
    bus: Bus,
}

impl OrganizationEntitlements {
    pub fn new(redis: Option<SharedRedis>, bus: &Bus) -> OrganizationEntitlements {
        let cache = ReadThrough::new("organization_entitlements", redis, LOCAL_TTL, SHARED_TTL);
        let local = cache.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::Organization { application_id, organization_id } => {
                local.invalidate_local(pair_key(application_id, organization_id))
            }
            Invalidation::All => local.invalidate_all_local(),
            _ => {}
        });
        OrganizationEntitlements { cache, bus: bus.clone() }
    }

    /// The organization's inputs; `OrganizationError::NotFound` when the
    /// application has no such organization.
    pub async fn inputs(
        &self,
        scope: &TenantScope,
        organization_id: Uuid,
    ) -> Result<Arc<OrganizationInputs>, EntitlementError> {
        let key = pair_key(scope.tenant().id, organization_id);
        let found = self
            .cache
            .get_with(key, || async {
                Ok::<_, sea_orm::DbErr>(assignments::load_inputs(scope, organization_id).await?.map(Arc::new))
            })
            .await
            .map_err(EntitlementError::Read)?;
        found.ok_or(EntitlementError::Organization(OrganizationError::NotFound(organization_id)))
    }

    /// After a commit that changed an organization's inputs (or removed it):
    /// Redis and this node first, then the other nodes.
    pub async fn changed(&self, application_id: Uuid, organization_id: Uuid) {
        self.cache.invalidate(pair_key(application_id, organization_id)).await;
        self.bus.publish(Invalidation::Organization { application_id, organization_id }).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn feature(key: &str, kind: &str, default_value: Value) -> feature::Model {
        let now = chrono::Utc::now();
        feature::Model {
            id: Uuid::now_v7(),
            application_id: Uuid::nil(),
            key: key.into(),
            kind: kind.into(),
            default_value,
            description: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn an_override_beats_the_plan_which_beats_the_default_one_element_per_feature_by_key() {
        let now = chrono::Utc::now();
        let pro = plan::Model {
            id: Uuid::now_v7(),
            application_id: Uuid::nil(),
            key: "pro".into(),
            name: "Pro".into(),
            grants: json!({"seats": 25, "sso": true}),
            created_at: now,
            updated_at: now,
        };
        let catalog = Catalog::new(
            vec![
                feature("sso", BOOLEAN, json!(false)),
                feature("audit", BOOLEAN, json!(false)),
                feature("seats", LIMIT, json!(3)),
            ],
            vec![pro],
        );
        let inputs = OrganizationInputs {
            plan_key: Some("pro".into()),
            overrides: BTreeMap::from([("seats".to_string(), json!(100))]),
        };
        let resolved: Vec<_> =
            resolve(&catalog, &inputs).into_iter().map(|e| (e.feature_key, e.source, e.value)).collect();
        assert_eq!(
            resolved,
            [
                ("audit".to_string(), Source::Default, json!(false)),
                ("seats".to_string(), Source::Override, json!(100)),
                ("sso".to_string(), Source::Plan, json!(true)),
            ]
        );
        let seats = explain(&catalog, &inputs, "seats").unwrap();
        let sources: Vec<_> = seats.candidates.iter().map(|c| (c.source, c.applies)).collect();
        assert_eq!(sources, [(Source::Override, true), (Source::Plan, false), (Source::Default, false)]);
        assert!(explain(&catalog, &inputs, "nope").is_none());
        let bare = resolve(&catalog, &OrganizationInputs::default());
        assert!(bare.iter().all(|e| e.source == Source::Default));
    }

    #[test]
    fn values_must_fit_the_kind() {
        assert!(value_issue(BOOLEAN, &json!(true)).is_none());
        assert!(value_issue(BOOLEAN, &json!(1)).is_some());
        assert!(value_issue(LIMIT, &json!(0)).is_none());
        assert!(value_issue(LIMIT, &json!(-1)).is_some());
        assert!(value_issue(LIMIT, &json!(1.5)).is_some());
        assert_eq!(canonical(LIMIT, json!(2761.0)), json!(2761), "the same number as 2761");
        assert!(value_issue(LIMIT, &canonical(LIMIT, json!(2761.0))).is_none());
        assert_eq!(canonical(LIMIT, json!(1.5)), json!(1.5));
        assert_eq!(canonical(CONFIG, json!(2.0)), json!(2.0), "a config keeps what it was given");
        assert!(value_issue(CONFIG, &json!({"theme": "dark"})).is_none());
        assert!(value_issue(CONFIG, &json!("x".repeat(MAX_CONFIG_BYTES))).is_some());
    }
}
