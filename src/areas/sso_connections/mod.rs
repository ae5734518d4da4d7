//! Enterprise SSO connections: an organization's own OpenID Provider (Okta,
//! Entra ID, Google Workspace, Keycloak…), which its people at its verified
//! domains sign in with.
//!
//! A connection is made with the application's secret key from the
//! provider's issuer (its endpoints read from its discovery document,
//! through the client that reaches only what the application's environment
//! may reach) and the organization's client at it, whose secret is sealed.
//! The sign-in itself is provider sign-in's, under the provider name
//! `sso:{connection_id}` ([`provider_name`]), with the rules of
//! [`sign_in`]: the address must be at a domain the organization verified,
//! and the user joins the organization.
pub mod attributes;
pub mod http;
pub mod records;
pub mod saml;
pub mod sign_in;

use entity::{sso_connection, sso_domain};
use sea_orm::{ActiveModelTrait, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder};
use serde_json::{json, Value};
use uuid::Uuid;

use self::attributes::AttributeMapping;
use super::{
    organizations::{self, OrganizationError},
    sso_domains,
    validate::{Invalid, Issues},
};
use crate::{
    clock,
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, Code},
    events::{catalog::EventType, url_safety},
    oauth::client::ProviderClient,
    storage::{Limit, ReserveError, TenantConn, TenantScope},
};

pub const MAX_NAME: usize = 255;
pub const MAX_CLIENT_ID: usize = 255;
pub const MAX_CLIENT_SECRET: usize = 1024;
pub const MAX_SCOPES: usize = 20;
pub const OIDC: &str = "oidc";
pub const SAML: &str = "saml";
/// The protocols a connection speaks.
pub const PROTOCOLS: [&str; 2] = [OIDC, SAML];
/// The scopes asked when the connection names none.
pub const DEFAULT_SCOPES: [&str; 3] = ["openid", "email", "profile"];

pub use records::{connection_of_provider, provider_name};

/// Where a connection's client secret is sealed to.
pub fn secret_context(application_id: Uuid, connection_id: Uuid) -> String {
    format!("{application_id}/sso_connection/{connection_id}/client_secret")
}

pub fn open_client_secret(key: &MasterKey, row: &sso_connection::Model) -> Option<String> {
    let opened = seal::open(key, &secret_context(row.application_id, row.id), &row.client_secret_sealed).ok()?;
    String::from_utf8(opened).ok()
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("SSO connection `{0}` not found")]
    NotFound(Uuid),
    /// The issuer's discovery document (or a SAML metadata URL) is
    /// unreachable, unreadable, names another issuer, or an endpoint the
    /// rules refuse.
    #[error("the issuer's discovery failed: {0}")]
    Discovery(String),
    #[error("`issuer` {0}")]
    IssuerUrl(String),
    #[error("`idp_metadata_url` {0}")]
    MetadataUrl(String),
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ConnectionError> for ApiError {
    fn from(err: ConnectionError) -> Self {
        match err {
            ConnectionError::NotFound(id) => ApiError::not_found("SSO connection", id),
            ConnectionError::Discovery(why) => ApiError::new(
                Code::SsoDiscoveryFailed,
                format!("The issuer's discovery document could not be used: {why}."),
            ),
            ConnectionError::IssuerUrl(issue) => ApiError::invalid_url("issuer", issue),
            ConnectionError::MetadataUrl(issue) => ApiError::invalid_url("idp_metadata_url", issue),
            ConnectionError::Organization(err) => err.into(),
            ConnectionError::Invalid(err) => err.into(),
            ConnectionError::Limit(err) => err.into(),
            ConnectionError::Db(err) => err.into(),
        }
    }
}

/// The endpoints an issuer's discovery document names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    pub issuer: String,
    pub authorization_url: String,
    pub token_url: String,
    pub jwks_url: String,
    pub userinfo_url: Option<String>,
}

