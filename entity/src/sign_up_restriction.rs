use sea_orm::entity::prelude::*;

/// The email domains an application allows or blocks for new end users
/// (regional, one row per application).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sign_up_restrictions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    /// A JSON array of domains; empty: every domain not blocked.
    pub allowed_email_domains: Json,
    /// A JSON array of domains.
    pub blocked_email_domains: Json,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
