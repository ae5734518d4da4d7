use sea_orm::entity::prelude::*;

/// A user's account at an identity provider (regional): the provider's
/// subject, linked to one user of the application.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "user_identities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    /// One of the identity providers (`google`, `github`, …).
    pub provider: String,
    /// The provider's stable id of the account (`sub`, or GitHub's and
    /// Discord's numeric `id`).
    pub subject: String,
    /// The email the provider gave at the last sign-in.
    pub email: Option<String>,
    pub created_at: DateTimeUtc,
    pub last_sign_in_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
