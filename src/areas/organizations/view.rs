//! How an organization looks on the wire (also in an organization's plan change).
use chrono::{DateTime, Utc};
use entity::organization;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Serialize, ToSchema)]
pub struct OrganizationView {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    /// The entitlement plan it is on; null: the features' defaults.
    pub plan_key: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&organization::Model> for OrganizationView {
    fn from(o: &organization::Model) -> Self {
        OrganizationView {
            id: o.id,
            name: o.name.clone(),
            slug: o.slug.clone(),
            plan_key: o.plan_key.clone(),
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}
