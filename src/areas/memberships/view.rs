//! How a membership looks on the wire.
use chrono::{DateTime, Utc};
use entity::membership;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Serialize, ToSchema)]
pub struct MembershipView {
    pub user_id: Uuid,
    pub organization_id: Uuid,
    pub role: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<&membership::Model> for MembershipView {
    fn from(m: &membership::Model) -> Self {
        MembershipView {
            user_id: m.user_id,
            organization_id: m.organization_id,
            role: m.role.clone(),
            created_at: m.created_at,
        }
    }
}
