use sea_orm::entity::prelude::*;

/// The verified link of a processor (connected) account to an application
/// (catalog). Written only when a signed processor event for the account
/// carried `metadata.gatehouse_application_id` naming an application that had
/// claimed it (`processor_account_claim`); removed when that application
/// claims another account. Unique both ways.
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
