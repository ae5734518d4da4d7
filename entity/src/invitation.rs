use sea_orm::entity::prelude::*;

/// An invitation to join an organization (regional). Its token is sent by
/// email; only the token's SHA-256 is kept.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invitations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub organization_id: Uuid,
    /// Normalised, as users' emails are.
    pub email: String,
    pub name: Option<String>,
    pub role: String,
    /// `pending`, `accepted` or `revoked` (a pending one past `expires_at` reads as `expired`).
    pub status: String,
    pub token_hash: Vec<u8>,
    /// The inviting user.
    pub invited_by: Uuid,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    /// When it was accepted or revoked.
    pub decided_at: Option<DateTimeUtc>,
    pub accepted_by: Option<Uuid>,
}

/// Written by hand so that `{:?}` never shows the token's hash.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("organization_id", &self.organization_id)
            .field("role", &self.role)
            .field("status", &self.status)
            .field("token_hash", &crate::REDACTED)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
