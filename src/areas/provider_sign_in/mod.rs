//! Sign-in with an identity provider (the use of operation 1's settings):
//! [`start`] sends the browser to the provider with a `state`, a PKCE
//! challenge and a nonce; [`callback`] takes the provider's answer once,
//! exchanges its code, learns the account (a verified ID token, or the
//! user-info endpoint), [`link`]s it to a user and hands the browser a
//! one-time code; [`exchange`] turns that code into our session and tokens
//! exactly as a password sign-in does. Tokens never travel in a URL. A SAML
//! connection's sign-in starts in [`start`] too, and its response comes
//! back to [`assertion`].
pub mod assertion;
pub mod callback;
pub mod exchange;
pub mod http;
pub mod link;
pub mod start;

use entity::oauth_flow;
use sea_orm::{ColumnTrait, DbErr, QueryFilter};
use uuid::Uuid;

use super::{auth::AuthError, oauth_providers, sso_connections, validate::Invalid};
use crate::{
    config::OAuthSettings,
    crypto::{master_key::MasterKey, seal, sha256},
    error::{ApiError, Code},
    events::url_safety::{self, Reach},
    oauth::{
        client::ProviderClient,
        providers::{self, Endpoints, NamedBy, Protocol, UserInfo},
    },
    storage::{TenantConn, TenantScope},
    tenancy::{registry::TenantRegistry, state::TenantState},
};

/// How long a `state` may wait for the provider's callback.
pub const STATE_TTL_SECONDS: i64 = 600;
/// How long the one-time code waits for the exchange.
pub const CODE_TTL_SECONDS: i64 = 60;

#[derive(Debug, thiserror::Error)]
pub enum ProviderSignInError {
    /// Unknown, disabled, or without credentials to use: for the browser,
    /// there is no such sign-in.
    #[error("sign-in with `{0}` is not enabled for this application")]
    NotEnabled(String),
    #[error("`redirect_uri` {0}")]
    RedirectUri(&'static str),
    /// The `state` is unknown, expired or already used: nowhere safe to
    /// send the browser back to.
    #[error("the sign-in's state is unknown, expired or already used")]
    InvalidState,
    /// The one-time code is unknown, expired, used, or its verifier is wrong.
    #[error("the one-time code is unknown, expired, already used or not proven")]
    InvalidGrant,
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ProviderSignInError> for ApiError {
    fn from(err: ProviderSignInError) -> Self {
        match err {
            ProviderSignInError::NotEnabled(provider) => {
                ApiError::new(Code::NotFound, format!("Sign-in with `{provider}` is not enabled for this application."))
            }
            ProviderSignInError::RedirectUri(issue) => ApiError::invalid_url("redirect_uri", issue),
            ProviderSignInError::InvalidState => ApiError::new(
                Code::InvalidState,
                "The sign-in's `state` is unknown, expired or already used: start the sign-in again.",
            ),
            ProviderSignInError::InvalidGrant => ApiError::new(
                Code::InvalidGrant,
                "The code is unknown, expired, already used, or its `code_verifier` does not match.",
            ),
            ProviderSignInError::Invalid(invalid) => invalid.into(),
            ProviderSignInError::Auth(err) => err.into(),
            ProviderSignInError::Db(err) => err.into(),
        }
    }
}

impl From<ApiError> for ProviderSignInError {
    fn from(err: ApiError) -> Self {
        ProviderSignInError::Auth(AuthError::Tenant(err))
    }
}

/// What the flow needs of the node.
pub struct Deps<'a> {
    pub tenants: &'a TenantRegistry,
    pub settings: &'a OAuthSettings,
    pub master_key: &'a MasterKey,
    pub client: &'a ProviderClient,
    /// This service's public URL: our callback is under it.
    pub public_url: String,
    /// `security.allow_private_destinations`: a development application's
    /// SSO connection may reach private addresses.
    pub private_destinations: bool,
}

impl Deps<'_> {
    /// `…/v1/auth/oauth/{provider}/callback`, as registered at the
    /// provider; `…/v1/auth/sso/{connection_id}/callback` for a connection.
    pub fn callback_url(&self, provider: &str) -> String {
        let base = self.public_url.trim_end_matches('/');
        match sso_connections::connection_of_provider(provider) {
            Some(id) => format!("{base}/v1/auth/sso/{id}/callback"),
            None => format!("{base}/v1/auth/oauth/{provider}/callback"),
        }
    }

    /// What an application of `scope`'s environment may reach.
    pub fn reach(&self, scope: &TenantScope) -> Reach {
        Reach::of(scope.tenant().environment.is_live(), self.private_destinations)
    }
}

/// An enabled provider with the credentials to use it.
pub struct Configured {
    pub endpoints: Endpoints,
    pub client_id: String,
    pub client_secret: String,
    pub scopes: Vec<String>,
    /// The organization's connection, for an SSO sign-in.
    pub connection: Option<entity::sso_connection::Model>,
}

