//! SSO connections of an organization: make one from its issuer (the
//! endpoints read from its discovery document) or, for SAML, from its
//! identity provider's metadata (given, or read from a URL); list, get,
//! change (a new issuer or metadata read again), delete.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::sso_connection;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        applications, profile_fields,
        sso_connections::{
            self, attributes::AttributeMapping, provider_name, saml, scopes, Change, Discovered, NewConnection,
            Provider, Reaching, SamlMetadata, SamlOptions, MAX_CLIENT_ID, MAX_CLIENT_SECRET, MAX_NAME, OIDC, PROTOCOLS,
            SAML,
        },
        validate::Issues,
    },
    auth::secret_key::SecretKey,
    error::{ApiError, ApiResult},
    http::{body::Body, envelope, path_id},
    state::AppState,
    storage::TenantScope,
};

pub const AREA: Area = Area {
    segments: &["organizations"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_sso_connection,
    list_sso_connections,
    find_sso_connection,
    update_sso_connection,
    delete_sso_connection
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/organizations/{organization_id}/sso-connections")
            .route(web::post().to(create_sso_connection))
            .route(web::get().to(list_sso_connections)),
    )
    .service(
        web::resource("/organizations/{organization_id}/sso-connections/{connection_id}")
            .route(web::get().to(find_sso_connection))
            .route(web::patch().to(update_sso_connection))
            .route(web::delete().to(delete_sso_connection)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSsoConnectionRequest {
    /// `oidc`: an OpenID Provider (Okta, Entra ID, Google Workspace,
    /// Keycloak…), with `issuer`, `client_id` and `client_secret`. `saml`: a
    /// SAML 2.0 identity provider (Okta, Entra ID, ADFS, Google
    /// Workspace…), with `idp_metadata_xml` or `idp_metadata_url`.
    #[schema(pattern = "^(oidc|saml)$")]
    pub protocol: String,
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// `oidc`: the provider's issuer. Its endpoints are read from
    /// `{issuer}/.well-known/openid-configuration`, which must name the
    /// same issuer. `https` and a public host for a production application.
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub issuer: Option<String>,
    /// `oidc`: the organization's client at the provider.
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub client_id: Option<String>,
    /// `oidc`: its secret, stored sealed and never shown again.
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub client_secret: Option<String>,
    /// `oidc`: asked of the provider (`openid` is added when missing).
    /// Default `openid email profile`.
    #[schema(max_items = 20)]
    pub scopes: Option<Vec<String>>,
    /// `saml`: the identity provider's metadata (an `EntityDescriptor` with
    /// an `IDPSSODescriptor`, its HTTP-Redirect single sign-on endpoint and
    /// signing certificates), at most 256 KiB.
    #[schema(max_length = 262144)]
    pub idp_metadata_xml: Option<String>,
    /// `saml`: where that metadata is read from (now, and again at each
    /// `refresh_metadata`). The rules of `issuer` apply.
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub idp_metadata_url: Option<String>,
    /// `saml`: ask the IdP to encrypt its assertions (our metadata then
    /// names an encryption certificate) and refuse plaintext ones. Default
    /// `false`.
    pub encrypt_assertions: Option<bool>,
    /// `saml`: accept sign-ins the IdP starts (unsolicited responses, from
    /// the IdP's dashboard). Default `false`: they cannot be bound to a
    /// browser that asked, so a stolen response could sign someone in.
    pub idp_initiated: Option<bool>,
    /// `saml`: where an IdP-initiated sign-in sends the browser with its
    /// one-time `code` (required with `idp_initiated`): an absolute URL on
    /// one of the application's `allowed_origins`.
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub idp_initiated_redirect_uri: Option<String>,
    /// The role a user's first SSO sign-in grants in the organization.
    /// Default `member`.
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,62}$")]
    pub default_role: Option<String>,
    /// Default `true`.
    pub enabled: Option<bool>,
    /// Refuse password sign-ins of the organization's verified domains
    /// while the connection is enabled (`403 sso_required`). Default `false`.
    pub sso_required: Option<bool>,
    /// Which claims hold the address and fill a new user's profile fields.
    /// Default `{"email": "email", "profile": {}}`.
    pub attribute_mapping: Option<AttributeMapping>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSsoConnectionRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    /// `saml`: new metadata (its certificates replace the old ones).
    #[schema(max_length = 262144)]
    pub idp_metadata_xml: Option<String>,
    /// `saml`: a new metadata URL, read now.
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub idp_metadata_url: Option<String>,
    /// `saml`: read the metadata URL again (the identity provider rotated
    /// its signing certificates).
    pub refresh_metadata: Option<bool>,
    pub encrypt_assertions: Option<bool>,
    pub idp_initiated: Option<bool>,
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub idp_initiated_redirect_uri: Option<String>,
    /// `oidc`: a new issuer, or the same one: its discovery document is
    /// read again.
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub issuer: Option<String>,
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub client_id: Option<String>,
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub client_secret: Option<String>,
    #[schema(max_items = 20)]
    pub scopes: Option<Vec<String>>,
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,62}$")]
    pub default_role: Option<String>,
    pub enabled: Option<bool>,
    pub sso_required: Option<bool>,
    /// Replaces the mapping whole.
    pub attribute_mapping: Option<AttributeMapping>,
}

#[derive(Serialize, ToSchema)]
pub struct SsoConnectionView {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub protocol: String,
    pub name: String,
    pub enabled: bool,
    pub sso_required: bool,
    pub default_role: String,
    /// The OpenID Provider's issuer, or the SAML identity provider's entity ID.
    pub issuer: String,
    /// `oidc`: the organization's client at the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// `oidc`: register this as the client's redirect URI at the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// Where sign-ins are sent: the authorization endpoint the issuer's
    /// discovery document named, or the SAML single sign-on endpoint.
    pub authorization_endpoint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub userinfo_endpoint: Option<String>,
    /// `saml`: what to give the identity provider's administrator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_provider: Option<ServiceProviderView>,
    /// `saml`: where the identity provider's metadata is read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_metadata_url: Option<String>,
    /// `saml`: assertions must come encrypted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypt_assertions: Option<bool>,
    /// `saml`: the IdP may start sign-ins, which land at `idp_initiated_redirect_uri`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_initiated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_initiated_redirect_uri: Option<String>,
    pub attribute_mapping: AttributeMapping,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A SAML connection's service provider (this service), as its identity
/// provider is told: the entity ID is the URL of its metadata.
#[derive(Serialize, ToSchema)]
pub struct ServiceProviderView {
    pub entity_id: String,
    /// The assertion consumer service (HTTP-POST binding).
    pub acs_url: String,
    /// The SP metadata document (XML), for identity providers that import it.
    pub metadata_url: String,
}

pub(super) fn view(state: &AppState, row: &sso_connection::Model) -> SsoConnectionView {
    let oidc = (row.protocol == OIDC).then_some(());
    let sp = (row.protocol == SAML)
        .then(|| saml::ServiceProvider::of(&state.settings.public_url(), row.application_id, row.id));
    SsoConnectionView {
        id: row.id,
        organization_id: row.organization_id,
        protocol: row.protocol.clone(),
        name: row.name.clone(),
        enabled: row.enabled,
        sso_required: row.sso_required,
        default_role: row.default_role.clone(),
        issuer: row.issuer.clone(),
        client_id: oidc.map(|_| row.client_id.clone()),
        scopes: oidc.map(|_| row.scopes.split(' ').map(str::to_string).collect()),
        redirect_uri: oidc.map(|_| state.provider_sign_in().callback_url(&provider_name(row.id))),
        authorization_endpoint: row.authorization_url.clone(),
        token_endpoint: oidc.map(|_| row.token_url.clone()),
        jwks_uri: oidc.map(|_| row.jwks_url.clone()),
        userinfo_endpoint: row.userinfo_url.clone(),
        service_provider: sp.as_ref().map(|sp| ServiceProviderView {
            metadata_url: sp.entity_id.clone(),
            entity_id: sp.entity_id.clone(),
            acs_url: sp.acs_url.clone(),
        }),
        idp_metadata_url: row.idp_metadata_url.clone(),
        encrypt_assertions: sp.as_ref().map(|_| row.encrypt_assertions),
        idp_initiated: sp.as_ref().map(|_| row.idp_initiated),
        idp_initiated_redirect_uri: row.idp_initiated_redirect_uri.clone(),
        attribute_mapping: AttributeMapping::of(&row.attribute_mapping),
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn ids(path: &(String, String)) -> ApiResult<(Uuid, Uuid)> {
    Ok((path_id("Organization", &path.0)?, path_id("SSO connection", &path.1)?))
}

fn reaching<'a>(state: &'a AppState, scope: &TenantScope) -> Reaching<'a> {
    let production = scope.tenant().environment.is_live();
    Reaching { client: &state.providers, production, reach: state.provider_sign_in().reach(scope) }
}

/// Checks a mapping's claims, and its profile keys against the
/// application's profile fields (read only when it names any).
async fn check_mapping(scope: &TenantScope, issues: &mut Issues, mapping: Option<&AttributeMapping>) -> ApiResult<()> {
    let Some(mapping) = mapping else { return Ok(()) };
    let keys = match mapping.profile.is_empty() {
        true => Vec::new(),
        false => profile_fields::schema(scope).await?.into_iter().map(|field| field.key).collect(),
    };
    mapping.check(issues, &keys);
    Ok(())
}

/// Makes the connection a create request asks for, in `organization_id`:
/// the secret key's route and the dashboard's (`by` the owner who asks there,
/// whose grant the role then is).
pub(super) async fn create_in(
    state: &AppState,
    scope: &TenantScope,
    organization_id: Uuid,
    mut request: CreateSsoConnectionRequest,
    by: Option<Uuid>,
) -> ApiResult<sso_connection::Model> {
    let mut issues = Issues::default();
    let new = NewConnection {
        name: issues.text("name", &request.name, MAX_NAME),
        default_role: request.default_role.take().unwrap_or_else(|| "member".into()),
        enabled: request.enabled.unwrap_or(true),
        sso_required: request.sso_required.unwrap_or(false),
        role_granted_by: by,
        attribute_mapping: request.attribute_mapping.take().unwrap_or_default(),
    };
    issues.role("default_role", &new.default_role);
    check_mapping(scope, &mut issues, Some(&new.attribute_mapping)).await?;
    if !PROTOCOLS.contains(&request.protocol.as_str()) {
        issues.add("protocol", "must be `oidc` or `saml`");
    }
    let oidc_fields = [
        ("issuer", request.issuer.is_some()),
        ("client_id", request.client_id.is_some()),
        ("client_secret", request.client_secret.is_some()),
        ("scopes", request.scopes.is_some()),
    ];
    let saml_fields = [
        ("idp_metadata_xml", request.idp_metadata_xml.is_some()),
        ("idp_metadata_url", request.idp_metadata_url.is_some()),
        ("encrypt_assertions", request.encrypt_assertions.is_some()),
        ("idp_initiated", request.idp_initiated.is_some()),
        ("idp_initiated_redirect_uri", request.idp_initiated_redirect_uri.is_some()),
    ];
    refuse_foreign_fields(&mut issues, &request.protocol, &oidc_fields, &saml_fields);
    let provider = match request.protocol.as_str() {
        SAML => saml_provider(state, scope, issues, request).await?,
        _ => openid_provider(state, scope, issues, request).await?,
    };
    let limit = state.settings.limits.sso_connections_per_application;
    Ok(sso_connections::create(scope, &state.master_key, organization_id, new, provider, limit).await?)
}

/// Refuses the fields of the protocol the connection does not speak.
fn refuse_foreign_fields(issues: &mut Issues, protocol: &str, oidc: &[(&str, bool)], saml: &[(&str, bool)]) {
    let (foreign, theirs) = if protocol == SAML { (oidc, OIDC) } else { (saml, SAML) };
    for (field, _) in foreign.iter().filter(|(_, given)| *given) {
        issues.add(field, format!("is for `{theirs}` connections"));
    }
}

/// An OpenID connection's provider: its client, checked, and its issuer's discovery document.
async fn openid_provider(
    state: &AppState,
    scope: &TenantScope,
    mut issues: Issues,
    request: CreateSsoConnectionRequest,
) -> ApiResult<Provider> {
    let mut required = |field: &str, given: Option<String>, max: usize| match given {
        Some(value) => issues.text(field, &value, max),
        None => {
            issues.add(field, "is required for an `oidc` connection");
            String::new()
        }
    };
    let client_id = required("client_id", request.client_id, MAX_CLIENT_ID);
    let client_secret = required("client_secret", request.client_secret, MAX_CLIENT_SECRET);
    let issuer = request.issuer.unwrap_or_default();
    if issuer.is_empty() {
        issues.add("issuer", "is required for an `oidc` connection");
    }
    let scopes = scopes(&mut issues, request.scopes);
    issues.finish()?;
    let discovered = sso_connections::discover(reaching(state, scope), &issuer).await?;
    Ok(Provider::OpenId { client_id, client_secret, scopes, discovered })
}

/// A SAML connection's provider: the IdP's metadata, read, the
/// connection's options, checked, and its new key.
async fn saml_provider(
    state: &AppState,
    scope: &TenantScope,
    mut issues: Issues,
    request: CreateSsoConnectionRequest,
) -> ApiResult<Provider> {
    if request.idp_metadata_xml.is_some() == request.idp_metadata_url.is_some() {
        issues.add("idp_metadata_xml", "give the metadata, or `idp_metadata_url`: one of the two");
    }
    let options = SamlOptions {
        encrypt_assertions: request.encrypt_assertions.unwrap_or(false),
        idp_initiated: request.idp_initiated.unwrap_or(false),
        idp_initiated_redirect_uri: request.idp_initiated_redirect_uri,
    };
    check_saml_options(state, scope, &mut issues, &options).await?;
    issues.finish()?;
    let metadata = saml_metadata(state, scope, request.idp_metadata_xml, request.idp_metadata_url).await?;
    // Seconds at worst: off the async threads.
    let made = tokio::task::spawn_blocking(saml::credentials::generate).await.map_err(|err| err.to_string());
    let key = made.and_then(|made| made).map_err(|err| {
        tracing::error!(error = %err, "a SAML connection's key could not be made");
        ApiError::unavailable("The connection's key could not be made; try again.")
    })?;
    Ok(Provider::Saml { metadata, key, options })
}

/// IdP-initiated sign-ins need somewhere to land, on the application's origins.
async fn check_saml_options(
    state: &AppState,
    scope: &TenantScope,
    issues: &mut Issues,
    options: &SamlOptions,
) -> ApiResult<()> {
    match &options.idp_initiated_redirect_uri {
        Some(uri) => {
            let tenant = state.tenants.state(scope).await?;
            if let Some(issue) = applications::redirect_uri_issue(uri, &tenant.settings.allowed_origins) {
                issues.add("idp_initiated_redirect_uri", issue);
            }
        }
        None if options.idp_initiated => issues.add("idp_initiated_redirect_uri", "is required with `idp_initiated`"),
        None => {}
    }
    Ok(())
}

/// A SAML identity provider's metadata, as given or read from its URL.
async fn saml_metadata(
    state: &AppState,
    scope: &TenantScope,
    xml: Option<String>,
    url: Option<String>,
) -> ApiResult<SamlMetadata> {
    let (xml, url) = match (xml, url) {
        (Some(xml), _) => (xml, None),
        (None, Some(url)) => (sso_connections::fetch_metadata(reaching(state, scope), &url).await?, Some(url)),
        (None, None) => return Err(ApiError::invalid("idp_metadata_xml", "is required")),
    };
    let read = saml::read_metadata(&xml).map_err(|issue| ApiError::invalid("idp_metadata_xml", issue))?;
    Ok(SamlMetadata { xml, url, read })
}

/// Changes a connection of `organization_id` as an update request asks
/// (`by` as for [`create_in`]).
pub(super) async fn update_in(
    state: &AppState,
    scope: &TenantScope,
    (organization_id, id): (Uuid, Uuid),
    request: UpdateSsoConnectionRequest,
    by: Option<Uuid>,
) -> ApiResult<sso_connection::Model> {
    // Found first: a connection of another organization is 404 before any call.
    let row = sso_connections::find(scope, organization_id, id).await?;
    let mut issues = Issues::default();
    let oidc_fields = [
        ("issuer", request.issuer.is_some()),
        ("client_id", request.client_id.is_some()),
        ("client_secret", request.client_secret.is_some()),
        ("scopes", request.scopes.is_some()),
    ];
    let saml_fields = [
        ("idp_metadata_xml", request.idp_metadata_xml.is_some()),
        ("idp_metadata_url", request.idp_metadata_url.is_some()),
        ("refresh_metadata", request.refresh_metadata.is_some()),
        ("encrypt_assertions", request.encrypt_assertions.is_some()),
        ("idp_initiated", request.idp_initiated.is_some()),
        ("idp_initiated_redirect_uri", request.idp_initiated_redirect_uri.is_some()),
    ];
    refuse_foreign_fields(&mut issues, &row.protocol, &oidc_fields, &saml_fields);
    if request.idp_metadata_xml.is_some() && request.idp_metadata_url.is_some() {
        issues.add("idp_metadata_xml", "give the metadata, or `idp_metadata_url`: one of the two");
    }
    let refresh_url = match request.refresh_metadata {
        Some(true) if request.idp_metadata_url.is_none() && request.idp_metadata_xml.is_none() => {
            let url = row.idp_metadata_url.clone();
            if url.is_none() {
                issues.add("refresh_metadata", "the connection's metadata was given, not read from a URL");
            }
            url
        }
        _ => None,
    };
    let change = Change {
        name: request.name.map(|n| issues.text("name", &n, MAX_NAME)),
        client_id: request.client_id.map(|c| issues.text("client_id", &c, MAX_CLIENT_ID)),
        client_secret: request.client_secret.map(|c| issues.text("client_secret", &c, MAX_CLIENT_SECRET)),
        scopes: request.scopes.map(|given| scopes(&mut issues, Some(given))),
        default_role: request.default_role,
        enabled: request.enabled,
        sso_required: request.sso_required,
        discovered: None,
        saml: None,
        saml_options: None,
        attribute_mapping: request.attribute_mapping,
        by,
    };
    if let Some(role) = &change.default_role {
        issues.role("default_role", role);
    }
    let saml_options = match row.protocol == SAML
        && (request.encrypt_assertions.is_some()
            || request.idp_initiated.is_some()
            || request.idp_initiated_redirect_uri.is_some())
    {
        true => {
            let options = SamlOptions {
                encrypt_assertions: request.encrypt_assertions.unwrap_or(row.encrypt_assertions),
                idp_initiated: request.idp_initiated.unwrap_or(row.idp_initiated),
                idp_initiated_redirect_uri: request
                    .idp_initiated_redirect_uri
                    .or(row.idp_initiated_redirect_uri.clone()),
            };
            check_saml_options(state, scope, &mut issues, &options).await?;
            Some(options)
        }
        false => None,
    };
    check_mapping(scope, &mut issues, change.attribute_mapping.as_ref()).await?;
    issues.finish()?;
    let discovered: Option<Discovered> = match &request.issuer {
        Some(issuer) => Some(sso_connections::discover(reaching(state, scope), issuer).await?),
        None => None,
    };
    let url = request.idp_metadata_url.or(refresh_url);
    let saml = match request.idp_metadata_xml.is_some() || url.is_some() {
        true => Some(saml_metadata(state, scope, request.idp_metadata_xml, url).await?),
        false => None,
    };
    let change = Change { discovered, saml, saml_options, ..change };
    Ok(sso_connections::update(scope, &state.master_key, organization_id, id, change).await?)
}

/// Make an SSO connection for an organization. Its issuer's discovery
/// document is read now; register the answer's `redirect_uri` at the
/// provider.
#[utoipa::path(post, path = "/v1/organizations/{organization_id}/sso-connections", tag = "sso",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    request_body = CreateSsoConnectionRequest,
    responses((status = 201, body = SsoConnectionView), (status = 404),
        (status = 422, description = "validation_failed (or the limit of SSO connections is reached); invalid_url: the issuer; sso_discovery_failed")),
    security(("secret_key" = ["sso_connections:write"])))]
