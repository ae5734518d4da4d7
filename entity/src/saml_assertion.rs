use sea_orm::entity::prelude::*;

/// An assertion an IdP-initiated SAML sign-in used (regional), kept until
/// it expires: each assertion ID is used once per connection.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "saml_assertions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub connection_id: Uuid,
    pub assertion_id: String,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
