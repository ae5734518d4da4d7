use sea_orm::entity::prelude::*;

/// An application's settings for one identity (OAuth) provider (regional):
/// one row per provider at most. Its client secret is sealed with the
/// master key.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_providers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `google`, `github`, `microsoft`, `apple`, `gitlab`, `discord`,
    /// `linkedin` or `slack`.
    pub provider: String,
    pub enabled: bool,
    pub client_id: Option<String>,
    pub client_secret_sealed: Option<Vec<u8>>,
    /// The scopes asked of the provider (a JSON array of strings).
    pub scopes: Json,
    pub use_shared_dev_credentials: bool,
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
            provider,
            enabled,
            client_id,
            client_secret_sealed,
            scopes,
            use_shared_dev_credentials,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("provider", provider)
            .field("enabled", enabled)
            .field("client_id", client_id)
            .field("client_secret_sealed", &client_secret_sealed.as_ref().map(|_| crate::REDACTED))
            .field("scopes", scopes)
            .field("use_shared_dev_credentials", use_shared_dev_credentials)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