/// Where the provider is and what it may reach: the application's
/// environment decides (`https` and public addresses for production).
#[derive(Clone, Copy)]
pub struct Reaching<'a> {
    pub client: &'a ProviderClient,
    pub production: bool,
    pub reach: url_safety::Reach,
}

/// Reads the issuer's discovery document (OpenID Connect Discovery 1.0):
/// it must name the same issuer, and each endpoint must be a URL the
/// application may call.
pub async fn discover(reaching: Reaching<'_>, issuer: &str) -> Result<Discovered, ConnectionError> {
    url_safety::check(issuer, reaching.production, reaching.reach).map_err(ConnectionError::IssuerUrl)?;
    let document = reaching
        .client
        .discover(issuer, reaching.reach)
        .await
        .map_err(|err| ConnectionError::Discovery(err.to_string()))?;
    // Discovery section 4.3: the document's issuer is the one asked for.
    if document["issuer"].as_str() != Some(issuer) {
        return Err(ConnectionError::Discovery(format!("it names another issuer than `{issuer}`")));
    }
    let endpoint = |field: &str| -> Result<Option<String>, ConnectionError> {
        let Some(value) = document.get(field).filter(|v| !v.is_null()) else { return Ok(None) };
        let url = value.as_str().ok_or_else(|| ConnectionError::Discovery(format!("`{field}` is not a URL")))?;
        url_safety::check(url, reaching.production, reaching.reach)
            .map_err(|issue| ConnectionError::Discovery(format!("`{field}` {issue}")))?;
        Ok(Some(url.to_string()))
    };
    let required =
        |field: &str| endpoint(field)?.ok_or_else(|| ConnectionError::Discovery(format!("it has no `{field}`")));
    Ok(Discovered {
        issuer: issuer.to_string(),
        authorization_url: required("authorization_endpoint")?,
        token_url: required("token_endpoint")?,
        jwks_url: required("jwks_uri")?,
        userinfo_url: endpoint("userinfo_endpoint")?,
    })
}

/// Reads a SAML identity provider's metadata from its URL, which must be
/// one the application may call.
pub async fn fetch_metadata(reaching: Reaching<'_>, url: &str) -> Result<String, ConnectionError> {
    url_safety::check(url, reaching.production, reaching.reach).map_err(ConnectionError::MetadataUrl)?;
    reaching
        .client
        .saml_metadata(url, reaching.reach)
        .await
        .map_err(|err| ConnectionError::Discovery(format!("the metadata URL: {err}")))
}

