use sea_orm::entity::prelude::*;

/// The head of an application's audit chain: the last `seq` and `hash`.
/// Writers lock this row (an `UPDATE … RETURNING` that bumps `seq`) so that
/// concurrent appends serialise and the chain never forks.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_heads")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    pub seq: i64,
    pub hash: String,
    /// Set when a region move began copying the application away: no write
    /// of it commits in this database from then on.
    pub fenced_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
