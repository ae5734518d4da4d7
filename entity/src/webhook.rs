use sea_orm::entity::prelude::*;

/// A webhook endpoint (regional). Its signing secret is sealed with the
/// master key; after a rotation the previous one signs too, until it expires.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
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

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            url,
            description,
            event_types,
            status,
            secret_sealed: _,
            previous_secret_sealed: _,
            previous_secret_expires_at,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("url", url)
            .field("description", description)
            .field("event_types", event_types)
            .field("status", status)
            .field("secret_sealed", &crate::REDACTED)
            .field("previous_secret_sealed", &crate::REDACTED)
            .field("previous_secret_expires_at", previous_secret_expires_at)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
