use sea_orm::entity::prelude::*;

/// One event for one endpoint: the outbox row, written in the transaction of
/// the change it reports, then delivered (its id is the `webhook-id`).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_messages")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub webhook_id: Uuid,
    pub event_type: String,
    /// The body exactly as it is sent and signed.
    pub payload: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts_made: i32,
    pub next_attempt_at: Option<DateTimeUtc>,
    /// While set and in the future, a worker owns the message.
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