/// Checks `scopes`: at most [`MAX_SCOPES`] scope tokens (RFC 6749 section
/// 3.3), `openid` added when missing.
pub fn scopes(issues: &mut Issues, given: Option<Vec<String>>) -> Vec<String> {
    let mut scopes = given.unwrap_or_else(|| DEFAULT_SCOPES.iter().map(|s| s.to_string()).collect());
    if scopes.len() > MAX_SCOPES {
        issues.add("scopes", format!("at most {MAX_SCOPES} entries"));
    }
    let token =
        |s: &str| (1..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
    if let Some(bad) = scopes.iter().find(|s| !token(s)) {
        issues.add("scopes", format!("`{}` is not a scope", bad.escape_debug()));
    }
    if scopes.iter().enumerate().any(|(i, s)| scopes[..i].contains(s)) {
        issues.add("scopes", "names a scope twice");
    }
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    scopes
}

/// The identity provider a connection signs in with, checked.
pub enum Provider {
    /// An OpenID Provider: the organization's client at it, and the
    /// endpoints its discovery document named.
    OpenId { client_id: String, client_secret: String, scopes: Vec<String>, discovered: Discovered },
    /// A SAML 2.0 identity provider: its metadata as given (or read from
    /// `metadata_url`), the connection's own key, and how it signs in.
    Saml { metadata: SamlMetadata, key: saml::credentials::SpKey, options: SamlOptions },
}

/// How a SAML connection signs in.
#[derive(Clone, Debug, Default)]
pub struct SamlOptions {
    /// Assertions come encrypted to the connection's key, and only so.
    pub encrypt_assertions: bool,
    /// The IdP may start sign-ins, which land at `idp_initiated_redirect_uri`.
    pub idp_initiated: bool,
    pub idp_initiated_redirect_uri: Option<String>,
}

/// A SAML identity provider's metadata, read.
pub struct SamlMetadata {
    pub xml: String,
    pub url: Option<String>,
    pub read: saml::IdentityProvider,
}

/// A connection as asked for, checked.
pub struct NewConnection {
    pub name: String,
    pub default_role: String,
    pub enabled: bool,
    pub sso_required: bool,
    /// Whose grant `default_role` is ([`sso_connection::Model::role_granted_by`]).
    pub role_granted_by: Option<Uuid>,
    pub attribute_mapping: AttributeMapping,
}

/// Makes a connection for an organization.
pub async fn create(
    scope: &TenantScope,
    key: &MasterKey,
    organization_id: Uuid,
    new: NewConnection,
    provider: Provider,
    limit: u64,
) -> Result<sso_connection::Model, ConnectionError> {
    let mut txn = scope.begin().await?;
    organizations::find(&txn, organization_id).await?;
    txn.reserve::<sso_connection::Entity>(Limit { max: limit, what: "SSO connections", field: "name" }, |all| all)
        .await?;
    let now = clock::now();
    let id = Uuid::now_v7();
    let application_id = txn.application_id();
    let mut row = sso_connection::Model {
        id,
        application_id,
        organization_id,
        protocol: String::new(),
        name: new.name,
        enabled: new.enabled,
        sso_required: new.sso_required,
        default_role: new.default_role,
        role_granted_by: new.role_granted_by,
        issuer: String::new(),
        client_id: String::new(),
        client_secret_sealed: Vec::new(),
        scopes: String::new(),
        authorization_url: String::new(),
        token_url: String::new(),
        jwks_url: String::new(),
        userinfo_url: None,
        attribute_mapping: new.attribute_mapping.to_value(),
        created_at: now,
        updated_at: now,
        idp_metadata: None,
        idp_metadata_url: None,
        sp_key_sealed: None,
        sp_certificate: None,
        encrypt_assertions: false,
        idp_initiated: false,
        idp_initiated_redirect_uri: None,
    };
    set_provider(&mut row, key, provider);
    txn.insert(sso_connection::ActiveModel::from(row.clone())).await?;
    txn.audit(EventType::SsoConnectionCreated, Some(id), audit_data(&row)).await?;
    txn.commit().await?;
    Ok(row)
}

/// Writes the provider's columns: those of its protocol, the others empty.
fn set_provider(row: &mut sso_connection::Model, key: &MasterKey, provider: Provider) {
    match provider {
        Provider::OpenId { client_id, client_secret, scopes, discovered } => {
            row.protocol = OIDC.into();
            row.client_id = client_id;
            row.client_secret_sealed =
                seal::seal(key, &secret_context(row.application_id, row.id), client_secret.as_bytes());
            row.scopes = scopes.join(" ");
            set_discovered(row, discovered);
            row.idp_metadata = None;
            row.idp_metadata_url = None;
        }
        Provider::Saml { metadata, key: sp_key, options } => {
            row.protocol = SAML.into();
            set_saml(row, metadata);
            row.sp_key_sealed = Some(saml::credentials::seal_key(key, row.application_id, row.id, &sp_key));
            row.sp_certificate = Some(sp_key.certificate_pem);
            set_saml_options(row, options);
        }
    }
}

fn set_discovered(row: &mut sso_connection::Model, found: Discovered) {
    row.issuer = found.issuer;
    row.authorization_url = found.authorization_url;
    row.token_url = found.token_url;
    row.jwks_url = found.jwks_url;
    row.userinfo_url = found.userinfo_url;
}

fn set_saml_options(row: &mut sso_connection::Model, options: SamlOptions) {
    row.encrypt_assertions = options.encrypt_assertions;
    row.idp_initiated = options.idp_initiated;
    row.idp_initiated_redirect_uri = options.idp_initiated_redirect_uri;
}

fn set_saml(row: &mut sso_connection::Model, metadata: SamlMetadata) {
    row.issuer = metadata.read.entity_id;
    row.authorization_url = metadata.read.sso_url;
    row.idp_metadata = Some(metadata.xml);
    row.idp_metadata_url = metadata.url;
}

fn audit_data(row: &sso_connection::Model) -> Value {
    json!({"organization_id": row.organization_id, "protocol": row.protocol, "name": row.name,
        "issuer": row.issuer, "client_id": row.client_id, "idp_metadata_url": row.idp_metadata_url,
        "encrypt_assertions": row.encrypt_assertions, "idp_initiated": row.idp_initiated,
        "idp_initiated_redirect_uri": row.idp_initiated_redirect_uri, "enabled": row.enabled,
        "sso_required": row.sso_required, "default_role": row.default_role,
        "attribute_mapping": row.attribute_mapping})
}

/// The organization's connections, oldest first.
pub async fn list(db: &impl TenantConn, organization_id: Uuid) -> Result<Vec<sso_connection::Model>, ConnectionError> {
    organizations::find(db, organization_id).await?;
    Ok(db
        .find::<sso_connection::Entity>()
        .filter(sso_connection::Column::OrganizationId.eq(organization_id))
        .order_by_asc(sso_connection::Column::CreatedAt)
        .order_by_asc(sso_connection::Column::Id)
        .all(db.conn())
        .await?)
}

/// A connection of the organization; one of another organization is 404.
pub async fn find(
    db: &impl TenantConn,
    organization_id: Uuid,
    id: Uuid,
) -> Result<sso_connection::Model, ConnectionError> {
    db.find_by_id::<sso_connection::Entity>(id)
        .filter(sso_connection::Column::OrganizationId.eq(organization_id))
        .one(db.conn())
        .await?
        .ok_or(ConnectionError::NotFound(id))
}

/// A connection by its id alone (a sign-in names only the connection).
pub async fn find_any(db: &impl TenantConn, id: Uuid) -> Result<Option<sso_connection::Model>, DbErr> {
    db.find_by_id::<sso_connection::Entity>(id).one(db.conn()).await
}

/// A change to a connection; `None` keeps a value.
#[derive(Default)]
pub struct Change {
    pub name: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub default_role: Option<String>,
    pub enabled: Option<bool>,
    pub sso_required: Option<bool>,
    /// A new issuer, or the same one read again (its endpoints moved).
    pub discovered: Option<Discovered>,
    /// A SAML identity provider's metadata, new or read again (its
    /// certificates rotated).
    pub saml: Option<SamlMetadata>,
    /// A SAML connection's options, whole (the request's over the row's).
    pub saml_options: Option<SamlOptions>,
    pub attribute_mapping: Option<AttributeMapping>,
    /// Who asks: the owner on the dashboard, whose grant a new
    /// `default_role` then is, or `None` for the secret key.
    pub by: Option<Uuid>,
}

pub async fn update(
    scope: &TenantScope,
    key: &MasterKey,
    organization_id: Uuid,
    id: Uuid,
    change: Change,
) -> Result<sso_connection::Model, ConnectionError> {
    let mut txn = scope.begin().await?;
    let mut row = find(&txn, organization_id, id).await?;
    let Change {
        name,
        client_id,
        client_secret,
        scopes,
        default_role,
        enabled,
        sso_required,
        discovered,
        saml,
        saml_options,
        attribute_mapping,
        by,
    } = change;
    if let Some(name) = name {
        row.name = name;
    }
    if let Some(client_id) = client_id {
        row.client_id = client_id;
    }
    if let Some(secret) = client_secret {
        row.client_secret_sealed = seal::seal(key, &secret_context(row.application_id, id), secret.as_bytes());
    }
    if let Some(scopes) = scopes {
        row.scopes = scopes.join(" ");
    }
    if let Some(role) = default_role {
        row.default_role = role;
        row.role_granted_by = by;
    }
    if let Some(enabled) = enabled {
        row.enabled = enabled;
    }
    if let Some(required) = sso_required {
        row.sso_required = required;
    }
    if let Some(mapping) = attribute_mapping {
        row.attribute_mapping = mapping.to_value();
    }
    if let Some(found) = discovered {
        set_discovered(&mut row, found);
    }
    if let Some(metadata) = saml {
        set_saml(&mut row, metadata);
    }
    if let Some(options) = saml_options {
        set_saml_options(&mut row, options);
    }
    row.updated_at = clock::now();
    // Every column written: the row was read in this transaction.
    let updated = txn.update(row.into_active_model().reset_all()).await?;
    txn.audit(EventType::SsoConnectionUpdated, Some(id), audit_data(&updated)).await?;
    txn.commit().await?;
    Ok(updated)
}

/// Deletes a connection. The users it signed in keep their accounts and
/// memberships; their linked identities go, so a connection made again
/// links them afresh by their verified-domain address.
pub async fn delete(scope: &TenantScope, organization_id: Uuid, id: Uuid) -> Result<(), ConnectionError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, organization_id, id).await?;
    records::forget(&mut txn, &row).await?;
    txn.audit(EventType::SsoConnectionDeleted, Some(id), audit_data(&row)).await?;
    txn.commit().await?;
    Ok(())
}

