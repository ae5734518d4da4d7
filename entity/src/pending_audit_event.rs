use sea_orm::entity::prelude::*;

/// An audit row of a catalog change (an application's settings), written in
/// the catalog transaction of the change and relayed into the application's
/// regional chain (catalog). The relay appends the row with this id, so a
/// retry after a crash can tell whether it already did.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "pending_audit_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub event_type: String,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub aggregate_id: Option<Uuid>,
    pub data: Json,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
