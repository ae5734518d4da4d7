//! Passkeys (WebAuthn Level 3, through `webauthn-rs`): registration by a
//! signed-in user, and authentication three ways: a passwordless sign-in
//! with a discoverable credential (the credential names its user), a
//! sign-in's second step, and a step-up (both for a known user's passkeys).
//! The relying-party id is the application's `passkey_rp_id`; the origins
//! are its allowed origins on that domain. User verification is required
//! in every ceremony, the signature counter is checked (a counter that does
//! not move forward refuses the passkey), and a ceremony's state stays on
//! the server under the SHA-256 of a handle the client holds: 5 minutes,
//! used once, whatever its outcome.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chrono::Duration;
use entity::{passkey, passkey_ceremony, session, user};
use rand::{rngs::OsRng, RngCore};
use sea_orm::{
    sea_query::{Expr, SelectStatement},
    ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder, QueryTrait, UpdateMany,
};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Webauthn, WebauthnBuilder, WebauthnError,
};

use super::SecondFactorError;
use crate::{
    areas::unless_unique,
    audit::personal::{self, Subject},
    crypto::sha256,
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn, Unaudited},
    tenancy::Tenant,
};

pub const CEREMONY_MINUTES: i64 = 5;
const PREFIX: &str = "pkc_";
/// The most passkeys one user may register.
pub const MAX_PER_USER: usize = 20;

/// What a ceremony is for; a handle only completes its own kind.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A signed-in user registers a passkey.
    Register,
    /// A passwordless sign-in: any of the application's passkeys, the
    /// credential names its user.
    SignIn,
    /// A known user proves one of their passkeys (a sign-in's second step, a step-up).
    Verify,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Purpose::Register => "register",
            Purpose::SignIn => "sign_in",
            Purpose::Verify => "verify",
        }
    }
}

/// A ceremony just begun: the handle (shown once) and the options the
/// page passes to `navigator.credentials.create()` or `.get()` (`{publicKey}`,
/// binary fields base64url).
pub struct Ceremony {
    pub handle: String,
    pub options: Value,
}

/// The application's relying party: its `passkey_rp_id` and the allowed
/// origins on that domain (or a subdomain of it).
fn relying_party(tenant: &Tenant) -> Result<Webauthn, SecondFactorError> {
    let rp_id = tenant.passkey_rp_id.as_deref().ok_or(SecondFactorError::PasskeysOff)?;
    let suffix = format!(".{rp_id}");
    let origins: Vec<Url> = tenant
        .allowed_origins
        .iter()
        .filter_map(|o| Url::parse(o).ok())
        .filter(|url| url.domain().is_some_and(|d| d == rp_id || d.ends_with(&suffix)))
        .collect();
    let (first, rest) = origins.split_first().ok_or(SecondFactorError::NoOriginOnRpId)?;
    let mut builder = WebauthnBuilder::new(rp_id, first).map_err(|_| SecondFactorError::NoOriginOnRpId)?;
    builder = builder.rp_name(&tenant.name);
    for origin in rest {
        builder = builder.append_allowed_origin(origin);
    }
    builder.build().map_err(|_| SecondFactorError::NoOriginOnRpId)
}

/// Whether a page at `origin` can hold the application's passkey
/// ceremonies: the origin is one of its allowed origins, on its
/// `passkey_rp_id` (the hosted pages, when the service is reached under
/// the application's own domain).
pub fn ceremonies_at(tenant: &Tenant, origin: &str) -> bool {
    let Some(rp_id) = tenant.passkey_rp_id.as_deref() else { return false };
    let on_rp_id = Url::parse(origin)
        .ok()
        .and_then(|url| url.domain().map(|d| d == rp_id || d.ends_with(&format!(".{rp_id}"))))
        .unwrap_or(false);
    on_rp_id && tenant.allowed_origins.iter().any(|allowed| allowed.trim_end_matches('/') == origin)
}

