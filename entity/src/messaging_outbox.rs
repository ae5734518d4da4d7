use sea_orm::entity::prelude::*;

/// A message recorded instead of sent (regional): by the `log` kind, or
/// because the channel has no provider. Never dropped.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "messaging_outbox")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `email` or `sms`.
    pub channel: String,
    /// `log` (the provider's kind) or `no_provider`.
    pub reason: String,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
