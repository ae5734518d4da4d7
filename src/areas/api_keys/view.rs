//! How a secret key looks on the wire: an application's, a service
//! account's and a user's personal keys answer the same object.
use chrono::{DateTime, Utc};
use entity::{api_key, user_api_key};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::is_usable;

// Borrowed from the stored row: answering a key copies nothing. (Not a doc
// comment, which utoipa would publish.)
#[derive(Serialize, ToSchema)]
pub struct ApiKeyView<'a> {
    pub id: Uuid,
    pub name: &'a str,
    /// The first 12 characters of the secret, for recognising it.
    pub prefix: &'a str,
    // The stored JSON array of scope names, answered as it is.
    #[schema(value_type = Vec<String>)]
    pub scopes: &'a serde_json::Value,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub last_used_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// False once revoked or expired.
    pub active: bool,
}

impl<'a> From<&'a api_key::Model> for ApiKeyView<'a> {
    fn from(key: &'a api_key::Model) -> Self {
        ApiKeyView {
            active: is_usable(key.revoked_at, key.expires_at, Utc::now()),
            id: key.id,
            name: &key.name,
            prefix: &key.prefix,
            scopes: &key.scopes,
            expires_at: key.expires_at,
            created_at: key.created_at,
            last_used_at: key.last_used_at,
            revoked_at: key.revoked_at,
        }
    }
}

/// A personal key answers the same object.
impl<'a> From<&'a user_api_key::Model> for ApiKeyView<'a> {
    fn from(key: &'a user_api_key::Model) -> Self {
        ApiKeyView {
            active: is_usable(key.revoked_at, key.expires_at, Utc::now()),
            id: key.id,
            name: &key.name,
            prefix: &key.prefix,
            scopes: &key.scopes,
            expires_at: key.expires_at,
            created_at: key.created_at,
            last_used_at: key.last_used_at,
            revoked_at: key.revoked_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct IssuedApiKeyView<'a> {
    #[serde(flatten)]
    pub key: ApiKeyView<'a>,
    /// The secret, shown this once; only its hash is kept.
    pub secret: String,
}