/// The user's passkeys, oldest first.
pub async fn list(conn: &impl TenantConn, user_id: Uuid) -> Result<Vec<passkey::Model>, DbErr> {
    conn.find::<passkey::Entity>()
        .filter(passkey::Column::UserId.eq(user_id))
        .order_by_asc(passkey::Column::CreatedAt)
        .all(conn.conn())
        .await
}

/// The user's passkeys, as a query: a password sign-in asks whether one
/// exists (it then needs a second step).
pub fn of_user(conn: &impl TenantConn, user_id: Uuid) -> SelectStatement {
    conn.find::<passkey::Entity>().filter(passkey::Column::UserId.eq(user_id)).into_query()
}

fn credential_of(row: &passkey::Model) -> Result<Passkey, SecondFactorError> {
    serde_json::from_str(&row.credential).map_err(|_| SecondFactorError::PasskeyUnreadable)
}

/// Begins a registration for a signed-in user. The passkey is asked to be
/// discoverable (a resident key), so it can sign in without a user name.
pub async fn start_registration(scope: &TenantScope, user: &user::Model) -> Result<Ceremony, SecondFactorError> {
    let rp = relying_party(scope.tenant())?;
    let registered = list(scope, user.id).await?;
    if registered.len() >= MAX_PER_USER {
        return Err(SecondFactorError::TooManyPasskeys);
    }
    let exclude =
        registered.iter().map(credential_of).map(|c| c.map(|c| c.cred_id().clone())).collect::<Result<_, _>>()?;
    let (challenge, state) = rp
        .start_passkey_registration(user.id, &user.email, &user.email, Some(exclude))
        .map_err(SecondFactorError::ceremony)?;
    let mut options = serde_json::to_value(challenge).map_err(|_| SecondFactorError::PasskeyUnreadable)?;
    let selection = &mut options["publicKey"]["authenticatorSelection"];
    selection["residentKey"] = json!("required");
    selection["requireResidentKey"] = json!(true);
    let handle = begin(scope, Some(user.id), Purpose::Register, &state).await?;
    Ok(Ceremony { handle, options })
}

/// Completes a registration: the attestation checked against the
/// ceremony (challenge, origin, relying party, user verification), the
/// passkey stored. The ceremony is spent whatever the outcome.
pub async fn finish_registration(
    scope: &TenantScope,
    user_id: Uuid,
    handle: &str,
    credential: &RegisterPublicKeyCredential,
    name: Option<String>,
) -> Result<passkey::Model, SecondFactorError> {
    let rp = relying_party(scope.tenant())?;
    let mut txn = scope.begin().await?;
    let (owner, state): (_, PasskeyRegistration) = take(&mut txn, handle, Purpose::Register).await?;
    if owner != Some(user_id) {
        return Err(SecondFactorError::InvalidCeremony);
    }
    let registered = match rp.finish_passkey_registration(credential, &state) {
        Ok(registered) => registered,
        Err(err) => {
            txn.audit(EventType::PasskeyRegistrationFailed, Some(user_id), json!({"reason": reason(&err)})).await?;
            txn.commit().await?;
            return Err(SecondFactorError::PasskeyRefused);
        }
    };
    let now = crate::clock::now();
    let count = list(&txn, user_id).await?.len();
    let row = passkey::Model {
        id: Uuid::now_v7(),
        application_id: scope.tenant().id,
        user_id,
        credential_id: registered.cred_id().to_vec(),
        credential: serde_json::to_string(&registered).map_err(|_| SecondFactorError::PasskeyUnreadable)?,
        name: name.unwrap_or_else(|| format!("Passkey {}", count + 1)),
        created_at: now,
        last_used_at: None,
    };
    txn.insert(row.clone().into_active_model()).await.map_err(unless_unique(SecondFactorError::PasskeyTaken))?;
    let name = personal::fields([("name", json!(row.name))]);
    txn.audit_personal(
        EventType::PasskeyRegistered,
        Some(user_id),
        json!({"passkey_id": row.id}),
        Subject::User(user_id),
        name,
    )
    .await?;
    txn.commit().await?;
    Ok(row)
}

