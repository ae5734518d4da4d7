use sea_orm::entity::prelude::*;

/// A user's second factor (regional): today `totp`. Its secret is sealed
/// with the master key, bound to the application and the user. `pending`
/// until a first code confirms it, then `active`. `last_used_step` is the
/// newest TOTP time step accepted: a code is never accepted twice.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mfa_factors")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub kind: String,
    pub secret_sealed: Vec<u8>,
    pub status: String,
    pub last_used_step: Option<i64>,
    pub created_at: DateTimeUtc,
    pub confirmed_at: Option<DateTimeUtc>,
}

/// Written by hand so that `{:?}` never shows the sealed secret.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("kind", &self.kind)
            .field("secret_sealed", &crate::REDACTED)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
