use sea_orm::entity::prelude::*;

/// An end user's personal API key, `uk_…` (regional). Stored like secret
/// keys: SHA-256 of the secret and its first characters.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "user_api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub prefix: String,
    #[sea_orm(unique)]
    pub secret_hash: Vec<u8>,
    pub scopes: Json,
    pub expires_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
    pub revoked_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
