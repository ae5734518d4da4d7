use sea_orm::entity::prelude::*;

/// An end user of an application (regional). `email` is stored lowercased;
/// `password_hash` is an argon2id PHC string, absent for a user created
/// without a password.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub email: String,
    pub password_hash: Option<String>,
    /// JSON object of profile-field values, keyed by field key.
    pub profile: Json,
    pub last_sign_in_at: Option<DateTimeUtc>,
    /// When the user proved the email (a code, or a provider that verified it).
    pub email_verified_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// The user's id in the system they were imported from; unique in the
    /// application.
    pub external_id: Option<String>,
}

/// Written by hand so that `{:?}` never shows the secret; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            email,
            password_hash: _,
            profile,
            last_sign_in_at,
            email_verified_at,
            created_at,
            updated_at,
            external_id,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("email", email)
            .field("password_hash", &crate::REDACTED)
            .field("profile", profile)
            .field("last_sign_in_at", last_sign_in_at)
            .field("email_verified_at", email_verified_at)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .field("external_id", external_id)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
