//! The authorization endpoint's rules (RFC 6749 section 4.1, OIDC Core
//! section 3.1.2, RFC 7636, RFC 9700): which requests are taken, which
//! errors go back to the client and which are shown (an unknown client or
//! redirect URI is never redirected to), the hosted pages' sign-in cookie,
//! and the one-time codes.
use std::collections::BTreeMap;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chrono::Duration;
use entity::{hosted_login, membership, oauth_client, oauth_code, organization, session};
use rand::{rngs::OsRng, RngCore};
use sea_orm::{ColumnTrait, DbErr, QueryFilter};
use uuid::Uuid;

use crate::{
    areas::{memberships, oauth_clients, sessions},
    clock,
    crypto::sha256,
    storage::{TenantConn, TenantScope, TenantTxn, Unaudited},
};

/// A code lives this long (RFC 9700 recommends short; we take 60 s).
pub const CODE_TTL_SECONDS: i64 = 60;
/// How long an expired code's row is kept.
const KEEP_EXPIRED: Duration = Duration::minutes(10);
/// The parameters a request may carry (others are ignored, RFC 6749 3.1).
pub const PARAMETERS: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "prompt",
    "max_age",
    "login_hint",
    "acr_values",
    "organization",
];
/// Longest value of any parameter.
const MAX_VALUE: usize = 2000;

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Shown to the user, never redirected: the client or the redirect URI
    /// cannot be trusted (RFC 6749 section 4.1.2.1).
    Shown(&'static str),
    /// Sent back to the client's redirect URI.
    Redirected(Redirect),
}

/// An OAuth error for the client, at its redirect URI.
#[derive(Debug, PartialEq, Eq)]
pub struct Redirect {
    pub redirect_uri: String,
    pub state: Option<String>,
    pub error: &'static str,
    pub description: &'static str,
}

/// What `prompt` asks for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    pub none: bool,
    pub login: bool,
    /// The sign-up form first (Initiating User Registration via OpenID
    /// Connect 1.0).
    pub create: bool,
    /// Ask a third party's client's consent even when it was given before.
    pub consent: bool,
}

/// A request the client may make, checked against its registration.
#[derive(Debug, Clone)]
pub struct Checked {
    pub client: oauth_client::Model,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub code_challenge: Option<String>,
    pub prompt: Prompt,
    pub max_age: Option<i64>,
    pub login_hint: Option<String>,
    /// `acr_values` names `aal2`: the sign-in must prove a second factor
    /// when the user has one.
    pub wants_aal2: bool,
    /// The organization the request names (or the user chose on the
    /// hosted page), for the `organization` scope.
    pub organization: Option<Uuid>,
    /// The parameters as given, for the sign-in form to carry.
    pub parameters: BTreeMap<String, String>,
}

impl Checked {
    /// An error for the client at its redirect URI.
    pub fn error(&self, error: &'static str, description: &'static str) -> Redirect {
        Redirect { redirect_uri: self.redirect_uri.clone(), state: self.state.clone(), error, description }
    }
}

