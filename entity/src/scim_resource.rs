use sea_orm::entity::prelude::*;

/// A SCIM User or Group of a directory (regional), as the directory sent
/// it: `attributes` holds the attributes of the published schema; the
/// other columns are what filters, uniqueness and provisioning read.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "scim_resources")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub directory_id: Uuid,
    /// `User` or `Group`.
    pub kind: String,
    /// The lower-cased `userName` (a User) or `displayName` (a Group):
    /// unique in the directory for its kind.
    pub match_key: String,
    pub external_id: Option<String>,
    /// A User's Gatehouse user, once it has an email.
    pub user_id: Option<Uuid>,
    /// A User's `active`; a Group is always active.
    pub active: bool,
    pub attributes: Json,
    /// Counts changes: the ETag (`W/"<version>"`).
    pub version: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