/// The enabled connection for an address (home realm discovery): one of
/// the organization that verified the address's domain, the oldest when
/// it has several.
pub async fn for_email(db: &impl TenantConn, email: &str) -> Result<Option<sso_connection::Model>, DbErr> {
    let Some(organization_id) = verifying_organization(db, email).await? else { return Ok(None) };
    db.find::<sso_connection::Entity>()
        .filter(sso_connection::Column::OrganizationId.eq(organization_id))
        .filter(sso_connection::Column::Enabled.eq(true))
        .order_by_asc(sso_connection::Column::CreatedAt)
        .order_by_asc(sso_connection::Column::Id)
        .one(db.conn())
        .await
}

/// Whether any organization of the application has an enabled connection
/// (the hosted sign-in page then offers single sign-on).
pub async fn any_enabled(db: &impl TenantConn) -> Result<bool, DbErr> {
    let found =
        db.find::<sso_connection::Entity>().filter(sso_connection::Column::Enabled.eq(true)).one(db.conn()).await?;
    Ok(found.is_some())
}

/// The connection a password sign-in of `email` must give way to: the
/// address's organization requires SSO (`sso_required`) on one of its
/// enabled connections, whichever.
pub async fn required_for(db: &impl TenantConn, email: &str) -> Result<Option<sso_connection::Model>, DbErr> {
    let Some(organization_id) = verifying_organization(db, email).await? else { return Ok(None) };
    db.find::<sso_connection::Entity>()
        .filter(sso_connection::Column::OrganizationId.eq(organization_id))
        .filter(sso_connection::Column::Enabled.eq(true))
        .filter(sso_connection::Column::SsoRequired.eq(true))
        .order_by_asc(sso_connection::Column::CreatedAt)
        .one(db.conn())
        .await
}

/// The organization that verified the domain of `email`, if one did.
async fn verifying_organization(db: &impl TenantConn, email: &str) -> Result<Option<Uuid>, DbErr> {
    let Some((_, domain)) = email.rsplit_once('@') else { return Ok(None) };
    let verified = db
        .find::<sso_domain::Entity>()
        .filter(sso_domain::Column::Domain.eq(domain))
        .filter(sso_domain::Column::Status.eq(sso_domains::VERIFIED))
        .one(db.conn())
        .await?;
    Ok(verified.map(|d| d.organization_id))
}