/// Checks an authorization request (its parameters from the query or the
/// sign-in form) against the client it names.
pub async fn check(db: &impl TenantConn, given: &BTreeMap<String, String>) -> Result<Result<Checked, Refused>, DbErr> {
    let get = |name: &str| given.get(name).filter(|v| !v.is_empty()).cloned();
    if given.values().any(|v| v.len() > MAX_VALUE) {
        return Ok(Err(Refused::Shown("A parameter of the request is too long.")));
    }
    let client = match get("client_id").and_then(|id| Uuid::parse_str(&id).ok()) {
        Some(id) => db.find_by_id::<oauth_client::Entity>(id).one(db.conn()).await?,
        None => None,
    };
    let Some(client) = client else {
        return Ok(Err(Refused::Shown("The application that sent you here is not registered.")));
    };
    let settings = oauth_clients::settings_of(&client);
    let Some(redirect_uri) = get("redirect_uri").filter(|uri| settings.redirect_uris.contains(uri)) else {
        return Ok(Err(Refused::Shown("The application that sent you here gave an address it has not registered.")));
    };
    let state = get("state");
    let refuse = |error, description| {
        Ok(Err(Refused::Redirected(Redirect {
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
            error,
            description,
        })))
    };
    if get("response_type").as_deref() != Some("code") {
        return refuse("unsupported_response_type", "only `code` is supported");
    }
    if !settings.grant_types.iter().any(|g| g == "authorization_code") {
        return refuse("unauthorized_client", "the client may not use the authorization code grant");
    }
    // Request objects (OIDC Core section 6) are not taken: said, not ignored.
    if given.contains_key("request") {
        return refuse("request_not_supported", "request objects are not supported");
    }
    if given.contains_key("request_uri") {
        return refuse("request_uri_not_supported", "request objects are not supported");
    }
    let Some(scope) = get("scope") else { return refuse("invalid_scope", "`scope` is required") };
    // A scope the client did not register is left out, not refused: OIDC
    // Core section 3.1.2.1 says scopes not understood are ignored, and RFC
    // 6749 section 3.3 lets the grant be narrower (the token answer names it).
    let mut scopes: Vec<String> = Vec::new();
    for wanted in scope.split_whitespace() {
        if settings.scopes.iter().any(|s| s == wanted) && !scopes.iter().any(|s| s == wanted) {
            scopes.push(wanted.to_string());
        }
    }
    let code_challenge = get("code_challenge");
    match (&code_challenge, get("code_challenge_method").as_deref()) {
        (Some(challenge), Some("S256")) if is_s256_challenge(challenge) => {}
        (Some(_), Some("S256")) => return refuse("invalid_request", "`code_challenge` is not an S256 challenge"),
        (Some(_), _) => return refuse("invalid_request", "`code_challenge_method` must be S256"),
        (None, Some(_)) => return refuse("invalid_request", "`code_challenge_method` without `code_challenge`"),
        (None, None) if oauth_clients::client_type(&client) == oauth_clients::ClientType::Public => {
            return refuse("invalid_request", "a public client must use PKCE (S256)")
        }
        (None, None) => {}
    }
    let mut prompt = Prompt::default();
    for value in get("prompt").unwrap_or_default().split_whitespace() {
        match value {
            "none" => prompt.none = true,
            "login" | "select_account" => prompt.login = true,
            "create" => prompt.create = true,
            "consent" => prompt.consent = true,
            _ => return refuse("invalid_request", "`prompt` has a value not in OIDC Core"),
        }
    }
    if prompt.none && (prompt.login || prompt.create || prompt.consent) {
        return refuse("invalid_request", "`prompt=none` with another value");
    }
    let max_age = match get("max_age").map(|v| v.parse::<i64>()) {
        None => None,
        Some(Ok(age)) if age >= 0 => Some(age),
        Some(_) => return refuse("invalid_request", "`max_age` must be a number of seconds"),
    };
    let organization = match get("organization").map(|id| Uuid::parse_str(&id)) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => return refuse("invalid_request", "`organization` is not an organization's id"),
    };
    let parameters =
        given.iter().filter(|(k, _)| PARAMETERS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    Ok(Ok(Checked {
        client,
        redirect_uri,
        scopes,
        state,
        nonce: get("nonce"),
        code_challenge,
        prompt,
        max_age,
        login_hint: get("login_hint"),
        wants_aal2: get("acr_values").is_some_and(|v| v.split_whitespace().any(|acr| acr == "aal2")),
        organization,
        parameters,
    }))
}

/// 43 base64url characters: the S256 of a verifier (RFC 7636 section 4.2).
fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether a PKCE verifier matches its S256 challenge (RFC 7636 section 4.6).
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let shaped = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    shaped && crate::crypto::constant_time_eq(URL_SAFE_NO_PAD.encode(sha256(verifier)).as_bytes(), challenge.as_bytes())
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A sign-in on the hosted pages: its session, and how the user signed in
/// (RFC 8176 `amr` values, space-separated).
#[derive(Debug, Clone)]
pub struct Login {
    pub session: session::Model,
    pub amr: String,
}

/// The `amr` of a sign-in: its first factor (`password`; `oauth`, an
/// identity provider, `fed` as Microsoft Entra says it, since RFC 8176
/// has no value for it; `sso`, an organization's SSO connection, `sso`
/// as its tokens from the API say it; `passkey`) and the second step's factor if any
/// (`totp` or `recovery_code`: `otp`; `passkey`). A passkey (`pop`: a key
/// the user holds) is unlocked by a fingerprint, face or PIN: with any
/// second step it makes `mfa`.
pub fn amr_of(first: &str, second: Option<&str>) -> String {
    let mut methods = vec![match first {
        "password" => "pwd",
        "oauth" => "fed",
        "sso" => "sso",
        _ => "pop",
    }];
    match second {
        Some("passkey") => methods.push("pop"),
        Some(_) => methods.push("otp"),
        None => {}
    }
    if second.is_some() || first == "passkey" {
        methods.push("mfa");
    }
    methods.join(" ")
}

