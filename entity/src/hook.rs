use sea_orm::entity::prelude::*;

/// A hook: an HTTPS endpoint of the application called at a point of a flow
/// (regional). Its signing secret is sealed with the master key.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "hooks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `pre_sign_up`.
    pub point: String,
    pub url: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub fail_open: bool,
    pub timeout_ms: i32,
    pub secret_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
