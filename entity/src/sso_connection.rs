use sea_orm::entity::prelude::*;

/// An organization's enterprise SSO connection (regional): its own
/// identity provider, that its people at its verified domains sign in
/// with. An OpenID Provider (`oidc`) is found by discovery, its client
/// secret sealed to the master key; a SAML 2.0 one (`saml`) is described by
/// its metadata, and leaves the OpenID columns empty.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sso_connections")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub organization_id: Uuid,
    /// `oidc` or `saml`.
    pub protocol: String,
    pub name: String,
    pub enabled: bool,
    /// The organization's users at its verified domains may not sign in
    /// with a password while the connection is enabled.
    pub sso_required: bool,
    /// The role a first sign-in grants in the organization.
    pub default_role: String,
    /// Whose grant `default_role` is: the owner who set it from
    /// the dashboard, re-checked at each grant as an SSO domain's claimer
    /// is; null when the application's secret key set it.
    pub role_granted_by: Option<Uuid>,
    /// The provider's issuer, as its ID tokens name it; a SAML identity
    /// provider's entity ID.
    pub issuer: String,
    pub client_id: String,
    pub client_secret_sealed: Vec<u8>,
    /// Asked of the provider, space-separated (`openid` among them).
    pub scopes: String,
    /// Where the browser is sent: the authorization endpoint, or a SAML
    /// identity provider's single sign-on endpoint (HTTP-Redirect binding).
    pub authorization_url: String,
    pub token_url: String,
    pub jwks_url: String,
    pub userinfo_url: Option<String>,
    /// Which claims hold the address and fill profile fields
    /// (`{"email": claim, "profile": {field: claim}}`).
    pub attribute_mapping: Json,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// A SAML identity provider's metadata, as last read: its signing
    /// certificates are the only keys its responses are checked against.
    #[sea_orm(column_type = "Text", nullable)]
    pub idp_metadata: Option<String>,
    /// Where that metadata is read from, when it was given by URL.
    pub idp_metadata_url: Option<String>,
    /// A SAML connection's own private key (PKCS #8 PEM), sealed to the
    /// master key: it signs the requests of an IdP that wants them signed,
    /// and decrypts encrypted assertions.
    pub sp_key_sealed: Option<Vec<u8>>,
    /// That key's self-signed certificate (PEM), in our SP metadata.
    #[sea_orm(column_type = "Text", nullable)]
    pub sp_certificate: Option<String>,
    /// The IdP is asked to encrypt its assertions (our metadata names the
    /// encryption certificate) and a plaintext one is refused.
    pub encrypt_assertions: bool,
    /// The IdP may start a sign-in (an unsolicited response); off unless enabled.
    pub idp_initiated: bool,
    /// Where such a sign-in sends the browser with its one-time code.
    pub idp_initiated_redirect_uri: Option<String>,
}

/// Written by hand so that `{:?}` never shows the sealed secret; the
/// pattern names every field, so a new column does not compile until it is
/// listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            organization_id,
            protocol,
            name,
            enabled,
            sso_required,
            default_role,
            role_granted_by,
            issuer,
            client_id,
            client_secret_sealed: _,
            scopes,
            authorization_url,
            token_url,
            jwks_url,
            userinfo_url,
            attribute_mapping,
            created_at,
            updated_at,
            idp_metadata,
            idp_metadata_url,
            sp_key_sealed: _,
            sp_certificate,
            encrypt_assertions,
            idp_initiated,
            idp_initiated_redirect_uri,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("organization_id", organization_id)
            .field("protocol", protocol)
            .field("name", name)
            .field("enabled", enabled)
            .field("sso_required", sso_required)
            .field("default_role", default_role)
            .field("role_granted_by", role_granted_by)
            .field("issuer", issuer)
            .field("client_id", client_id)
            .field("client_secret_sealed", &crate::REDACTED)
            .field("scopes", scopes)
            .field("authorization_url", authorization_url)
            .field("token_url", token_url)
            .field("jwks_url", jwks_url)
            .field("userinfo_url", userinfo_url)
            .field("attribute_mapping", attribute_mapping)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .field("idp_metadata", &idp_metadata.as_ref().map(|xml| xml.len()))
            .field("idp_metadata_url", idp_metadata_url)
            .field("sp_key_sealed", &crate::REDACTED)
            .field("sp_certificate", &sp_certificate.as_ref().map(|pem| pem.len()))
            .field("encrypt_assertions", encrypt_assertions)
            .field("idp_initiated", idp_initiated)
            .field("idp_initiated_redirect_uri", idp_initiated_redirect_uri)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
