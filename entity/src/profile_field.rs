use sea_orm::entity::prelude::*;

/// One field of an application's end-user profile schema (regional).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "profile_fields")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub key: String,
    pub label: String,
    pub field_type: String,
    /// For `select` and `multi_select`: the JSON array of allowed strings.
    pub options: Option<Json>,
    pub position: i32,
    pub required: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
