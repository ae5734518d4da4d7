//! The provider's answer: the `state` taken once, the code exchanged with
//! the PKCE verifier, the account linked to a user, and the browser sent
//! back to the application with a one-time code (or an `error`). Every
//! outcome after the `state` is accepted goes back to the application's
//! `redirect_uri`; failures are audited as `sign_in.failed`.
use chrono::Duration;
use entity::oauth_flow;
use sea_orm::{sea_query::Expr, ColumnTrait, QueryFilter, UpdateMany};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use super::{
    flow_of_state,
    link::{self, LinkRefused},
    open_verifier, resolve, Deps, ProviderSignInError, CODE_TTL_SECONDS,
};
use crate::{
    areas::{
        hooks::{self, HookError},
        sso_connections::{self, attributes::AttributeMapping},
        users,
    },
    audit::Actor,
    crypto::sha256,
    events::catalog::EventType,
    oauth::{
        self,
        client::{Account, Credentials, Grant, ProviderError},
    },
    storage::{TenantScope, Unaudited},
    tenancy::state::TenantState,
};

/// The callback's query (or form, for providers that POST it); unknown
/// parameters are the provider's own and ignored.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackParams {
    pub state: Option<String>,
    pub code: Option<String>,
    /// The provider's refusal (`access_denied` when the user said no).
    pub error: Option<String>,
    /// The issuer of the answer (RFC 9207); checked when sent.
    pub iss: Option<String>,
}

/// A failure after the `state` was accepted: what the application is told
/// (`error`, and a `description` meant for the end user when there is
/// one) and what the audit row says (`reason`).
pub(super) struct Failure {
    error: &'static str,
    description: Option<String>,
    reason: String,
    email: Option<String>,
}

impl Failure {
    pub(super) fn new(error: &'static str, reason: impl Into<String>) -> Failure {
        Failure { error, description: None, reason: reason.into(), email: None }
    }
}

impl From<ProviderError> for Failure {
    fn from(err: ProviderError) -> Failure {
        let error = match err {
            ProviderError::IdToken(_) => "invalid_id_token",
            _ => "provider_error",
        };
        tracing::info!(error = %err, "a provider sign-in failed at the provider");
        Failure::new(error, err.reason())
    }
}

/// Answers where to send the browser: the application's `redirect_uri`
/// with `code` (or `error`) and its own `state`.
pub async fn callback(
    scope: &TenantScope,
    deps: &Deps<'_>,
    hook_caller: &hooks::Caller<'_>,
    provider: &str,
    params: CallbackParams,
) -> Result<String, ProviderSignInError> {
    let presented = params.state.as_deref().unwrap_or_default();
    let flow = match flow_of_state(scope, presented).await? {
        Some(flow) if flow.provider == provider && !presented.is_empty() => flow,
        _ => return Err(ProviderSignInError::InvalidState),
    };
    if !take_state(scope, &flow).await? {
        return Err(ProviderSignInError::InvalidState);
    }
    let finished = finish(scope, deps, hook_caller, &flow, params).await;
    answer(scope, &flow, finished).await
}

/// The browser's way back to the application: with the one-time `code`, or
/// with the `error` (audited as `sign_in.failed`).
pub(super) async fn answer(
    scope: &TenantScope,
    flow: &oauth_flow::Model,
    finished: Result<String, Failure>,
) -> Result<String, ProviderSignInError> {
    match finished {
        Ok(code) => Ok(back_to_application(flow, &[("code", &code)])),
        Err(failure) => {
            let detail = json!({"method": method_of(&flow.provider), "provider": flow.provider,
                "reason": failure.reason, "email": failure.email});
            let mut txn = scope.acting_as(Actor::public()).begin().await?;
            txn.audit(EventType::SignInFailed, None, detail).await?;
            txn.commit().await?;
            let mut answer = vec![("error", failure.error)];
            if let Some(description) = &failure.description {
                answer.push(("error_description", description));
            }
            Ok(back_to_application(flow, &answer))
        }
    }
}

