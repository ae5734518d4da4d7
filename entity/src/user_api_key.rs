use sea_orm::entity::prelude::*;

/// An end user's personal API key, `uk_…` (regional). Stored like secret
/// keys: SHA-256 of the secret and its first characters.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "user_api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub prefix: String,
    #[sea_orm(unique)]
    pub secret_hash: Vec<u8>,
    pub scopes: Json,
    pub expires_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
    pub revoked_at: Option<DateTimeUtc>,
}

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            user_id,
            name,
            prefix,
            secret_hash: _,
            scopes,
            expires_at,
            created_at,
            last_used_at,
            revoked_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("user_id", user_id)
            .field("name", name)
            .field("prefix", prefix)
            .field("secret_hash", &crate::REDACTED)
            .field("scopes", scopes)
            .field("expires_at", expires_at)
            .field("created_at", created_at)
            .field("last_used_at", last_used_at)
            .field("revoked_at", revoked_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
