use sea_orm::entity::prelude::*;

/// The key that seals a data subject's personal data in audit rows
/// (regional): 32 random bytes, sealed under the master key. The subject is
/// a user (its id) or an email no user has yet (an id derived from it).
/// Erasure deletes the row, and what it sealed can no longer be read.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "personal_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub subject_id: Uuid,
    pub application_id: Uuid,
    pub key_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the key; the pattern names
/// every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { subject_id, application_id, key_sealed: _, created_at } = self;
        f.debug_struct("Model")
            .field("subject_id", subject_id)
            .field("application_id", application_id)
            .field("key_sealed", &crate::REDACTED)
            .field("created_at", created_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
