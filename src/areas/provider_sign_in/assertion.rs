//! The SAML counterpart of the [`callback`](super::callback): a SAML
//! identity provider's response, posted to a connection's assertion
//! consumer service.
//!
//! - SP-initiated: its `RelayState` is a flow's `state`, taken once; the
//!   response must answer the request that flow sent.
//! - IdP-initiated (only where the connection allows it): a response with
//!   no `RelayState` of ours answers no request; a flow is made for it,
//!   bound for the connection's `idp_initiated_redirect_uri`.
//!
//! Either way the response's and assertions' IDs are taken once (kept
//! until they expire), then the rules and the one-time code are those of
//! every SSO sign-in.
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use entity::{oauth_flow, saml_assertion, sso_connection};
use sea_orm::{ColumnTrait, DbErr, IntoActiveModel, SqlErr};
use uuid::Uuid;

use super::{
    application_of_state,
    callback::{answer, issue, take_state, unavailable, Failure},
    flow_of_state, new_state,
    start::{store_flow, Back},
    Deps, ProviderSignInError,
};
use crate::{
    areas::{
        applications, hooks,
        sso_connections::{self, provider_name, saml},
    },
    storage::{TenantScope, Unaudited},
};

/// A response as posted to a SAML connection's assertion consumer service
/// (the connection as the route found it).
pub struct SamlPost {
    pub connection: sso_connection::Model,
    pub saml_response: String,
    pub relay_state: Option<String>,
}

/// Answers where to send the browser: the application's `redirect_uri`
/// (the flow's, or the connection's for an IdP-initiated sign-in) with
/// `code` or `error`.
pub async fn saml_callback(
    scope: &TenantScope,
    deps: &Deps<'_>,
    hook_caller: &hooks::Caller<'_>,
    post: SamlPost,
) -> Result<String, ProviderSignInError> {
    let connection = post.connection;
    let provider = provider_name(connection.id);
    if !connection.enabled || connection.protocol != sso_connections::SAML {
        return Err(ProviderSignInError::NotEnabled(provider));
    }
    let relay_state = post.relay_state.as_deref().filter(|state| !state.is_empty());
    let ours = relay_state.is_some_and(|state| application_of_state(state) == Some(scope.tenant().id));
    let (flow, request_id) = if ours {
        let state = relay_state.unwrap_or_default();
        let flow = match flow_of_state(scope, state).await? {
            Some(flow) if flow.provider == provider => flow,
            _ => return Err(ProviderSignInError::InvalidState),
        };
        if !take_state(scope, &flow).await? {
            return Err(ProviderSignInError::InvalidState);
        }
        let request_id = flow.nonce.clone();
        (flow, Some(request_id))
    } else {
        (unsolicited_flow(scope, deps, &connection).await?, None)
    };
    let finished = async {
        let metadata = connection.idp_metadata.as_deref().unwrap_or_default();
        let sp = saml::credentials::service_provider(deps.master_key, &deps.public_url, &connection);
        let posted = saml::Posted {
            saml_response: &post.saml_response,
            relay_state: relay_state.unwrap_or_default(),
            request_id: request_id.as_deref(),
            now: SystemTime::from(crate::clock::now()),
        };
        let asserted = saml::accept(&sp, metadata, posted)
            .map_err(|refused| Failure::new("invalid_saml_response", format!("saml_{}", refused.0)))?;
        match take_uses(scope, connection.id, &asserted.uses).await {
            Ok(true) => {}
            Ok(false) => return Err(Failure::new("invalid_saml_response", "saml_replay_detected")),
            Err(err) => return Err(unavailable(&err)),
        }
        let state = deps.tenants.state(scope).await.map_err(|e| unavailable(&e.message))?;
        issue(scope, &state, hook_caller, &flow, Some(&connection), asserted.account).await
    };
    let finished = finished.await;
    answer(scope, &flow, finished).await
}

/// The flow of an IdP-initiated sign-in, taken at once (its `state` is
/// never given out): refused unless the connection allows such sign-ins.
async fn unsolicited_flow(
    scope: &TenantScope,
    deps: &Deps<'_>,
    connection: &sso_connection::Model,
) -> Result<oauth_flow::Model, ProviderSignInError> {
    let redirect_uri = match (&connection.idp_initiated, &connection.idp_initiated_redirect_uri) {
        (true, Some(uri)) => uri.clone(),
        _ => return Err(ProviderSignInError::InvalidState),
    };
    // Still one of the application's origins (they may have changed since).
    let state = deps.tenants.state(scope).await?;
    if applications::redirect_uri_issue(&redirect_uri, &state.settings.allowed_origins).is_some() {
        return Err(ProviderSignInError::InvalidState);
    }
    let back = Back { redirect_uri, client_state: None, client_code_challenge: None };
    let state = new_state(scope.tenant().id);
    store_flow(scope, deps, provider_name(connection.id), back, &state, String::new()).await?;
    let flow = flow_of_state(scope, &state).await?.ok_or(ProviderSignInError::InvalidState)?;
    if !take_state(scope, &flow).await? {
        return Err(ProviderSignInError::InvalidState);
    }
    Ok(flow)
}

/// Takes each ID once for the connection: `false` when one was taken
/// before (a replay). Expired ones go as new ones come.
async fn take_uses(scope: &TenantScope, connection_id: Uuid, uses: &[(String, SystemTime)]) -> Result<bool, DbErr> {
    let application_id = scope.tenant().id;
    let now = crate::clock::now();
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::ProviderSignInStep);
    txn.delete::<saml_assertion::Entity>(saml_assertion::Column::ExpiresAt.lt(now)).await?;
    for (id, expires_at) in uses {
        let row = saml_assertion::Model {
            id: Uuid::now_v7(),
            application_id,
            connection_id,
            assertion_id: id.chars().take(255).collect(),
            expires_at: DateTime::<Utc>::from(*expires_at).max(now),
        };
        match txn.insert(row.into_active_model()).await {
            Ok(_) => {}
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => return Ok(false),
            Err(err) => return Err(err),
        }
    }
    txn.commit().await?;
    Ok(true)
}
