use sea_orm::entity::prelude::*;

/// The hosted sign-in pages' cookie (regional): only its SHA-256 is kept.
/// It stands for the session the user signed in with, while that session
/// lives: the application's clients sign the user in without a prompt.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "hosted_logins")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub cookie_hash: Vec<u8>,
    pub application_id: Uuid,
    pub session_id: Uuid,
    pub created_at: DateTimeUtc,
    /// How the user signed in (RFC 8176 values, space-separated).
    pub amr: Option<String>,
}

/// Written by hand so that `{:?}` never shows the cookie's hash.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { cookie_hash: _, application_id, session_id, created_at, amr } = self;
        f.debug_struct("Model")
            .field("cookie_hash", &crate::REDACTED)
            .field("application_id", application_id)
            .field("session_id", session_id)
            .field("created_at", created_at)
            .field("amr", amr)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
