use sea_orm::entity::prelude::*;

/// A host enrolled with an enrollment token (regional database).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "hosts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub hostname: String,
    pub platform: String,
    pub host_group_id: Option<Uuid>,
    pub enrollment_token_id: Uuid,
    pub enrolled_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
