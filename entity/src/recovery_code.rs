use sea_orm::entity::prelude::*;

/// One of a user's ten recovery codes (regional), shown once when a factor
/// is confirmed; only its keyed hash is kept, and it is used once.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "recovery_codes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub code_hash: Vec<u8>,
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
            .field("used_at", &self.used_at)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
