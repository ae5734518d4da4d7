use sea_orm::entity::prelude::*;

/// A code sent to prove a user's email (regional). Only its keyed hash is
/// kept; it dies when used, after 15 minutes, after 5 wrong tries, or when
/// a newer one is sent.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "email_verifications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub code_hash: Vec<u8>,
    /// Wrong codes tried against it.
    pub attempts: i32,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the code's hash.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("code_hash", &crate::REDACTED)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
