use sea_orm::entity::prelude::*;

/// An application's token signing key (regional): Ed25519, or RSA for
/// clients that ask for RS256 ID tokens. The private half
/// is sealed with the master key. `retired_at` is set when a newer key takes
/// over; the public half stays published until tokens it signed expire.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "signing_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub public_key: Vec<u8>,
    pub private_key_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
    /// Stops signing (and, after the grace, being published) from then.
    pub retired_at: Option<DateTimeUtc>,
    /// Signs from then; null: from its creation. A scheduled rotation
    /// publishes its key ahead of this, so every verifier holds it first.
    pub signs_from: Option<DateTimeUtc>,
    /// `EdDSA` (an Ed25519 key: `public_key` is its 32 bytes) or `RS256`
    /// (an RSA key: `public_key` is its PKCS #1 DER). Each algorithm has
    /// its own current key.
    pub algorithm: String,
}

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            public_key,
            private_key_sealed: _,
            created_at,
            retired_at,
            signs_from,
            algorithm,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("public_key", public_key)
            .field("private_key_sealed", &crate::REDACTED)
            .field("created_at", created_at)
            .field("retired_at", retired_at)
            .field("signs_from", signs_from)
            .field("algorithm", algorithm)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
