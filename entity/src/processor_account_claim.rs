use sea_orm::entity::prelude::*;

/// An application's claim of a processor (connected) account (catalog): what
/// `POST /v1/billing/connect` records, one per application. A claim is
/// trusted for nothing: it becomes the verified link (`processor_account`)
/// only when a signed processor event for the account carries
/// `metadata.gatehouse_application_id` naming the claiming application. Any
/// number of applications may claim one account.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "processor_account_claims")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    pub processor_account_id: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
