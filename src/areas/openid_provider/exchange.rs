//! The token endpoint's grants for OAuth clients: `authorization_code`
//! (RFC 6749 section 4.1.3, PKCE per RFC 7636) and `refresh_token`.
//!
//! A code is used once: its exchange marks it used and opens a session for
//! the client in one transaction. A code presented again revokes the
//! session its first exchange opened (RFC 6749 section 4.1.2: it was
//! stolen or replayed).
use chrono::Duration;
use entity::{oauth_client, user};
use sea_orm::DbErr;

use super::authorize::{amr_of_level, find_code, take_code, verifier_matches};
use crate::{
    areas::{
        oauth_clients,
        sessions::{self, ClientGrant, Opened},
    },
    audit::Actor,
    clock,
    storage::TenantScope,
};

/// An RFC 6749 section 5.2 refusal of a grant.
#[derive(Debug, PartialEq, Eq)]
pub enum GrantRefused {
    InvalidGrant(&'static str),
    UnauthorizedClient(&'static str),
}

/// A code exchanged: the client's new session and what the code carried.
pub struct Exchanged {
    pub opened: Opened,
    /// The user, as the exchange read them (the ID token's claims).
    pub user: user::Model,
    pub scopes: Vec<String>,
    pub nonce: Option<String>,
    /// When the user signed in on the hosted pages (seconds).
    pub auth_time: i64,
    /// How they signed in (RFC 8176).
    pub amr: Vec<String>,
}

impl Exchanged {
    pub fn granted(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Whether the client registered `grant`.
pub fn allows(client: &oauth_client::Model, grant: &str) -> bool {
    oauth_clients::settings_of(client).grant_types.iter().any(|g| g == grant)
}

/// Exchanges a code for a session of the client.
pub async fn exchange_code(
    scope: &TenantScope,
    client: &oauth_client::Model,
    code: &str,
    redirect_uri: Option<&str>,
    verifier: Option<&str>,
    ttl: Duration,
) -> Result<Result<Exchanged, GrantRefused>, DbErr> {
    if !allows(client, "authorization_code") {
        return Ok(Err(GrantRefused::UnauthorizedClient("the client may not use the authorization code grant")));
    }
    let scope = scope.acting_as(Actor::oauth_client(client.id));
    let mut txn = scope.begin().await?;
    let session_id = uuid::Uuid::now_v7();
    let row = match take_code(&mut txn, code, session_id).await? {
        None => return Ok(Err(GrantRefused::InvalidGrant("the code is unknown"))),
        Some(Err(_)) => {
            drop(txn);
            // Used before: whoever holds it now is not the client it was
            // issued to, or is replaying it. End what it issued (read again:
            // a concurrent first exchange has committed it by now).
            let used = find_code(&scope, code).await?;
            if let Some((Some(session_id), true)) = used.map(|u| (u.issued_session_id, u.client_id == client.id)) {
                let mut txn = scope.begin().await?;
                if sessions::revoke_in(&mut txn, session_id, "authorization_code_reuse").await?.is_some() {
                    txn.commit().await?;
                }
            }
            return Ok(Err(GrantRefused::InvalidGrant("the code was used already")));
        }
        Some(Ok(row)) => row,
    };
    // Every refusal below drops the transaction: the code is not spent.
    if row.client_id != client.id {
        return Ok(Err(GrantRefused::InvalidGrant("the code was issued to another client")));
    }
    if row.expires_at <= clock::now() {
        return Ok(Err(GrantRefused::InvalidGrant("the code has expired")));
    }
    if redirect_uri != Some(row.redirect_uri.as_str()) {
        return Ok(Err(GrantRefused::InvalidGrant("`redirect_uri` is not the one the code was issued for")));
    }
    match (&row.code_challenge, verifier) {
        (Some(challenge), Some(verifier)) if verifier_matches(verifier, challenge) => {}
        (Some(_), _) => return Ok(Err(GrantRefused::InvalidGrant("the PKCE verifier does not match"))),
        (None, Some(_)) => return Ok(Err(GrantRefused::InvalidGrant("the code was issued without PKCE"))),
        (None, None) => {}
    }
    let Some((login, user)) = sessions::find_active_with_user(&txn, row.login_session_id).await? else {
        return Ok(Err(GrantRefused::InvalidGrant("the sign-in the code was issued for has ended")));
    };
    let grant =
        ClientGrant { session_id, client_id: client.id, scope: &row.scope, organization_id: row.organization_id };
    let opened = sessions::open_for_client(&mut txn, row.user_id, login.email_verified, &login.aal, ttl, grant).await?;
    txn.commit().await?;
    Ok(Ok(Exchanged {
        opened,
        user,
        scopes: row.scope.split_whitespace().map(str::to_owned).collect(),
        nonce: row.nonce,
        auth_time: login.created_at.timestamp(),
        amr: row.amr.unwrap_or_else(|| amr_of_level(&login.aal)).split(' ').map(str::to_owned).collect(),
    }))
}