/// The `amr` of a sign-in recorded before the method was: read off its
/// assurance level.
pub fn amr_of_level(aal: &str) -> String {
    if aal == "aal2" { "pwd mfa" } else { "pwd" }.to_string()
}

/// The sign-in the hosted pages' cookie stands for, while its session is
/// active and no older than `max_age`.
pub async fn signed_in(db: &impl TenantConn, cookie: &str, max_age: Option<i64>) -> Result<Option<Login>, DbErr> {
    let login = db
        .find::<hosted_login::Entity>()
        .filter(hosted_login::Column::CookieHash.eq(sha256(cookie).to_vec()))
        .one(db.conn())
        .await?;
    let Some(login) = login else { return Ok(None) };
    let session = sessions::find_active(db, login.session_id).await?;
    let fresh = |s: &session::Model| max_age.is_none_or(|age| clock::now() - s.created_at <= Duration::seconds(age));
    Ok(session.filter(fresh).map(|session| {
        let amr = login.amr.unwrap_or_else(|| amr_of_level(&session.aal));
        Login { session, amr }
    }))
}

/// Remembers a sign-in on the hosted pages: answers the cookie's value.
/// The application's cookies older than a session lives (`ttl`) stand for
/// nothing any more and go in the same transaction.
pub async fn remember(txn: &mut TenantTxn, login: &Login, ttl: Duration) -> Result<String, DbErr> {
    txn.delete::<hosted_login::Entity>(hosted_login::Column::CreatedAt.lt(clock::now() - ttl)).await?;
    let cookie = random_token();
    let row = hosted_login::Model {
        cookie_hash: sha256(&cookie).to_vec(),
        application_id: txn.application_id(),
        session_id: login.session.id,
        created_at: clock::now(),
        amr: Some(login.amr.clone()),
    };
    txn.insert(hosted_login::ActiveModel::from(row)).await?;
    Ok(cookie)
}

/// Ends the sign-in the hosted pages' cookie stands for: its session is
/// revoked (`session.revoked`, reason `sign_out`) and the cookie forgotten.
/// Answers whether there was one.
pub async fn sign_out(scope: &TenantScope, cookie: &str) -> Result<bool, DbErr> {
    let hash = sha256(cookie).to_vec();
    let mut txn = scope.begin().await?;
    let login = txn
        .find::<hosted_login::Entity>()
        .filter(hosted_login::Column::CookieHash.eq(hash.clone()))
        .one(txn.conn())
        .await?;
    let Some(login) = login else { return Ok(false) };
    txn.delete::<hosted_login::Entity>(hosted_login::Column::CookieHash.eq(hash)).await?;
    if sessions::revoke_in(&mut txn, login.session_id, "sign_out").await?.is_none() {
        txn.unaudited(Unaudited::AuthorizationStep);
    }
    txn.commit().await?;
    Ok(true)
}

/// Which organization a code carries, for a client granted the
/// `organization` scope.
pub enum OrganizationChoice {
    /// The one the request names, or the user's only one; none when the
    /// scope is not granted or the user is in no organization.
    Settled(Option<Uuid>),
    /// The user is in several and chooses.
    Ask(Vec<(membership::Model, organization::Model)>),
    /// The request names an organization the user is not a member of.
    NotAMember,
}

/// The organization for the signed-in user's code.
pub async fn organization_for(
    db: &impl TenantConn,
    checked: &Checked,
    user_id: Uuid,
) -> Result<OrganizationChoice, DbErr> {
    if !checked.scopes.iter().any(|s| s == "organization") {
        return Ok(OrganizationChoice::Settled(None));
    }
    if let Some(id) = checked.organization {
        let member = memberships::find(db, id, user_id).await?.is_some();
        return Ok(if member { OrganizationChoice::Settled(Some(id)) } else { OrganizationChoice::NotAMember });
    }
    let mut of_user = memberships::of_user(db, user_id).await?;
    Ok(match of_user.len() {
        0 => OrganizationChoice::Settled(None),
        1 => OrganizationChoice::Settled(Some(of_user.remove(0).0.organization_id)),
        _ => OrganizationChoice::Ask(of_user),
    })
}

