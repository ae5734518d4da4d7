use sea_orm::entity::prelude::*;

/// An application's provider for one messaging channel (regional): `email`
/// or `sms`, one row each at most. Its secret (an SMTP password) is sealed
/// with the master key.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "messaging_providers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `email` or `sms`.
    pub channel: String,
    /// `shared`, `smtp` or `log`.
    pub kind: String,
    /// The kind's settings, without the secret.
    pub config: Json,
    pub secret_sealed: Option<Vec<u8>>,
    /// `unverified`, `verified` or `failing`.
    pub status: String,
    pub verified_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    /// When the settings last changed (a send's outcome does not change it).
    pub updated_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            channel,
            kind,
            config,
            secret_sealed,
            status,
            verified_at,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("channel", channel)
            .field("kind", kind)
            .field("config", config)
            .field("secret_sealed", &secret_sealed.as_ref().map(|_| crate::REDACTED))
            .field("status", status)
            .field("verified_at", verified_at)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
