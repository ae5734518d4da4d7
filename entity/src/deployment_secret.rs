use sea_orm::entity::prelude::*;

/// A secret of the whole deployment (catalog), sealed under the master key:
/// `keyed_hashes`, the secret of keyed hashes, which outlives a rotation of
/// the master key.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "deployment_secrets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    pub value_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
