//! End users' own flows (contract §5): sign-up, sign-in, refresh, and the
//! access token of a session. Each runs in the application's scope and
//! records its audit rows in the transaction of its change.
pub mod http;
pub mod view;

use chrono::Duration;
use entity::{membership, session, user};
use serde_json::{json, Map, Value};
use uuid::Uuid;
use webauthn_rs::prelude::PublicKeyCredential;

use super::{
    email_verifications::Codes,
    entitlements::{self, EntitlementError, OrganizationEntitlements},
    hooks::{self, HookError},
    memberships,
    rotations::RotationError,
    second_factors::{
        self, challenges,
        passkeys::{self, Asserted},
        SecondFactorError,
    },
    sessions::{self, Opened, RefreshRefused},
    sso_connections,
    users::{self, UserError},
};
use crate::{
    audit::{
        personal::{self, Subject},
        Actor,
    },
    crypto::password::{PasswordError, PasswordHasher},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
    tenancy::registry::TenantRegistry,
    tokens::{algorithms::Algorithm, AccessTokens, IdTokenSigner, Issued, NoSigningKey, OrganizationClaims, Signer},
};

/// Why an end-user flow failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A wrong password, an unknown email: one answer for every reason.
    #[error("the email or password is wrong")]
    InvalidCredentials,
    #[error("the refresh token was refused: {0:?}")]
    RefreshRefused(RefreshRefused),
    /// The right password, but the application requires a verified email
    /// and this user has not verified theirs (a fresh code was sent).
    #[error("the email is not verified")]
    EmailNotVerified,
    /// The address's organization requires SSO of its people.
    #[error("the organization requires SSO for this address")]
    SsoRequired,
    /// Not a member of the organization: it looks like no such organization.
    #[error("not a member of organization `{0}`")]
    NotAMember(Uuid),
    /// The tenant's actor answers in wire errors already (the tenancy
    /// registry is on `ApiError`); they pass through unchanged.
    #[error(transparent)]
    Tenant(ApiError),
    #[error(transparent)]
    NoSigningKey(#[from] NoSigningKey),
    #[error(transparent)]
    Password(#[from] PasswordError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error(transparent)]
    User(#[from] UserError),
    #[error(transparent)]
    Rotation(#[from] RotationError),
    /// An organization's entitlements, for a token's `ent` claim.
    #[error(transparent)]
    Entitlement(#[from] EntitlementError),
    /// A passkey sign-in's ceremony or stored passkey.
    #[error(transparent)]
    SecondFactor(#[from] SecondFactorError),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::InvalidCredentials => ApiError::new(Code::InvalidCredentials, "The email or password is wrong."),
            AuthError::SsoRequired => ApiError::new(
                Code::SsoRequired,
                "This address's organization requires signing in through its identity provider: start at `POST /v1/auth/sso/start`.",
            ),
            // Every refusal is the one 401: no reason oracle.
            AuthError::RefreshRefused(_) => ApiError::unauthenticated(),
            AuthError::NotAMember(id) => ApiError::not_found("Organization", id),
            AuthError::Tenant(err) => err,
            AuthError::NoSigningKey(err) => err.into(),
            AuthError::Password(err) => err.into(),
            AuthError::Hook(err) => err.into(),
            AuthError::User(err) => err.into(),
            AuthError::Rotation(err) => err.into(),
            AuthError::Entitlement(err) => err.into(),
            AuthError::SecondFactor(err) => err.into(),
            AuthError::EmailNotVerified => ApiError::new(
                Code::EmailNotVerified,
                "The email is not verified; a code was sent to it (POST /v1/auth/email/verify).",
            ),
            AuthError::Db(err) => err.into(),
        }
    }
}

/// What an end-user flow needs of the node: the tenants' state (signing
/// keys, hooks) and the token format.
pub struct Issuer<'a> {
    pub tenants: &'a TenantRegistry,
    pub tokens: &'a AccessTokens,
    pub entitlements: &'a OrganizationEntitlements,
}

impl Issuer<'_> {
    /// The signer of the application's tokens, its first key created on
    /// first use; taken before anything commits.
    pub async fn signer(&self, scope: &TenantScope) -> Result<Signer, AuthError> {
        let state = self.tenants.signing_state(scope).await.map_err(AuthError::Tenant)?;
        Ok(self.tokens.signer(scope.tenant().id, &state.keys)?)
    }

    /// The signer of a client's ID tokens with `algorithm`, its first key
    /// created if there is none; taken before anything commits.
    pub async fn id_token_signer(&self, scope: &TenantScope, algorithm: Algorithm) -> Result<IdTokenSigner, AuthError> {
        let state = self.tenants.signing_state_for(scope, algorithm).await.map_err(AuthError::Tenant)?;
        Ok(IdTokenSigner::new(&state.keys, algorithm)?)
    }

    /// What a token says of an organization: its id, the user's role, and
    /// the features the application's `entitlement_claims` name, resolved
    /// (from the tenant state and the organization's cached inputs: no
    /// query on a warm path).
    pub async fn organization_claims(
        &self,
        scope: &TenantScope,
        membership: membership::Model,
    ) -> Result<OrganizationClaims, AuthError> {
        let keys = &scope.tenant().entitlement_claims;
        let entitlements = if keys.is_empty() {
            None
        } else {
            let inputs = self.entitlements.inputs(scope, membership.organization_id).await?;
            let state = self.tenants.state(scope).await.map_err(AuthError::Tenant)?;
            let resolved = entitlements::resolve(&state.part::<entitlements::Catalog>(), &inputs);
            Some(
                resolved
                    .into_iter()
                    .filter(|e| keys.contains(&e.feature_key))
                    .map(|e| (e.feature_key, e.value))
                    .collect(),
            )
        };
        Ok(OrganizationClaims { id: membership.organization_id, role: membership.role, entitlements })
    }

    /// The token of a session: with its active organization when the user
    /// is still a member there.
    pub async fn access_token(
        &self,
        signer: &Signer,
        scope: &TenantScope,
        session: &session::Model,
    ) -> Result<Issued, AuthError> {
        let organization = match memberships::active_membership(scope, session).await? {
            Some(membership) => Some(self.organization_claims(scope, membership).await?),
            None => None,
        };
        Ok(signer.issue(session, organization))
    }
}

/// A sign-up that passed validation.
pub struct NewSignUp {
    pub email: String,
    pub password: String,
    pub profile: Map<String, Value>,
}

/// Runs the `pre_sign_up` hooks, hashes the password, then creates the user
/// and a session in one transaction (by the public caller).
pub async fn sign_up(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    passwords: &PasswordHasher,
    hook_caller: &hooks::Caller<'_>,
    codes: Codes<'_>,
    new: NewSignUp,
    session_ttl: Duration,
) -> Result<(Signer, user::Model, Opened), AuthError> {
    // An organization that requires SSO of its domains makes its people's
    // accounts through its connection, not with a password.
    if sso_connections::required_for(scope, &new.email).await?.is_some() {
        return Err(AuthError::SsoRequired);
    }
    let state = issuer.tenants.state(scope).await.map_err(AuthError::Tenant)?;
    hooks::pre_sign_up(hook_caller, scope, &state, &new.email, &Value::Object(new.profile.clone())).await?;
    let password_hash = passwords.hash(new.password).await?;
    let signer = issuer.signer(scope).await?;
    let mut txn = scope.begin().await?;
    // No auto-join yet: an address at a verified domain is not proven
    // until its code is (`email_verifications::verify` joins then).
    let user = users::insert(&mut txn, new.email, Some(password_hash), new.profile).await?;
    let opened = sessions::open(&mut txn, user.id, false, "aal1", session_ttl).await?;
    codes.queue(&mut txn, user.id).await?;
    txn.commit().await?;
    Ok((signer, user, opened))
}

/// What a right first factor leads to.
#[allow(clippy::large_enum_variant)] // made once per sign-in and taken apart at once
pub enum SignedIn {
    /// A session (`aal1`).
    Session(Signer, user::Model, Opened),
    /// The user has a second factor: a challenge to complete with a code
    /// (`POST /v1/auth/sign-in/mfa`), and no session yet.
    SecondFactorRequired(challenges::Issued),
}

/// Checks an email and password and opens a session, or answers a
/// challenge when the user has a second factor. Every failure is the same
/// 401 after the same work, recorded with its reason for the operator.
pub async fn sign_in(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    passwords: &PasswordHasher,
    codes: Codes<'_>,
    email: &str,
    password: String,
    session_ttl: Duration,
) -> Result<SignedIn, AuthError> {
    // A place in the hashing queue first: past its bound the answer is an
    // immediate 503 that has touched nothing.
    let admission = passwords.admit()?;
    // The organization's rule is about the address's domain, which home
    // realm discovery tells anyone: refused before any password work.
    if sso_connections::required_for(scope, email).await?.is_some() {
        record_failed_sign_in(scope, email, None, "sso_required").await?;
        return Err(AuthError::SsoRequired);
    }
    let signer = issuer.signer(scope).await?;
    let found = users::find_by_email(scope, email).await?;
    let stored = found.as_ref().and_then(|u| u.password_hash.clone());
    let (matches, rehashed) = admission.verify_rehashing(password, stored.clone()).await?;
    let user = match found {
        Some(user) if matches => user,
        Some(user) => return Err(failed_sign_in(scope, email, Some(user.id), "wrong_password").await),
        None => return Err(failed_sign_in(scope, email, None, "unknown_email").await),
    };
    if scope.tenant().require_verified_email && user.email_verified_at.is_none() {
        // Only after the right password: the answer tells nothing to a guesser.
        codes.send(scope, user.id).await?;
        record_failed_sign_in(scope, email, Some(user.id), "email_not_verified").await?;
        return Err(AuthError::EmailNotVerified);
    }
    let factors = second_factors::factors_of(scope, user.id).await?;
    if !factors.is_empty() {
        return Ok(SignedIn::SecondFactorRequired(challenges::issue(scope, user.id, "password", None, factors).await?));
    }
    let mut txn = scope.acting_as(Actor::user(user.id)).begin().await?;
    let now = crate::clock::now();
    // Deleted while its password was being checked: no session for it.
    if !users::touch_sign_in(&mut txn, user.id, now).await? {
        drop(txn);
        return Err(failed_sign_in(scope, email, None, "unknown_email").await);
    }
    let opened = sessions::open(&mut txn, user.id, user.email_verified_at.is_some(), "aal1", session_ttl).await?;
    let mut data = json!({"session_id": opened.session.id, "method": "password"});
    if let Some(hash) = rehashed {
        // An imported hash, proven: our argon2id replaces it (unless the password changed meanwhile).
        let replaced = users::replace_password_hash(&mut txn, user.id, stored.as_deref(), hash).await?;
        data["password_rehashed"] = json!(replaced);
    }
    txn.audit(EventType::SignInSucceeded, Some(user.id), data).await?;
    txn.commit().await?;
    Ok(SignedIn::Session(signer, user::Model { last_sign_in_at: Some(now), ..user }, opened))
}

/// A passwordless sign-in: a discoverable passkey's assertion against a
/// `sign_in` ceremony opens a session at `aal2` (the passkey is a
/// device the user has, unlocked by user verification). A refused
/// assertion spends the ceremony and is audited `sign_in.failed`.
pub async fn sign_in_with_passkey(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    codes: Codes<'_>,
    ceremony: &str,
    credential: &PublicKeyCredential,
    session_ttl: Duration,
) -> Result<(Signer, user::Model, Opened), AuthError> {
    let signer = issuer.signer(scope).await?;
    let mut txn = scope.acting_as(Actor::public()).begin().await?;
    let asserted =
        passkeys::assert(&mut txn, scope.tenant(), ceremony, passkeys::Purpose::SignIn, None, credential).await?;
    let (user_id, passkey_id) = match asserted {
        Asserted::Proven { user_id, passkey_id } => (user_id, passkey_id),
        Asserted::Refused { user_id, reason } => return Err(refuse_passkey(txn, user_id, reason).await?),
    };
    let Some(user) = txn.find_by_id::<user::Entity>(user_id).one(txn.conn()).await? else {
        return Err(refuse_passkey(txn, Some(user_id), "unknown_user").await?);
    };
    if scope.tenant().require_verified_email && user.email_verified_at.is_none() {
        refuse_passkey(txn, Some(user_id), "email_not_verified").await?;
        codes.send(scope, user.id).await?;
        return Err(AuthError::EmailNotVerified);
    }
    let now = crate::clock::now();
    users::touch_sign_in(&mut txn, user_id, now).await?;
    let opened = sessions::open(&mut txn, user_id, user.email_verified_at.is_some(), "aal2", session_ttl).await?;
    let data = json!({"session_id": opened.session.id, "method": "passkey", "passkey_id": passkey_id});
    txn.audit_as(&Actor::user(user_id), EventType::SignInSucceeded, Some(user_id), data).await?;
    txn.commit().await?;
    Ok((signer, user::Model { last_sign_in_at: Some(now), ..user }, opened))
}

/// Commits a refused passkey sign-in (its ceremony spent) with its
/// `sign_in.failed` row; answers the one 401.
async fn refuse_passkey(mut txn: TenantTxn, user_id: Option<Uuid>, reason: &str) -> Result<AuthError, sea_orm::DbErr> {
    txn.audit(EventType::SignInFailed, user_id, json!({"method": "passkey", "reason": reason})).await?;
    txn.commit().await?;
    Ok(AuthError::InvalidCredentials)
}

/// Records a failed sign-in (the reason is for the operator) and answers
/// the one 401 every failure gets.
pub async fn failed_sign_in(scope: &TenantScope, email: &str, user_id: Option<Uuid>, reason: &str) -> AuthError {
    match record_failed_sign_in(scope, email, user_id, reason).await {
        Ok(()) => AuthError::InvalidCredentials,
        Err(err) => err.into(),
    }
}

/// The audit row `sign_in.failed`, in its own transaction.
async fn record_failed_sign_in(
    scope: &TenantScope,
    email: &str,
    user_id: Option<Uuid>,
    reason: &str,
) -> Result<(), sea_orm::DbErr> {
    let mut txn = scope.acting_as(Actor::public()).begin().await?;
    let address = crate::areas::users::normalize_email(email).unwrap_or_else(|| email.to_string());
    let subject = user_id.map_or(Subject::Email(&address), Subject::User);
    let data = json!({"method": "password", "reason": reason});
    txn.audit_personal(EventType::SignInFailed, user_id, data, subject, personal::fields([("email", json!(email))]))
        .await?;
    txn.commit().await
}

/// Exchanges a refresh token for a new one and an access token. A token
/// is refreshed only by the party its session was issued to: `client` is
/// the OAuth client at the issuer's token endpoint, `None` for the API's
/// own refresh (which refuses a client's tokens, so a confidential
/// client's token is never refreshed without its secret).
pub async fn refresh(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    rotations: &super::rotations::Rotations,
    presented: &str,
    client: Option<Uuid>,
) -> Result<(Opened, Issued), AuthError> {
    let signer = issuer.signer(scope).await?;
    if sessions::client_of_refresh_token(scope, presented).await?.is_some_and(|owner| owner != client) {
        metrics::counter!("gatehouse_refresh_refused_total", "reason" => "other_client").increment(1);
        return Err(AuthError::RefreshRefused(RefreshRefused::Unknown));
    }
    let opened = match rotations.rotate(scope, presented).await? {
        Ok(opened) => opened,
        Err(refused) => {
            metrics::counter!("gatehouse_refresh_refused_total", "reason" => refused.as_str()).increment(1);
            return Err(AuthError::RefreshRefused(refused));
        }
    };
    let access = issuer.access_token(&signer, scope, &opened.session).await?;
    Ok((opened, access))
}

/// Makes one of the user's organizations the session's active one and
/// answers the session with a token carrying it. Not a member looks like
/// no such organization.
pub async fn activate_organization(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    session: session::Model,
    organization_id: Uuid,
) -> Result<(session::Model, Issued), AuthError> {
    let membership = memberships::find(scope, organization_id, session.user_id)
        .await?
        .ok_or(AuthError::NotAMember(organization_id))?;
    let signer = issuer.signer(scope).await?;
    sessions::activate_organization(scope, session.id, organization_id).await?;
    let session = session::Model { active_organization_id: Some(organization_id), ..session };
    let claims = issuer.organization_claims(scope, membership).await?;
    let access = signer.issue(&session, Some(claims));
    Ok((session, access))
}
