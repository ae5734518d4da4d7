//! The start of a sign-in with a provider: the browser's `redirect_uri`
//! checked against the application's origins, a flow stored (the `state`
//! hashed, the PKCE verifier sealed), and the provider's authorization URL.
use chrono::Duration;
use entity::oauth_flow;
use sea_orm::{ColumnTrait, IntoActiveModel};
use uuid::Uuid;

use super::{new_state, resolve, seal_verifier, Configured, Deps, ProviderSignInError, STATE_TTL_SECONDS};
use crate::{
    areas::{
        applications,
        sso_connections::{self, provider_name, saml},
        validate::Issues,
    },
    crypto::sha256,
    oauth::{self, providers::Protocol},
    storage::{TenantScope, Unaudited},
    tenancy::state::TenantState,
};

pub const MAX_CLIENT_STATE: usize = 512;

/// What the browser asked for.
pub struct StartRequest {
    pub provider: String,
    pub redirect_uri: String,
    /// The application's own `state`, handed back unchanged.
    pub state: Option<String>,
    /// The application's PKCE challenge for the exchange (S256 only).
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    /// The address the user gave (an SSO sign-in's), sent on to the
    /// provider as `login_hint`.
    pub login_hint: Option<String>,
}

/// A start from the hosted pages: the browser comes back to `return_to`
/// (the authorization endpoint, this service's own), and the exchange must
/// present the verifier of `code_challenge`, which that browser keeps.
pub async fn start_from_hosted_pages(
    scope: &TenantScope,
    deps: &Deps<'_>,
    provider: &str,
    return_to: String,
    code_challenge: String,
) -> Result<String, ProviderSignInError> {
    let state = deps.tenants.state(scope).await?;
    let target = target(scope, &state, deps, provider).await?;
    let back = Back { redirect_uri: return_to, client_state: None, client_code_challenge: Some(code_challenge) };
    open(scope, deps, target, back, None).await
}

/// Checks the request, stores the flow and answers where to send the browser.
pub async fn start(scope: &TenantScope, deps: &Deps<'_>, request: StartRequest) -> Result<String, ProviderSignInError> {
    let state = deps.tenants.state(scope).await?;
    let target = target(scope, &state, deps, &request.provider).await?;
    applications::redirect_uri_issue(&request.redirect_uri, &state.settings.allowed_origins)
        .map_or(Ok(()), |issue| Err(ProviderSignInError::RedirectUri(issue)))?;
    let mut issues = Issues::default();
    if let Some(client_state) = &request.state {
        if client_state.is_empty()
            || client_state.chars().count() > MAX_CLIENT_STATE
            || client_state.chars().any(char::is_control)
        {
            issues.add("state", format!("must be 1 to {MAX_CLIENT_STATE} characters without control characters"));
        }
    }
    match (&request.code_challenge, request.code_challenge_method.as_deref()) {
        (None, None) => {}
        (Some(challenge), None | Some("S256")) if oauth::is_pkce_value(challenge) => {}
        (Some(_), None | Some("S256")) => issues.add("code_challenge", "must be 43 to 128 of A-Z a-z 0-9 - . _ ~"),
        (_, Some("S256")) | (None, Some(_)) => issues.add("code_challenge", "is required with code_challenge_method"),
        (Some(_), Some(_)) => issues.add("code_challenge_method", "must be S256"),
    }
    issues.finish()?;
    let back = Back {
        redirect_uri: request.redirect_uri,
        client_state: request.state,
        client_code_challenge: request.code_challenge,
    };
    open(scope, deps, target, back, request.login_hint.as_deref()).await
}

/// Where a sign-in sends the browser: a provider's authorization
/// endpoint, or a SAML connection's IdP.
enum Target {
    Provider(Box<Configured>),
    Saml(Box<entity::sso_connection::Model>),
}

async fn target(
    scope: &TenantScope,
    state: &TenantState,
    deps: &Deps<'_>,
    provider: &str,
) -> Result<Target, ProviderSignInError> {
    match saml_connection(scope, provider).await? {
        Some(connection) => Ok(Target::Saml(Box::new(connection))),
        None => Ok(Target::Provider(Box::new(resolve(scope, state, deps, provider).await?))),
    }
}

/// Stores the flow and answers where to send the browser.
async fn open(
    scope: &TenantScope,
    deps: &Deps<'_>,
    target: Target,
    back: Back,
    login_hint: Option<&str>,
) -> Result<String, ProviderSignInError> {
    match target {
        Target::Provider(provider) => open_flow(scope, deps, &provider, back, login_hint).await,
        Target::Saml(connection) => start_saml(scope, deps, &connection, back).await,
    }
}

