use sea_orm::entity::prelude::*;

/// Which application a processor (connected) account belongs to (catalog):
/// how an inbound processor event, which names only the account, finds its
/// application and so its region. Unique both ways.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "processor_accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub processor_account_id: String,
    #[sea_orm(unique)]
    pub application_id: Uuid,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
