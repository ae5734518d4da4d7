use sea_orm::entity::prelude::*;

/// An access review: the memberships (of one organization, or all) as they
/// were when it started, each an item to decide (regional).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "access_reviews")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub name: String,
    pub organization_id: Option<Uuid>,
    /// `open`, or `closed` once every item is decided.
    pub status: String,
    pub item_count: i64,
    pub created_at: DateTimeUtc,
    pub closed_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
