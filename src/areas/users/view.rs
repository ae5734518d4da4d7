//! How a user and a session look on the wire: in the users area's answers
//! and in every sign-in's.
use chrono::{DateTime, Utc};
use entity::{session, user};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Serialize, ToSchema)]
pub struct UserView {
    pub id: Uuid,
    pub email: String,
    /// Values of the application's profile fields.
    #[schema(value_type = Object)]
    pub profile: serde_json::Value,
    pub has_password: bool,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub last_sign_in_at: Option<DateTime<Utc>>,
    /// When the user proved the email; null: not yet.
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub email_verified_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&user::Model> for UserView {
    fn from(user: &user::Model) -> Self {
        UserView {
            id: user.id,
            email: user.email.clone(),
            profile: user.profile.clone(),
            has_password: user.password_hash.is_some(),
            last_sign_in_at: user.last_sign_in_at,
            email_verified_at: user.email_verified_at,
            created_at: user.created_at,
            updated_at: user.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SessionView {
    pub id: Uuid,
    pub user_id: Uuid,
    /// `aal1`, or `aal2` after a second factor.
    pub aal: String,
    pub active_organization_id: Option<Uuid>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub refreshed_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub expires_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub revoked_at: Option<DateTime<Utc>>,
    pub active: bool,
}

impl From<&session::Model> for SessionView {
    fn from(session: &session::Model) -> Self {
        SessionView {
            id: session.id,
            user_id: session.user_id,
            aal: session.aal.clone(),
            active_organization_id: session.active_organization_id,
            created_at: session.created_at,
            refreshed_at: session.refreshed_at,
            expires_at: session.expires_at,
            revoked_at: session.revoked_at,
            active: session.revoked_at.is_none() && session.expires_at > Utc::now(),
        }
    }
}
