use sea_orm::entity::prelude::*;

/// A WebAuthn ceremony in flight (regional): the server-side state of one
/// registration or authentication (`purpose`: `register`, `sign_in`,
/// `second_factor`, `step_up`), found by the SHA-256 of the handle the
/// client holds; 5 minutes, used once. `user_id` is null for a
/// discoverable sign-in (the credential names its user).
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "passkey_ceremonies")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Option<Uuid>,
    pub purpose: String,
    pub token_hash: Vec<u8>,
    /// The ceremony's state as `webauthn-rs` serialises it (it holds the challenge).
    #[sea_orm(column_type = "Text")]
    pub state: String,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the handle's hash or the challenge.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("purpose", &self.purpose)
            .field("token_hash", &crate::REDACTED)
            .field("state", &crate::REDACTED)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
