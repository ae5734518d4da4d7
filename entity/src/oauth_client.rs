use sea_orm::entity::prelude::*;

/// An OAuth client of the application (regional): a relying party that
/// signs its users in through Gatehouse as an OpenID Provider. Its id is
/// its `client_id`.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_clients")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub name: String,
    /// `confidential` (has a secret) or `public` (a browser or native app).
    pub client_type: String,
    /// JSON arrays of exact-match URIs.
    pub redirect_uris: Json,
    pub post_logout_redirect_uris: Json,
    /// JSON arrays of names.
    pub grant_types: Json,
    pub scopes: Json,
    /// No consent screen: the application's own app.
    pub first_party: bool,
    /// `EdDSA` or `RS256`.
    pub id_token_signed_response_alg: String,
    /// SHA-256 of a confidential client's secret; none for a public client.
    pub secret_hash: Option<Vec<u8>>,
    pub secret_prefix: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the secret's hash; the
/// pattern names every field, so a new column does not compile until it is
/// listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            name,
            client_type,
            redirect_uris,
            post_logout_redirect_uris,
            grant_types,
            scopes,
            first_party,
            id_token_signed_response_alg,
            secret_hash: _,
            secret_prefix,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("name", name)
            .field("client_type", client_type)
            .field("redirect_uris", redirect_uris)
            .field("post_logout_redirect_uris", post_logout_redirect_uris)
            .field("grant_types", grant_types)
            .field("scopes", scopes)
            .field("first_party", first_party)
            .field("id_token_signed_response_alg", id_token_signed_response_alg)
            .field("secret_hash", &crate::REDACTED)
            .field("secret_prefix", secret_prefix)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