pub async fn create_sso_connection(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let request: CreateSsoConnectionRequest = body.json().await?;
    let row = create_in(&state, &key.scope, organization_id, request, None).await?;
    Ok(envelope::created(view(&state, &row)))
}

/// List an organization's SSO connections, oldest first (never their secrets).
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/sso-connections", tag = "sso",
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200, body = [SsoConnectionView]), (status = 404)),
    security(("secret_key" = ["sso_connections:read"])))]
pub async fn list_sso_connections(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    let rows = sso_connections::list(&key.scope, organization_id).await?;
    Ok(envelope::ok(rows.iter().map(|row| view(&state, row)).collect::<Vec<_>>()))
}

/// Get an SSO connection.
#[utoipa::path(get, path = "/v1/organizations/{organization_id}/sso-connections/{connection_id}", tag = "sso",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("connection_id" = Uuid, Path, description = "The connection's id.")),
    responses((status = 200, body = SsoConnectionView), (status = 404)),
    security(("secret_key" = ["sso_connections:read"])))]
pub async fn find_sso_connection(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    Ok(envelope::ok(view(&state, &sso_connections::find(&key.scope, organization_id, id).await?)))
}

/// Change an SSO connection. An `issuer` (even the same one) has its
/// discovery document read again.
#[utoipa::path(patch, path = "/v1/organizations/{organization_id}/sso-connections/{connection_id}", tag = "sso",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("connection_id" = Uuid, Path, description = "The connection's id.")),
    request_body = UpdateSsoConnectionRequest,
    responses((status = 200, body = SsoConnectionView), (status = 404),
        (status = 422, description = "validation_failed; invalid_url: the issuer; sso_discovery_failed")),
    security(("secret_key" = ["sso_connections:write"])))]
pub async fn update_sso_connection(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<(String, String)>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let ids = ids(&path)?;
    let request: UpdateSsoConnectionRequest = body.json().await?;
    let row = update_in(&state, &key.scope, ids, request, None).await?;
    Ok(envelope::ok(view(&state, &row)))
}

/// Delete an SSO connection. Its users keep their accounts and
/// memberships; the identities linked through it go.
#[utoipa::path(delete, path = "/v1/organizations/{organization_id}/sso-connections/{connection_id}", tag = "sso",
    params(("organization_id" = Uuid, Path, description = "The organization's id."),
        ("connection_id" = Uuid, Path, description = "The connection's id.")),
    responses((status = 200), (status = 404)),
    security(("secret_key" = ["sso_connections:write"])))]
pub async fn delete_sso_connection(key: SecretKey, path: web::Path<(String, String)>) -> ApiResult<HttpResponse> {
    let (organization_id, id) = ids(&path)?;
    sso_connections::delete(&key.scope, organization_id, id).await?;
    Ok(envelope::ok(serde_json::json!({})))
}
