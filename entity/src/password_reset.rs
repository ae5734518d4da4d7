use sea_orm::entity::prelude::*;

/// A password-reset token sent to a user (regional): only its SHA-256 is
/// stored; it expires after 30 minutes and is used once.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "password_resets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    #[sea_orm(unique)]
    pub token_hash: Vec<u8>,
    pub expires_at: DateTimeUtc,
    /// Used to reset the password, or superseded by a newer token.
    pub used_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the token's hash; the
/// pattern names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { id, application_id, user_id, token_hash: _, expires_at, used_at, created_at } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("user_id", user_id)
            .field("token_hash", &crate::REDACTED)
            .field("expires_at", expires_at)
            .field("used_at", used_at)
            .field("created_at", created_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
