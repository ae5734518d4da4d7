use sea_orm::entity::prelude::*;

/// An email a request promised (regional): written in the request's
/// transaction, sent by the region's mail worker. What it says is sealed
/// under the master key, since it may hold a code or a reset token.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mail_queue")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `message` (ready to send), or what to prepare first:
    /// `verification_code`, `verification_resend`, `password_reset`.
    pub kind: String,
    /// The sealed JSON of the mail; emptied once it is settled.
    pub sealed: Vec<u8>,
    /// `pending`, `sent`, `skipped` (nothing to send) or `failed`.
    pub status: String,
    pub attempts_made: i32,
    pub next_attempt_at: Option<DateTimeUtc>,
    /// While set and in the future, a worker owns the mail.
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub settled_at: Option<DateTimeUtc>,
}

/// Written by hand so that `{:?}` never shows the sealed mail.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("sealed", &crate::REDACTED)
            .field("status", &self.status)
            .field("attempts_made", &self.attempts_made)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
