use sea_orm::entity::prelude::*;

/// A signed-in end user's session (regional). Access tokens carry its id as
/// `sid`; it ends when revoked or when its refresh token goes unused past
/// `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub user_id: Uuid,
    /// `aal1`, or `aal2` after a second factor.
    pub aal: String,
    /// When the session last proved a second factor (at a sign-in or a
    /// step-up): how fresh its `aal2` is.
    pub aal2_at: Option<DateTimeUtc>,
    pub active_organization_id: Option<Uuid>,
    /// The user's email was verified (when the session opened, or since):
    /// its tokens' `email_verified`.
    pub email_verified: bool,
    pub created_at: DateTimeUtc,
    pub refreshed_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    pub revoked_at: Option<DateTimeUtc>,
    /// `sign_out`, `refresh_token_reuse`, `revoked`, `user_deleted`.
    pub revoked_reason: Option<String>,
    /// The OAuth client the session was issued to through the
    /// authorization-code flow; null for the API's own sign-in.
    pub oauth_client_id: Option<Uuid>,
    /// What that client was granted (space-separated scopes).
    pub oauth_scope: Option<String>,
    /// How the user signed in, when the access tokens say it (RFC 8176
    /// values, space-separated): an SSO sign-in's `sso`, or its identity
    /// provider's own. Null for the other sign-ins.
    pub amr: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
