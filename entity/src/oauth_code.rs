use sea_orm::entity::prelude::*;

/// An authorization code of the application's OpenID Provider (regional):
/// only its SHA-256 is kept. Bound to its client, redirect URI and PKCE
/// challenge; lives 60 s; used once.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_codes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub code_hash: Vec<u8>,
    pub application_id: Uuid,
    pub client_id: Uuid,
    /// The hosted pages' session the user signed in with.
    pub login_session_id: Uuid,
    pub user_id: Uuid,
    pub redirect_uri: String,
    /// Space-separated granted scopes.
    pub scope: String,
    pub nonce: Option<String>,
    /// S256 challenge (base64url of SHA-256 of the verifier).
    pub code_challenge: Option<String>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    pub used_at: Option<DateTimeUtc>,
    /// The session its exchange opened: a second use revokes it.
    pub issued_session_id: Option<Uuid>,
    /// The organization the user chose for the `organization` scope: the
    /// exchange's session has it active.
    pub organization_id: Option<Uuid>,
    /// How the user signed in (RFC 8176 values, space-separated), for the
    /// ID token's `amr`.
    pub amr: Option<String>,
}

/// Written by hand so that `{:?}` never shows the code's hash; the pattern
/// names every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            code_hash: _,
            application_id,
            client_id,
            login_session_id,
            user_id,
            redirect_uri,
            scope,
            nonce,
            code_challenge,
            created_at,
            expires_at,
            used_at,
            issued_session_id,
            organization_id,
            amr,
        } = self;
        f.debug_struct("Model")
            .field("code_hash", &crate::REDACTED)
            .field("application_id", application_id)
            .field("client_id", client_id)
            .field("login_session_id", login_session_id)
            .field("user_id", user_id)
            .field("redirect_uri", redirect_uri)
            .field("scope", scope)
            .field("nonce", nonce)
            .field("code_challenge", code_challenge)
            .field("created_at", created_at)
            .field("expires_at", expires_at)
            .field("used_at", used_at)
            .field("issued_session_id", issued_session_id)
            .field("organization_id", organization_id)
            .field("amr", amr)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
