use sea_orm::entity::prelude::*;

/// An audit row committed with its change and not yet linked into the
/// application's chain (regional database). The linker gives it its `seq`
/// and hashes, appends it to `audit_events` and deletes it here, in batches.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_pending")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub event_type: String,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub aggregate_id: Option<Uuid>,
    /// When the change committed's row was written, as the chain stores it.
    pub occurred_at: String,
    /// RFC 8785 canonical JSON text, as the chain stores it.
    pub data: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
