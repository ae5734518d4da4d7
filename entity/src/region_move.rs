use sea_orm::entity::prelude::*;

/// The region-move journal (catalog): an application's latest move, the step
/// it reached (`pending`, `copied`, `switched`, `cleaned`, or `rolled_back`)
/// and the lease of the node running it. A move that is not finished
/// (`cleaned` or `rolled_back`) resumes on any node once the lease has expired.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "region_moves")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    pub from_region: String,
    pub to_region: String,
    pub step: String,
    pub lease_owner: Option<Uuid>,
    pub lease_expires_at: Option<DateTimeUtc>,
    /// Who asked for the move (its audit row's actor).
    pub actor_kind: String,
    pub actor_id: Option<String>,
    /// Rows the copy wrote into the new region.
    pub rows_copied: i64,
    pub started_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub finished_at: Option<DateTimeUtc>,
    /// When an operator asked to cancel it: the node running it rolls it
    /// back unless it has switched already.
    pub cancel_requested_at: Option<DateTimeUtc>,
    /// The shards of `from_region` and `to_region` (null: the regions' first).
    pub from_shard: Option<String>,
    pub to_shard: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
