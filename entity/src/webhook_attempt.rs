use sea_orm::entity::prelude::*;

/// One delivery attempt of a message.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_attempts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub message_id: Uuid,
    pub attempt: i32,
    pub response_status: Option<i32>,
    pub duration_ms: i64,
    /// An error class (`timeout`, `connect`, `status`, `blocked_destination`…), never a response body.
    pub error: Option<String>,
    pub attempted_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
