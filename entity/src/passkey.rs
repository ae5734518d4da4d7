use sea_orm::entity::prelude::*;

/// A user's passkey (regional): a WebAuthn credential registered on the
/// application's relying-party id. `credential` is the JSON `webauthn-rs`
/// keeps (public key, signature counter, backup and verification flags);
/// it is updated after each authentication. The credential id is unique
/// per application.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "passkeys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    pub credential_id: Vec<u8>,
    #[sea_orm(column_type = "Text")]
    pub credential: String,
    pub name: String,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