/// Begins an authentication: for a known user (`Verify`: their passkeys
/// are the allowed credentials), or a discoverable sign-in (`SignIn`: none
/// named, the page may offer any passkey of the relying party).
pub async fn start_authentication(scope: &TenantScope, user_id: Option<Uuid>) -> Result<Ceremony, SecondFactorError> {
    let rp = relying_party(scope.tenant())?;
    let (options, handle) = match user_id {
        Some(user_id) => {
            let passkeys = list(scope, user_id).await?.iter().map(credential_of).collect::<Result<Vec<_>, _>>()?;
            if passkeys.is_empty() {
                return Err(SecondFactorError::NoPasskey);
            }
            let (challenge, state) = rp.start_passkey_authentication(&passkeys).map_err(SecondFactorError::ceremony)?;
            (serde_json::to_value(challenge), begin(scope, Some(user_id), Purpose::Verify, &state).await?)
        }
        None => {
            let (mut challenge, state) = rp.start_discoverable_authentication().map_err(SecondFactorError::ceremony)?;
            // A modal prompt behind a button; a page that wants the autofill
            // (conditional) prompt asks for it in its own call.
            challenge.mediation = None;
            (serde_json::to_value(challenge), begin(scope, None, Purpose::SignIn, &state).await?)
        }
    };
    Ok(Ceremony { handle, options: options.map_err(|_| SecondFactorError::PasskeyUnreadable)? })
}

/// What an assertion proved: the user and their passkey, or why it did not.
pub enum Asserted {
    Proven { user_id: Uuid, passkey_id: Uuid },
    Refused { user_id: Option<Uuid>, reason: &'static str },
}

/// Checks an assertion against its ceremony (spending it) in `txn`: the
/// challenge, origin, relying party, user verification, signature and
/// counter; on success the passkey's counter and flags are stored. For
/// `Verify`, `user_id` is the user the ceremony was begun for.
pub async fn assert(
    txn: &mut TenantTxn,
    tenant: &Tenant,
    handle: &str,
    purpose: Purpose,
    user_id: Option<Uuid>,
    credential: &PublicKeyCredential,
) -> Result<Asserted, SecondFactorError> {
    let rp = relying_party(tenant)?;
    let (owner, state): (Option<Uuid>, Value) = take(txn, handle, purpose).await?;
    if user_id.is_some() && owner != user_id {
        return Err(SecondFactorError::InvalidCeremony);
    }
    let claimed = match purpose {
        Purpose::SignIn => match rp.identify_discoverable_authentication(credential) {
            Ok((user, _)) => Some(user),
            Err(_) => return Ok(Asserted::Refused { user_id: None, reason: "no_user_handle" }),
        },
        _ => owner,
    };
    let row = txn
        .find::<passkey::Entity>()
        .filter(passkey::Column::CredentialId.eq(credential.get_credential_id().to_vec()))
        .one(txn.conn())
        .await?
        .filter(|row| Some(row.user_id) == claimed);
    let Some(row) = row else {
        return Ok(Asserted::Refused { user_id: claimed, reason: "unknown_passkey" });
    };
    let mut stored = credential_of(&row)?;
    let checked = match purpose {
        Purpose::SignIn => {
            let state: DiscoverableAuthentication = state_of(state)?;
            rp.finish_discoverable_authentication_v2(credential, state, &stored)
        }
        _ => {
            let state: PasskeyAuthentication = state_of(state)?;
            rp.finish_passkey_authentication(credential, &state)
        }
    };
    let result = match checked {
        Ok(result) => result,
        Err(err) => return Ok(Asserted::Refused { user_id: Some(row.user_id), reason: reason(&err) }),
    };
    stored.update_credential(&result);
    let serialized = serde_json::to_string(&stored).map_err(|_| SecondFactorError::PasskeyUnreadable)?;
    txn.update_many(|q: UpdateMany<passkey::Entity>| {
        q.col_expr(passkey::Column::Credential, Expr::value(serialized))
            .col_expr(passkey::Column::LastUsedAt, Expr::value(crate::clock::now()))
            .filter(passkey::Column::Id.eq(row.id))
    })
    .await?;
    Ok(Asserted::Proven { user_id: row.user_id, passkey_id: row.id })
}

/// Removes one of the user's passkeys; only from a session that proved a
/// second factor in the last minutes.
pub async fn remove(scope: &TenantScope, session: &session::Model, passkey_id: Uuid) -> Result<(), SecondFactorError> {
    super::require_fresh_aal2(session)?;
    let mut txn = scope.begin().await?;
    let user_id = session.user_id;
    let removed = txn
        .delete::<passkey::Entity>(passkey::Column::Id.eq(passkey_id).and(passkey::Column::UserId.eq(user_id)))
        .await?;
    if removed == 0 {
        return Err(SecondFactorError::PasskeyNotFound);
    }
    txn.audit(EventType::PasskeyRemoved, Some(user_id), json!({"passkey_id": passkey_id})).await?;
    txn.commit().await?;
    Ok(())
}

/// Why `webauthn-rs` refused, for the audit row (never the challenge).
fn reason(err: &WebauthnError) -> &'static str {
    match err {
        WebauthnError::MismatchedChallenge => "challenge_mismatch",
        WebauthnError::InvalidRPOrigin => "origin_not_allowed",
        WebauthnError::InvalidRPIDHash => "rp_id_mismatch",
        WebauthnError::UserNotVerified => "user_not_verified",
        WebauthnError::CredentialPossibleCompromise => "counter_not_increased",
        WebauthnError::CredentialAlteredAlgFromRequest => "algorithm_not_allowed",
        _ => "invalid_credential",
    }
}

