use sea_orm::entity::prelude::*;

/// A service account (operation 14, regional): a machine principal of the
/// application, with scopes its keys carry.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "service_accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    /// A disabled account's keys verify as invalid.
    pub enabled: bool,
    /// JSON array of scope names.
    pub scopes: Json,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
