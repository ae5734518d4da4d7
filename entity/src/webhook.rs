use sea_orm::entity::prelude::*;

/// A webhook endpoint (regional). Its signing secret is sealed with the
/// master key; after a rotation the previous one signs too, until it expires.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhooks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub url: String,
    pub description: Option<String>,
    /// JSON array of event types or dotted families; empty: every event.
    pub event_types: Json,
    /// `active` or `disabled`.
    pub status: String,
    pub secret_sealed: Vec<u8>,
    pub previous_secret_sealed: Option<Vec<u8>>,
    pub previous_secret_expires_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
