//! The start of a sign-in with a provider: the browser's `redirect_uri`
//! checked against the application's origins, a flow stored (the `state`
//! hashed, the PKCE verifier sealed), and the provider's authorization URL.
use chrono::Duration;
use entity::oauth_flow;
use sea_orm::{ColumnTrait, IntoActiveModel};
use uuid::Uuid;

use super::{new_state, resolve, seal_verifier, Configured, Deps, ProviderSignInError, STATE_TTL_SECONDS};
use crate::{
    areas::{applications, validate::Issues},
    crypto::sha256,
    oauth::{self, providers::Protocol},
    storage::{TenantScope, Unaudited},
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
    let provider = resolve(scope, &state, deps, provider).await?;
    open_flow(scope, deps, &provider, return_to, None, Some(code_challenge), None).await
}

/// Checks the request, stores the flow and answers where to send the browser.
pub async fn start(scope: &TenantScope, deps: &Deps<'_>, request: StartRequest) -> Result<String, ProviderSignInError> {
    let state = deps.tenants.state(scope).await?;
    let provider = resolve(scope, &state, deps, &request.provider).await?;
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
    let hint = request.login_hint.as_deref();
    open_flow(scope, deps, &provider, request.redirect_uri, request.state, request.code_challenge, hint).await
}

/// Stores a flow (the `state` hashed, our PKCE verifier sealed) and
/// answers the provider's authorization URL.
async fn open_flow(
    scope: &TenantScope,
    deps: &Deps<'_>,
    provider: &Configured,
    redirect_uri: String,
    client_state: Option<String>,
    client_code_challenge: Option<String>,
    login_hint: Option<&str>,
) -> Result<String, ProviderSignInError> {
    let application_id = scope.tenant().id;
    let now = crate::clock::now();
    let flow_id = Uuid::now_v7();
    let state_value = new_state(application_id);
    let verifier = oauth::random_token(32);
    let nonce = oauth::random_token(16);
    let flow = oauth_flow::Model {
        id: flow_id,
        application_id,
        provider: provider.endpoints.provider.clone(),
        state_hash: sha256(&state_value).to_vec(),
        code_verifier_sealed: seal_verifier(deps.master_key, application_id, flow_id, &verifier),
        nonce: nonce.clone(),
        redirect_uri,
        client_state,
        client_code_challenge,
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