/// Stores a ceremony's state; answers its handle. Expired ceremonies of
/// the application go in the same transaction.
async fn begin(
    scope: &TenantScope,
    user_id: Option<Uuid>,
    purpose: Purpose,
    state: &impl Serialize,
) -> Result<String, SecondFactorError> {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let handle = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let now = crate::clock::now();
    let row = passkey_ceremony::Model {
        id: Uuid::now_v7(),
        application_id: scope.tenant().id,
        user_id,
        purpose: purpose.as_str().into(),
        token_hash: sha256(&handle).to_vec(),
        state: serde_json::to_string(state).map_err(|_| SecondFactorError::PasskeyUnreadable)?,
        expires_at: now + Duration::minutes(CEREMONY_MINUTES),
        used_at: None,
        created_at: now,
    };
    let mut txn = scope.begin().await?;
    txn.delete::<passkey_ceremony::Entity>(passkey_ceremony::Column::ExpiresAt.lt(now)).await?;
    txn.insert(row.into_active_model()).await?;
    // Its outcome is audited: `passkey.registered`, `sign_in.succeeded`, a failure.
    txn.unaudited(Unaudited::PasskeyCeremony);
    txn.commit().await?;
    Ok(handle)
}

/// Spends a live ceremony of this purpose: its user and state.
async fn take<S: DeserializeOwned>(
    txn: &mut TenantTxn,
    handle: &str,
    purpose: Purpose,
) -> Result<(Option<Uuid>, S), SecondFactorError> {
    let now = crate::clock::now();
    let taken = txn
        .update_many_returning(|q: UpdateMany<passkey_ceremony::Entity>| {
            q.col_expr(passkey_ceremony::Column::UsedAt, Expr::value(now))
                .filter(passkey_ceremony::Column::TokenHash.eq(sha256(handle).to_vec()))
                .filter(passkey_ceremony::Column::Purpose.eq(purpose.as_str()))
                .filter(passkey_ceremony::Column::UsedAt.is_null())
                .filter(passkey_ceremony::Column::ExpiresAt.gt(now))
        })
        .await?;
    let row = taken.into_iter().next().ok_or(SecondFactorError::InvalidCeremony)?;
    let state = serde_json::from_str(&row.state).map_err(|_| SecondFactorError::PasskeyUnreadable)?;
    Ok((row.user_id, state))
}

fn state_of<S: DeserializeOwned>(state: Value) -> Result<S, SecondFactorError> {
    serde_json::from_value(state).map_err(|_| SecondFactorError::PasskeyUnreadable)
}
