use sea_orm::entity::prelude::*;

/// A hook: an HTTPS endpoint of the application called at a point of a flow
/// (regional). Its signing secret is sealed with the master key.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "hooks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `pre_sign_up`.
    pub point: String,
    pub url: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub fail_open: bool,
    pub timeout_ms: i32,
    pub secret_sealed: Vec<u8>,
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
            point,
            url,
            description,
            enabled,
            fail_open,
            timeout_ms,
            secret_sealed: _,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("point", point)
            .field("url", url)
            .field("description", description)
            .field("enabled", enabled)
            .field("fail_open", fail_open)
            .field("timeout_ms", timeout_ms)
            .field("secret_sealed", &crate::REDACTED)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
