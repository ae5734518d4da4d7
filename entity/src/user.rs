use sea_orm::entity::prelude::*;

/// An end user of an application (regional). `email` is stored lowercased;
/// `password_hash` is an argon2id PHC string, absent for a user created
/// without a password.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
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
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
