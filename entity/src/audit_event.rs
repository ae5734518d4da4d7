use sea_orm::entity::prelude::*;

/// One row of an application's hash-chained audit log (regional database).
/// Rows are only ever inserted.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub seq: i64,
    pub event_type: String,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub aggregate_id: Option<Uuid>,
    /// RFC 3339 with microseconds and `Z`, stored exactly as hashed, so that
    /// lexical order is time order.
    pub occurred_at: String,
    /// The event data as RFC 8785 canonical JSON text, exactly as hashed.
    pub data: String,
    pub prev_hash: String,
    pub hash: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
