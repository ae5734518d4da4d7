use sea_orm::entity::prelude::*;

/// One sign-in with an identity provider in progress (regional): started
/// with a `state` (only its SHA-256 kept) and a PKCE verifier (sealed),
/// called back once, then holding a one-time code (only its SHA-256 kept)
/// until it is exchanged once.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_flows")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub provider: String,
    #[sea_orm(unique)]
    pub state_hash: Vec<u8>,
    pub code_verifier_sealed: Vec<u8>,
    /// Sent to the provider in the authorization request; the ID token
    /// must carry it back.
    pub nonce: String,
    /// Where the browser goes at the end (on the application's origins).
    pub redirect_uri: String,
    /// The application's own `state`, given back to it unchanged.
    pub client_state: Option<String>,
    /// The application's PKCE challenge (S256) for the exchange, if it sent one.
    pub client_code_challenge: Option<String>,
    /// The `state` is refused after this (10 minutes).
    pub expires_at: DateTimeUtc,
    /// When the provider called back (the `state` is single use).
    pub called_back_at: Option<DateTimeUtc>,
    /// The user the callback signed in.
    pub user_id: Option<Uuid>,
    #[sea_orm(unique)]
    pub code_hash: Option<Vec<u8>>,
    pub code_expires_at: Option<DateTimeUtc>,
    pub exchanged_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    /// An SSO sign-in's organization (its connection's), set at the
    /// callback: the session opens with it active.
    pub organization_id: Option<Uuid>,
    /// An SSO sign-in's `amr` (the identity provider's, else `sso`),
    /// space-separated, set at the callback.
    pub amr: Option<String>,
}

/// Written by hand so that `{:?}` never shows the hashes or the sealed
/// verifier; the pattern names every field, so a new column does not
/// compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            provider,
            state_hash: _,
            code_verifier_sealed: _,
            nonce,
            redirect_uri,
            client_state,
            client_code_challenge,
            expires_at,
            called_back_at,
            user_id,
            code_hash,
            code_expires_at,
            exchanged_at,
            created_at,
            organization_id,
            amr,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("provider", provider)
            .field("state_hash", &crate::REDACTED)
            .field("code_verifier_sealed", &crate::REDACTED)
            .field("nonce", nonce)
            .field("redirect_uri", redirect_uri)
            .field("client_state", client_state)
            .field("client_code_challenge", client_code_challenge)
            .field("expires_at", expires_at)
            .field("called_back_at", called_back_at)
            .field("user_id", user_id)
            .field("code_hash", &code_hash.as_ref().map(|_| crate::REDACTED))
            .field("code_expires_at", code_expires_at)
            .field("exchanged_at", exchanged_at)
            .field("created_at", created_at)
            .field("organization_id", organization_id)
            .field("amr", amr)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
