use sea_orm::entity::prelude::*;

/// A refresh token a session was given, by SHA-256 (regional). The current
/// token has no `rotated_at`; presenting a rotated one is reuse.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "refresh_tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub token_hash: Vec<u8>,
    pub application_id: Uuid,
    pub session_id: Uuid,
    pub created_at: DateTimeUtc,
    pub rotated_at: Option<DateTimeUtc>,
}

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { token_hash: _, application_id, session_id, created_at, rotated_at } = self;
        f.debug_struct("Model")
            .field("token_hash", &crate::REDACTED)
            .field("application_id", application_id)
            .field("session_id", session_id)
            .field("created_at", created_at)
            .field("rotated_at", rotated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
