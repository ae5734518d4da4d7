use sea_orm::entity::prelude::*;

/// A service account's key, `sak_…` (regional). Stored like secret keys:
/// SHA-256 of the secret and its first characters. Its scopes are its
/// account's.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "service_account_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub service_account_id: Uuid,
    pub name: String,
    pub prefix: String,
    #[sea_orm(unique)]
    pub secret_hash: Vec<u8>,
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
            service_account_id,
            name,
            prefix,
            secret_hash: _,
            expires_at,
            created_at,
            last_used_at,
            revoked_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("service_account_id", service_account_id)
            .field("name", name)
            .field("prefix", prefix)
            .field("secret_hash", &crate::REDACTED)
            .field("expires_at", expires_at)
            .field("created_at", created_at)
            .field("last_used_at", last_used_at)
            .field("revoked_at", revoked_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The key's account: read with the key in one query when a key is presented.
    #[sea_orm(
        belongs_to = "super::service_account::Entity",
        from = "Column::ServiceAccountId",
        to = "super::service_account::Column::Id"
    )]
    ServiceAccount,
}

impl Related<super::service_account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ServiceAccount.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
