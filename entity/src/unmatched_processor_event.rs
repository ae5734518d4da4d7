use sea_orm::entity::prelude::*;

/// A signed processor event whose account no application has connected
/// (catalog): acknowledged to the processor and kept here, without its body
/// (which may describe a person), for an operator to look at.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "unmatched_processor_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_id: String,
    pub event_type: String,
    pub processor_account_id: String,
    pub created: i64,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
