use sea_orm::entity::prelude::*;

/// A separation-of-duties policy: no user may hold both roles (regional).
/// Enforced, a grant that would break it is refused; otherwise it is
/// allowed and reported.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sod_policies")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub name: String,
    pub role_a: String,
    pub role_b: String,
    pub enforced: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