/// [`configured`], or an organization's enabled SSO connection when
/// `provider` names one (`sso:{connection_id}`).
pub async fn resolve(
    scope: &TenantScope,
    state: &TenantState,
    deps: &Deps<'_>,
    provider: &str,
) -> Result<Configured, ProviderSignInError> {
    let Some(id) = sso_connections::connection_of_provider(provider) else {
        return configured(state, deps, provider);
    };
    let not_enabled = || ProviderSignInError::NotEnabled(provider.to_string());
    let row = sso_connections::find_any(scope, id)
        .await?
        .filter(|row| row.enabled && row.protocol == sso_connections::OIDC)
        .ok_or_else(not_enabled)?;
    // The rules again, as at each webhook delivery: the operator may have
    // stopped allowing private destinations since the discovery.
    let (production, reach) = (scope.tenant().environment.is_live(), deps.reach(scope));
    let urls = [Some(&row.authorization_url), Some(&row.token_url), Some(&row.jwks_url), row.userinfo_url.as_ref()];
    if !urls.into_iter().flatten().all(|url| url_safety::check(url, production, reach).is_ok()) {
        return Err(not_enabled());
    }
    let client_secret = sso_connections::open_client_secret(deps.master_key, &row).ok_or_else(not_enabled)?;
    let endpoints = Endpoints {
        provider: provider.to_string(),
        protocol: Protocol::OpenId,
        authorization_url: row.authorization_url.clone(),
        token_url: row.token_url.clone(),
        userinfo_url: row.userinfo_url.clone(),
        jwks_url: Some(row.jwks_url.clone()),
        issuer: Some(row.issuer.clone()),
        default_scopes: &[],
        form_post: false,
        user_info: UserInfo::Standard,
        named_by: NamedBy::Application(reach),
    };
    Ok(Configured {
        endpoints,
        client_id: row.client_id.clone(),
        client_secret,
        scopes: row.scopes.split(' ').map(str::to_string).collect(),
        connection: Some(row),
    })
}

/// The application's settings for `provider`, with its own credentials, or
/// the shared development ones (a development or staging application that
/// asked for them, when the operator configured them).
pub fn configured(state: &TenantState, deps: &Deps<'_>, provider: &str) -> Result<Configured, ProviderSignInError> {
    let not_enabled = || ProviderSignInError::NotEnabled(provider.chars().take(32).collect());
    let endpoints = providers::endpoints(provider, deps.settings).ok_or_else(not_enabled)?;
    let providers = state.part::<oauth_providers::Providers>();
    let row = providers.iter().find(|row| row.provider == provider && row.enabled).ok_or_else(not_enabled)?;
    let (client_id, client_secret) = if row.use_shared_dev_credentials && !state.settings.environment.is_live() {
        let (id, secret) = deps.settings.shared_credentials(provider).ok_or_else(not_enabled)?;
        (id.to_string(), secret.to_string())
    } else {
        let secret = oauth_providers::open_client_secret(deps.master_key, row).map_err(|_| not_enabled())?;
        match (row.client_id.clone(), secret) {
            (Some(id), Some(secret)) if !id.is_empty() => (id, secret),
            _ => return Err(not_enabled()),
        }
    };
    let mut scopes = oauth_providers::scopes_of(row);
    if scopes.is_empty() {
        scopes = endpoints.default_scopes.iter().map(|s| s.to_string()).collect();
    }
    if endpoints.protocol == Protocol::OpenId && !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    Ok(Configured { endpoints, client_id, client_secret, scopes, connection: None })
}

/// The providers a user can sign in with now, by name, with the origin
/// of each one's authorization endpoint (where a sign-in button sends the
/// browser).
pub fn enabled(state: &TenantState, deps: &Deps<'_>) -> Vec<(&'static str, String)> {
    let providers = state.part::<oauth_providers::Providers>();
    providers
        .iter()
        .filter(|row| row.enabled)
        .filter_map(|row| configured(state, deps, &row.provider).ok())
        .filter_map(|c| {
            let origin = url::Url::parse(&c.endpoints.authorization_url).ok()?.origin().ascii_serialization();
            let name = providers::PROVIDERS.into_iter().find(|name| *name == c.endpoints.provider)?;
            Some((name, origin))
        })
        .collect()
}

/// A `state`: the application's id (so the callback, which carries no
/// header, finds the application and its region), then 256 random bits.
pub fn new_state(application_id: Uuid) -> String {
    format!("{}.{}", application_id.simple(), crate::oauth::random_token(32))
}

/// The application a `state` names, if it has the shape of one.
pub fn application_of_state(state: &str) -> Option<Uuid> {
    let (id, random) = state.split_once('.')?;
    (id.len() == 32 && random.len() == 43).then(|| Uuid::try_parse(id).ok()).flatten()
}

/// Where the PKCE verifier of a flow is sealed to.
pub fn verifier_context(application_id: Uuid, flow_id: Uuid) -> String {
    format!("{application_id}/oauth_flow/{flow_id}/code_verifier")
}

fn seal_verifier(key: &MasterKey, application_id: Uuid, flow_id: Uuid, verifier: &str) -> Vec<u8> {
    seal::seal(key, &verifier_context(application_id, flow_id), verifier.as_bytes())
}

fn open_verifier(key: &MasterKey, flow: &oauth_flow::Model) -> Option<String> {
    let opened = seal::open(key, &verifier_context(flow.application_id, flow.id), &flow.code_verifier_sealed).ok()?;
    String::from_utf8(opened).ok()
}

/// The flow a presented `state` belongs to, within the application.
async fn flow_of_state(db: &impl TenantConn, state: &str) -> Result<Option<oauth_flow::Model>, DbErr> {
    db.find::<oauth_flow::Entity>()
        .filter(oauth_flow::Column::StateHash.eq(sha256(state).to_vec()))
        .one(db.conn())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_names_its_application_and_nothing_else_parses() {
        let id = Uuid::now_v7();
        let state = new_state(id);
        assert_eq!(application_of_state(&state), Some(id));
        assert_eq!(application_of_state("x.y"), None);
        assert_eq!(application_of_state(&format!("{}.short", id.simple())), None);
        assert_eq!(application_of_state(&state.replace('.', "")), None);
    }
}
