use sea_orm::entity::prelude::*;

/// A sign-in waiting for its second factor (regional): the first factor
/// (`method`: `password`, `oauth`) was proven; a code completes it. Only the
/// challenge token's SHA-256 is kept; it lives 5 minutes, takes 5 tries
/// (counted before they are compared) and is used once.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mfa_challenges")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub token_hash: Vec<u8>,
    pub method: String,
    /// The identity provider of an `oauth` first factor.
    pub provider: Option<String>,
    pub attempts: i32,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the token's hash.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("token_hash", &crate::REDACTED)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
