use sea_orm::entity::prelude::*;

/// An inbound processor event taken by an application (regional), written
/// in the transaction that applies it: the unique `event_id` makes a second
/// delivery of one event change nothing.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "processor_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub event_id: String,
    pub event_type: String,
    pub processor_account_id: String,
    /// The event's `created` (Unix seconds).
    pub created: i64,
    /// `applied`, or `superseded` (older than the stored state).
    pub outcome: String,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