/// Issues a code for the signed-in session, with the organization chosen
/// for it; answers the code.
pub async fn issue_code(
    scope: &TenantScope,
    checked: &Checked,
    login: &Login,
    organization_id: Option<Uuid>,
) -> Result<String, DbErr> {
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::AuthorizationStep);
    let code = issue_code_in(&mut txn, checked, login, organization_id).await?;
    txn.commit().await?;
    Ok(code)
}

/// [`issue_code`] in the caller's transaction. The application's codes
/// expired more than [`KEEP_EXPIRED`] ago go in the same transaction (a
/// used code is kept that long, so a replay still revokes what it issued).
pub async fn issue_code_in(
    txn: &mut TenantTxn,
    checked: &Checked,
    login: &Login,
    organization_id: Option<Uuid>,
) -> Result<String, DbErr> {
    let code = random_token();
    let now = clock::now();
    txn.delete::<oauth_code::Entity>(oauth_code::Column::ExpiresAt.lt(now - KEEP_EXPIRED)).await?;
    let row = oauth_code::Model {
        code_hash: sha256(&code).to_vec(),
        application_id: txn.application_id(),
        client_id: checked.client.id,
        login_session_id: login.session.id,
        user_id: login.session.user_id,
        redirect_uri: checked.redirect_uri.clone(),
        scope: checked.scopes.join(" "),
        nonce: checked.nonce.clone(),
        code_challenge: checked.code_challenge.clone(),
        created_at: now,
        expires_at: now + Duration::seconds(CODE_TTL_SECONDS),
        used_at: None,
        issued_session_id: None,
        organization_id,
        amr: Some(login.amr.clone()),
    };
    txn.insert(oauth_code::ActiveModel::from(row)).await?;
    Ok(code)
}

/// The row of a code, used or not.
pub async fn find_code(db: &impl TenantConn, code: &str) -> Result<Option<oauth_code::Model>, DbErr> {
    let hash = sha256(code).to_vec();
    db.find::<oauth_code::Entity>().filter(oauth_code::Column::CodeHash.eq(hash)).one(db.conn()).await
}

/// Marks a code used by the session `session_id` (about to be opened), in
/// the exchange's transaction, in one statement: the row as it is now, or
/// `Err(row)` when it was used before (a replay), or `None` when no such
/// code exists for the application. A refused exchange drops the
/// transaction, and the code stays unused.
pub async fn take_code(
    txn: &mut TenantTxn,
    code: &str,
    session_id: Uuid,
) -> Result<Option<Result<oauth_code::Model, oauth_code::Model>>, DbErr> {
    let hash = sha256(code).to_vec();
    let taken = txn
        .update_many_returning(|q: sea_orm::UpdateMany<oauth_code::Entity>| {
            q.col_expr(oauth_code::Column::UsedAt, sea_orm::sea_query::Expr::value(clock::now()))
                .col_expr(oauth_code::Column::IssuedSessionId, sea_orm::sea_query::Expr::value(session_id))
                .filter(oauth_code::Column::CodeHash.eq(hash.clone()))
                .filter(oauth_code::Column::UsedAt.is_null())
        })
        .await?;
    if let Some(row) = taken.into_iter().next() {
        return Ok(Some(Ok(row)));
    }
    let used = txn.find::<oauth_code::Entity>().filter(oauth_code::Column::CodeHash.eq(hash)).one(txn.conn()).await?;
    Ok(used.map(Err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amr_names_each_way_a_user_signed_in() {
        assert_eq!(amr_of("password", None), "pwd");
        assert_eq!(amr_of("password", Some("totp")), "pwd otp mfa");
        assert_eq!(amr_of("password", Some("recovery_code")), "pwd otp mfa");
        assert_eq!(amr_of("oauth", None), "fed");
        assert_eq!(amr_of("oauth", Some("passkey")), "fed pop mfa");
        assert_eq!(amr_of("sso", None), "sso");
        assert_eq!(amr_of("passkey", None), "pop mfa");
        assert_eq!((amr_of_level("aal1"), amr_of_level("aal2")), ("pwd".into(), "pwd mfa".into()));
    }
}
