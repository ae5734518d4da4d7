//! Which user an account at a provider is: the user already linked to it;
//! else the user whose email the provider verified (linked now); else a new
//! user, once the profile schema and the `pre_sign_up` hooks allow it, as
//! at sign-up. An email the provider did not verify neither links to a user
//! nor creates one: whoever controls an unverified address at a provider
//! must not get the account of its owner here.
use entity::{user, user_identity};
use sea_orm::{ColumnTrait, DbErr, IntoActiveModel, QueryFilter};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::{
    areas::{
        hooks::{self, HookError},
        profile_fields,
        users::{self, UserError},
        validate::{Invalid, Issues},
    },
    audit::{
        personal::{self, Subject},
        Actor,
    },
    events::catalog::EventType,
    oauth::client::Account,
    storage::{TenantConn, TenantScope, TenantTxn, Unaudited},
    tenancy::state::TenantState,
};

/// Why an account cannot sign in.
#[derive(Debug, thiserror::Error)]
pub enum LinkRefused {
    #[error("the provider gave no email address")]
    EmailRequired,
    #[error("the provider has not verified the email address")]
    EmailNotVerified,
    /// The address's user is linked to another account at this provider.
    #[error("the address's user is linked to another account at this provider")]
    LinkedToAnother,
    /// The application's profile schema requires fields a provider cannot give.
    #[error(transparent)]
    ProfileIncomplete(Invalid),
    #[error(transparent)]
    Hook(HookError),
}

impl LinkRefused {
    /// The `error` the browser is sent back with.
    pub fn code(&self) -> &'static str {
        match self {
            LinkRefused::EmailRequired => "email_required",
            LinkRefused::EmailNotVerified => "email_not_verified",
            LinkRefused::LinkedToAnother => "account_linked_elsewhere",
            LinkRefused::ProfileIncomplete(_) => "profile_incomplete",
            LinkRefused::Hook(HookError::Unavailable) => "hook_unavailable",
            LinkRefused::Hook(_) => "sign_up_denied",
        }
    }
}

/// What the callback's transaction will do.
pub enum Plan {
    Known { identity: user_identity::Model, user: user::Model },
    LinkTo { user: user::Model, email: String },
    Create { email: String, profile: Map<String, Value> },
}

impl Plan {
    /// Who the audit rows name: the user, or the public caller of a sign-up.
    pub fn actor(&self) -> Actor {
        match self {
            Plan::Known { user, .. } | Plan::LinkTo { user, .. } => Actor::user(user.id),
            Plan::Create { .. } => Actor::public(),
        }
    }
}

/// Reads (and, for a new user, asks the hooks); writes nothing.
pub async fn plan(
    scope: &TenantScope,
    state: &TenantState,
    hook_caller: &hooks::Caller<'_>,
    provider: &str,
    account: &Account,
) -> Result<Result<Plan, LinkRefused>, DbErr> {
    let known = scope
        .find::<user_identity::Entity>()
        .filter(user_identity::Column::Provider.eq(provider))
        .filter(user_identity::Column::Subject.eq(&account.subject))
        .one(scope.conn())
        .await?;
    if let Some(identity) = known {
        if let Some(user) = scope.find_by_id::<user::Entity>(identity.user_id).one(scope.conn()).await? {
            return Ok(Ok(Plan::Known { identity, user }));
        }
    }
    let Some(email) = account
        .email
        .as_deref()
        .and_then(users::normalize_email)
        .filter(|email| profile_fields::is_email(email) && email.chars().count() <= 254)
    else {
        return Ok(Err(LinkRefused::EmailRequired));
    };
    if !account.email_verified {
        return Ok(Err(LinkRefused::EmailNotVerified));
    }
    if let Some(user) = users::find_by_email(scope, &email).await? {
        // A user is one account at a provider: another account giving the
        // same address (an address edited at the provider) links to nobody.
        let linked = scope
            .find::<user_identity::Entity>()
            .filter(user_identity::Column::Provider.eq(provider))
            .filter(user_identity::Column::UserId.eq(user.id))
            .one(scope.conn())
            .await?;
        if linked.is_some() {
            return Ok(Err(LinkRefused::LinkedToAnother));
        }
        return Ok(Ok(Plan::LinkTo { user, email }));
    }
    // A new user's profile is what the sign-in gives (an SSO connection's
    // attribute mapping), held to the application's schema as at sign-up.
    let mut issues = Issues::default();
    let profile = users::profile(scope, &mut issues, Some(Value::Object(account.profile.clone()))).await?;
    if let Err(invalid) = issues.finish() {
        return Ok(Err(LinkRefused::ProfileIncomplete(invalid)));
    }
    match hooks::pre_sign_up(hook_caller, scope, state, &email, &Value::Object(profile.clone())).await {
        Ok(()) => Ok(Ok(Plan::Create { email, profile })),
        Err(HookError::Db(err)) => Err(err),
        Err(refused) => Ok(Err(LinkRefused::Hook(refused))),
    }
}

/// Carries the plan out in the callback's transaction; answers the user.
pub async fn apply(
    txn: &mut TenantTxn,
    provider: &str,
    account: &Account,
    plan: Plan,
    policies: &[entity::sod_policy::Model],
) -> Result<user::Model, UserError> {
    let now = crate::clock::now();
    let (user, email) = match plan {
        Plan::Known { identity, user } => {
            let mut row = identity.into_active_model();
            row.email = sea_orm::ActiveValue::Set(account.email.clone());
            row.last_sign_in_at = sea_orm::ActiveValue::Set(Some(now));
            txn.update(row).await?;
            txn.unaudited(Unaudited::ProviderSignInStep);
            return Ok(user);
        }
        Plan::LinkTo { user, email } => (user, email),
        Plan::Create { email, profile } => {
            let user = users::insert(txn, email.clone(), None, profile).await?;
            // Through an organization's connection, the connection's role
            // is the one granted (`sso_connections::sign_in::join`), not
            // the domain's auto-join role.
            if crate::areas::sso_connections::connection_of_provider(provider).is_none() {
                crate::areas::sso_domains::auto_join(txn, policies, user.id, &user.email).await?;
            }
            (user, email)
        }
    };
    // Only a provider-verified email links or creates: it is proven.
    crate::areas::email_verifications::mark_verified(txn, user.id, provider).await?;
    let identity = user_identity::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        user_id: user.id,
        provider: provider.to_string(),
        subject: account.subject.clone(),
        email: account.email.clone(),
        created_at: now,
        last_sign_in_at: Some(now),
    };
    txn.insert(identity.clone().into_active_model()).await?;
    txn.audit_personal(
        EventType::IdentityLinked,
        Some(user.id),
        json!({"identity_id": identity.id, "provider": provider}),
        Subject::User(user.id),
        personal::fields([("email", json!(email))]),
    )
    .await?;
    Ok(user)
}
