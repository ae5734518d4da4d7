use sea_orm::entity::prelude::*;

/// A shard added to a region (catalog): one more database of the region, its
/// URL sealed under the master key. A region's first shard is its configured
/// `database_url` and has no row here.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "shards")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    pub region: String,
    pub database_url_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
