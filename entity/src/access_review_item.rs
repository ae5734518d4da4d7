use sea_orm::entity::prelude::*;

/// One membership of an access review's snapshot and its decision
/// (regional). A decision is final.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "access_review_items")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub review_id: Uuid,
    pub user_id: Uuid,
    pub organization_id: Uuid,
    /// The role at the snapshot.
    pub role: String,
    /// `approved` or `revoked`; none while pending.
    pub decision: Option<String>,
    pub decided_at: Option<DateTimeUtc>,
    /// The API key that decided (or closed the review).
    pub decided_by: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
