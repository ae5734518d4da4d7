use sea_orm::entity::prelude::*;

/// A host enrollment token (regional database). Only the SHA-256 of the
/// secret is stored, plus its first characters for display.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "enrollment_tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub label: String,
    pub host_group_id: Option<Uuid>,
    /// `linux` or `windows`; none: either.
    pub platform: Option<String>,
    pub prefix: String,
    #[sea_orm(unique)]
    pub secret_hash: Vec<u8>,
    pub expires_at: Option<DateTimeUtc>,
    pub max_uses: Option<i32>,
    pub uses: i32,
    pub revoked_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the secret's hash; the
/// pattern names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            label,
            host_group_id,
            platform,
            prefix,
            secret_hash: _,
            expires_at,
            max_uses,
            uses,
            revoked_at,
            created_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("label", label)
            .field("host_group_id", host_group_id)
            .field("platform", platform)
            .field("prefix", prefix)
            .field("secret_hash", &crate::REDACTED)
            .field("expires_at", expires_at)
            .field("max_uses", max_uses)
            .field("uses", uses)
            .field("revoked_at", revoked_at)
            .field("created_at", created_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