/// Where the flow ends: the browser's way back, and what the exchange must prove.
pub(super) struct Back {
    pub redirect_uri: String,
    /// The application's own `state`, handed back unchanged.
    pub client_state: Option<String>,
    pub client_code_challenge: Option<String>,
}

/// The enabled SAML connection `provider` names (`sso:{connection_id}`), if it is one.
async fn saml_connection(
    scope: &TenantScope,
    provider: &str,
) -> Result<Option<entity::sso_connection::Model>, ProviderSignInError> {
    let Some(id) = sso_connections::connection_of_provider(provider) else { return Ok(None) };
    let found = sso_connections::find_any(scope, id).await?;
    Ok(found.filter(|row| row.enabled && row.protocol == sso_connections::SAML))
}

/// Stores a flow whose `state` is the SAML `RelayState` and whose nonce is
/// the `AuthnRequest`'s ID, and answers the identity provider's URL with
/// the request (HTTP-Redirect binding).
async fn start_saml(
    scope: &TenantScope,
    deps: &Deps<'_>,
    connection: &entity::sso_connection::Model,
    back: Back,
) -> Result<String, ProviderSignInError> {
    let not_enabled = || ProviderSignInError::NotEnabled(provider_name(connection.id));
    let metadata = connection.idp_metadata.as_deref().ok_or_else(not_enabled)?;
    let sp = saml::credentials::service_provider(deps.master_key, &deps.public_url, connection);
    let state_value = new_state(scope.tenant().id);
    let requested = saml::request(&sp, metadata, &state_value).map_err(|err| {
        tracing::warn!(error = %err, connection = %connection.id, "a SAML request could not be made");
        not_enabled()
    })?;
    store_flow(scope, deps, provider_name(connection.id), back, &state_value, requested.request_id).await?;
    Ok(requested.url)
}

/// Stores a flow (the `state` hashed, our PKCE verifier sealed) and
/// answers the provider's authorization URL.
async fn open_flow(
    scope: &TenantScope,
    deps: &Deps<'_>,
    provider: &Configured,
    back: Back,
    login_hint: Option<&str>,
) -> Result<String, ProviderSignInError> {
    let state_value = new_state(scope.tenant().id);
    let nonce = oauth::random_token(16);
    let verifier =
        store_flow(scope, deps, provider.endpoints.provider.clone(), back, &state_value, nonce.clone()).await?;
    let mut url = url::Url::parse(&provider.endpoints.authorization_url)
        .map_err(|_| ProviderSignInError::NotEnabled(provider.endpoints.provider.clone()))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &provider.client_id)
            .append_pair("redirect_uri", &deps.callback_url(&provider.endpoints.provider))
            .append_pair("scope", &provider.scopes.join(" "))
            .append_pair("state", &state_value)
            .append_pair("code_challenge", &oauth::pkce_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        if provider.endpoints.protocol == Protocol::OpenId {
            query.append_pair("nonce", &nonce);
        }
        if provider.endpoints.form_post {
            query.append_pair("response_mode", "form_post");
        }
        if let Some(hint) = login_hint {
            query.append_pair("login_hint", hint);
        }
    }
    Ok(url.into())
}

/// Stores a flow of `provider` under `state_value` (hashed), with a new
/// PKCE verifier (sealed), which it answers.
pub(super) async fn store_flow(
    scope: &TenantScope,
    deps: &Deps<'_>,
    provider: String,
    back: Back,
    state_value: &str,
    nonce: String,
) -> Result<String, ProviderSignInError> {
    let application_id = scope.tenant().id;
    let now = crate::clock::now();
    let flow_id = Uuid::now_v7();
    let verifier = oauth::random_token(32);
    let flow = oauth_flow::Model {
        id: flow_id,
        application_id,
        provider,
        state_hash: sha256(state_value).to_vec(),
        code_verifier_sealed: seal_verifier(deps.master_key, application_id, flow_id, &verifier),
        nonce,
        redirect_uri: back.redirect_uri,
        client_state: back.client_state,
        client_code_challenge: back.client_code_challenge,
        expires_at: now + Duration::seconds(STATE_TTL_SECONDS),
        called_back_at: None,
        user_id: None,
        code_hash: None,
        code_expires_at: None,
        exchanged_at: None,
        created_at: now,
        organization_id: None,
        amr: None,
    };
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::ProviderSignInStep);
    // Flows long past use go as new ones come (their codes expired a
    // minute after their states at the latest).
    let stale = now - Duration::seconds(STATE_TTL_SECONDS);
    txn.delete::<oauth_flow::Entity>(oauth_flow::Column::ExpiresAt.lt(stale)).await?;
    txn.insert(flow.into_active_model()).await?;
    txn.commit().await?;
    Ok(verifier)
}
