use sea_orm::entity::prelude::*;

/// The projection of the connected account's state at the processor
/// (regional), kept by its `account.updated` events. `event_created` is the
/// `created` of the event it was last taken from: an older one never
/// overwrites it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "connect_statuses")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    pub processor_account_id: String,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    pub disabled_reason: Option<String>,
    pub event_created: i64,
    pub event_id: String,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