/// `UPDATE … SET called_back_at = now WHERE id = ? AND called_back_at IS
/// NULL AND expires_at > now`: of two callbacks with one `state`, one wins.
/// Committed at once, so a replay is refused even while the first one is
/// still talking to the provider.
pub(super) async fn take_state(scope: &TenantScope, flow: &oauth_flow::Model) -> Result<bool, sea_orm::DbErr> {
    let now = crate::clock::now();
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::ProviderSignInStep);
    let taken = txn
        .update_many(|q: UpdateMany<oauth_flow::Entity>| {
            q.col_expr(oauth_flow::Column::CalledBackAt, Expr::value(now))
                .filter(oauth_flow::Column::Id.eq(flow.id))
                .filter(oauth_flow::Column::CalledBackAt.is_null())
                .filter(oauth_flow::Column::ExpiresAt.gt(now))
        })
        .await?;
    txn.commit().await?;
    Ok(taken == 1)
}

/// Everything after the `state`: answers the one-time code.
async fn finish(
    scope: &TenantScope,
    deps: &Deps<'_>,
    hook_caller: &hooks::Caller<'_>,
    flow: &oauth_flow::Model,
    params: CallbackParams,
) -> Result<String, Failure> {
    if let Some(error) = params.error {
        let denied = error == "access_denied";
        let reason: String = error.chars().filter(|c| c.is_ascii_graphic()).take(64).collect();
        return Err(Failure::new(
            if denied { "access_denied" } else { "provider_error" },
            format!("provider_said_{reason}"),
        ));
    }
    let code = params
        .code
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or_else(|| Failure::new("provider_error", "no_code"))?;
    let state = deps.tenants.state(scope).await.map_err(|e| unavailable(&e.message))?;
    // Disabled (or its credentials removed) since the start: no sign-in.
    let provider = match resolve(scope, &state, deps, &flow.provider).await {
        Ok(provider) => provider,
        Err(ProviderSignInError::Db(err)) => return Err(unavailable(&err)),
        Err(_) => return Err(Failure::new("provider_error", "not_enabled")),
    };
    // RFC 9207: an answer from another issuer is a mix-up, not ours to use.
    if let (Some(said), Some(issuer)) = (&params.iss, &provider.endpoints.issuer) {
        if !issuer.contains("{tenantid}") && said != issuer {
            return Err(Failure::new("provider_error", "issuer_mismatch"));
        }
    }
    let verifier = open_verifier(deps.master_key, flow)
        .ok_or_else(|| Failure::new("temporarily_unavailable", "verifier_unreadable"))?;
    let credentials = Credentials { client_id: &provider.client_id, client_secret: &provider.client_secret };
    let callback_url = deps.callback_url(&flow.provider);
    let grant = Grant { code: &code, redirect_uri: &callback_url, code_verifier: &verifier, nonce: &flow.nonce };
    let wanted = provider.connection.as_ref().map(|c| AttributeMapping::of(&c.attribute_mapping).claims());
    let account =
        deps.client.sign_in(&provider.endpoints, &credentials, &grant, wanted.as_deref().unwrap_or_default()).await?;
    issue(scope, &state, hook_caller, flow, provider.connection.as_ref(), account).await
}

pub(super) fn unavailable(err: &dyn std::fmt::Display) -> Failure {
    tracing::warn!(error = %err, "a provider sign-in could not be completed");
    Failure::new("temporarily_unavailable", "unavailable")
}

/// What every provider's sign-in does once it knows the account: the
/// connection's rules (or `sso_required` for another provider), the link
/// to a user, the organization joined, and the one-time code.
pub(super) async fn issue(
    scope: &TenantScope,
    state: &TenantState,
    hook_caller: &hooks::Caller<'_>,
    flow: &oauth_flow::Model,
    connection: Option<&entity::sso_connection::Model>,
    mut account: Account,
) -> Result<String, Failure> {
    if let Some(connection) = connection {
        let refused = match sso_connections::sign_in::admit(scope, connection, &mut account).await {
            Ok(Ok(())) => None,
            Ok(Err(refused)) => Some(Failure::new(refused.code(), refused.code())),
            Err(err) => Some(unavailable(&err)),
        };
        if let Some(failure) = refused {
            return Err(Failure { email: account.email.clone(), ..failure });
        }
    } else if let Some(email) = account.email.as_deref().and_then(users::normalize_email) {
        // An organization that requires SSO of its domains: its people sign
        // in through its connection, not through another provider.
        match sso_connections::required_for(scope, &email).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                return Err(Failure { email: account.email.clone(), ..Failure::new("sso_required", "sso_required") })
            }
            Err(err) => return Err(unavailable(&err)),
        }
    }
    let with_email = |failure: Failure| Failure { email: account.email.clone(), ..failure };

    let plan = match link::plan(scope, state, hook_caller, &flow.provider, &account).await {
        Ok(Ok(plan)) => plan,
        Ok(Err(refused)) => return Err(with_email(refused_failure(refused))),
        Err(err) => return Err(unavailable(&err)),
    };
    let policies = state.part::<crate::areas::sod::Policies>();
    let issued = async {
        let mut txn = scope.acting_as(plan.actor()).begin().await?;
        let user = link::apply(&mut txn, &flow.provider, &account, plan, &policies).await?;
        let sso = match connection {
            Some(connection) => {
                sso_connections::sign_in::join(&mut txn, &policies, connection, user.id).await?;
                Some(sso_connections::sign_in::session(connection, &account))
            }
            None => None,
        };
        let code = oauth::random_token(32);
        let now = crate::clock::now();
        txn.update_many(|q: UpdateMany<oauth_flow::Entity>| {
            q.col_expr(oauth_flow::Column::UserId, Expr::value(user.id))
                .col_expr(oauth_flow::Column::CodeHash, Expr::value(sha256(&code).to_vec()))
                .col_expr(oauth_flow::Column::CodeExpiresAt, Expr::value(now + Duration::seconds(CODE_TTL_SECONDS)))
                .col_expr(oauth_flow::Column::OrganizationId, Expr::value(sso.as_ref().map(|s| s.organization_id)))
                .col_expr(oauth_flow::Column::Amr, Expr::value(sso.map(|s| s.amr)))
                .filter(oauth_flow::Column::Id.eq(flow.id))
        })
        .await?;
        txn.commit().await?;
        Ok::<_, Unissued>(code)
    };
    match issued.await {
        Ok(code) => Ok(code),
        // Separation of duties (or the like) refused the organization's grant.
        Err(Unissued::Organization(refusal)) => {
            Err(with_email(Failure::new("membership_refused", format!("membership_refused: {refusal}"))))
        }
        Err(err) => Err(with_email(unavailable(&err))),
    }
}

/// Why the callback's transaction did not issue a code.
#[derive(Debug, thiserror::Error)]
enum Unissued {
    #[error(transparent)]
    User(#[from] crate::areas::users::UserError),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
    #[error(transparent)]
    Organization(crate::areas::organizations::OrganizationError),
}

impl From<crate::areas::organizations::OrganizationError> for Unissued {
    fn from(err: crate::areas::organizations::OrganizationError) -> Self {
        match err {
            crate::areas::organizations::OrganizationError::Db(err) => Unissued::Db(err),
            refusal => Unissued::Organization(refusal),
        }
    }
}

/// The `method` of a sign-in's audit rows: `sso` through a connection.
pub fn method_of(provider: &str) -> &'static str {
    if sso_connections::connection_of_provider(provider).is_some() {
        "sso"
    } else {
        "oauth"
    }
}

fn refused_failure(refused: LinkRefused) -> Failure {
    let (reason, description) = match &refused {
        // A hook's refusal is written for the end user: the application may show it.
        LinkRefused::Hook(HookError::Denied(message)) => (format!("hook: {refused}"), Some(message.clone())),
        LinkRefused::Hook(err) => (format!("hook: {err}"), None),
        other => (other.code().to_string(), None),
    };
    Failure { description, ..Failure::new(refused.code(), reason) }
}

/// The application's `redirect_uri` with `params` and its own `state`
/// added to whatever query it has.
fn back_to_application(flow: &oauth_flow::Model, params: &[(&str, &str)]) -> String {
    let Ok(mut url) = url::Url::parse(&flow.redirect_uri) else { return flow.redirect_uri.clone() };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        if let Some(state) = &flow.client_state {
            query.append_pair("state", state);
        }
    }
    url.into()
}
