//! The application as an OpenID Provider, for the tokens it issues: the
//! userinfo endpoint (OIDC Core section 5.3), token introspection (RFC
//! 7662) and token revocation (RFC 7009), under the application's issuer.
//!
//! Every token of the application is bound to a session: an access token
//! names it (`sid`), and a refresh token is its current one. A token is
//! active while it verifies and its session is, so revoking either kind
//! ends the session, and with it every token it issued (RFC 7009 section
//! 2.1 lets a revocation reach the whole grant). A verifier that checks
//! access tokens locally still takes one until its `exp` (at most the
//! access-token lifetime); introspection and userinfo refuse it at once.
pub mod authorize;
pub mod exchange;
pub mod http;

use chrono::{DateTime, Utc};
use entity::{oauth_client, session, user};
use sea_orm::DbErr;
use serde_json::{json, Map, Value};

use super::{oauth_clients, sessions};
use crate::{
    audit::Actor,
    storage::{TenantConn, TenantScope},
    tokens::jwt::Claims,
};

/// The standard claims (OIDC Core section 5.1) of the `profile` scope that
/// a user's profile can hold, under the same key.
const PROFILE_CLAIMS: &[&str] = &[
    "name",
    "given_name",
    "family_name",
    "middle_name",
    "nickname",
    "preferred_username",
    "picture",
    "website",
    "gender",
    "birthdate",
    "zoneinfo",
    "locale",
];

/// The scopes the application's own tokens grant. The API's sign-in
/// issues them to the application itself, with no `scope`: every claim.
const FIRST_PARTY_SCOPES: &[&str] = &["openid", "profile", "email", "organization"];

/// The userinfo answer: `sub` and the claims of the granted scopes.
pub fn userinfo(claims: &Claims, user: &user::Model) -> Value {
    // A client's token says what it was granted; the application's own, everything.
    let scopes: Vec<&str> = match &claims.scope {
        Some(granted) => granted.split(' ').collect(),
        None => FIRST_PARTY_SCOPES.to_vec(),
    };
    let mut answer = Map::new();
    answer.insert("sub".into(), json!(claims.sub));
    if scopes.contains(&"email") {
        answer.insert("email".into(), json!(user.email));
        answer.insert("email_verified".into(), json!(user.email_verified_at.is_some()));
    }
    if scopes.contains(&"profile") {
        let profile = user.profile.as_object();
        for claim in PROFILE_CLAIMS {
            if let Some(value) = profile.and_then(|p| p.get(*claim)).filter(|v| !v.is_null()) {
                answer.insert((*claim).into(), value.clone());
            }
        }
        answer.insert("updated_at".into(), json!(user.updated_at.timestamp()));
    }
    if scopes.contains(&"organization") {
        if let (Some(org), Some(role)) = (claims.org, &claims.org_role) {
            answer.insert("org".into(), json!(org));
            answer.insert("org_role".into(), json!(role));
        }
    }
    Value::Object(answer)
}

/// What a presented token is, while it is active.
pub enum Active {
    Access(Box<Claims>, session::Model),
    Refresh { issued_at: DateTime<Utc>, session: session::Model },
}

impl Active {
    pub fn session(&self) -> &session::Model {
        match self {
            Active::Access(_, session) | Active::Refresh { session, .. } => session,
        }
    }
}

/// The introspection answer (RFC 7662 section 2.2) for an active token:
/// with `client_id` and `scope` for a session issued to an OAuth client.
pub fn introspection(active: &Active, issuer: &str) -> Value {
    let mut answer = claims_of(active, issuer);
    let session = active.session();
    if let (Some(client_id), Some(scope)) = (session.oauth_client_id, &session.oauth_scope) {
        answer["client_id"] = json!(client_id);
        answer["scope"] = json!(scope);
    }
    answer
}

fn claims_of(active: &Active, issuer: &str) -> Value {
    match active {
        Active::Access(claims, _) => {
            let mut answer = json!({
                "active": true,
                "token_type": "Bearer",
                "iss": claims.iss,
                "aud": claims.aud,
                "sub": claims.sub,
                "sid": claims.sid,
                "aal": claims.aal,
                "iat": claims.iat,
                "nbf": claims.nbf,
                "exp": claims.exp,
                "jti": claims.jti,
            });
            if let (Some(org), Some(role)) = (claims.org, &claims.org_role) {
                answer["org"] = json!(org);
                answer["org_role"] = json!(role);
            }
            answer
        }
        Active::Refresh { issued_at, session } => json!({
            "active": true,
            "token_type": "refresh_token",
            "iss": issuer,
            "aud": session.application_id,
            "sub": session.user_id,
            "sid": session.id,
            "iat": issued_at.timestamp(),
            "exp": session.expires_at.timestamp(),
        }),
    }
}

/// Why a client may not do what it asked.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientRefused {
    /// Unknown, or its credentials do not prove it.
    InvalidClient,
    /// Proven, but not allowed this (RFC 6749 section 5.2).
    Unauthorized(&'static str),
}

/// The client that `presented` proves.
pub async fn authenticate(
    db: &impl TenantConn,
    presented: Option<oauth_clients::Presented<'_>>,
) -> Result<Result<oauth_client::Model, ClientRefused>, DbErr> {
    let Some(presented) = presented else { return Ok(Err(ClientRefused::InvalidClient)) };
    Ok(oauth_clients::authenticate(db, presented).await?.ok_or(ClientRefused::InvalidClient))
}

/// Introspection is for the application's resource servers, which hold a
/// secret: a public client cannot introspect (RFC 7662 section 2.1).
pub fn may_introspect(client: &oauth_client::Model) -> Result<(), ClientRefused> {
    match oauth_clients::client_type(client) {
        oauth_clients::ClientType::Confidential => Ok(()),
        oauth_clients::ClientType::Public => Err(ClientRefused::Unauthorized("a public client cannot introspect")),
    }
}

/// Revokes an active token's session for `client`. A client revokes the
/// tokens issued to it (RFC 7009 section 2.1): its sessions' tokens; the
/// tokens of the API's own sign-in are the application's first-party
/// tokens, which its first-party clients may revoke. Answers whether the session was ended now.
pub async fn revoke(
    scope: &TenantScope,
    client: &oauth_client::Model,
    active: &Active,
) -> Result<Result<bool, ClientRefused>, DbErr> {
    let issued_to_it = match active.session().oauth_client_id {
        Some(owner) => owner == client.id,
        None => client.first_party,
    };
    if !issued_to_it {
        return Ok(Err(ClientRefused::Unauthorized("the token was not issued to this client")));
    }
    let scope = scope.acting_as(Actor::oauth_client(client.id));
    let mut txn = scope.begin().await?;
    let ended = sessions::revoke_in(&mut txn, active.session().id, "token_revocation").await?.is_some();
    if ended {
        txn.commit().await?;
    }
    Ok(Ok(ended))
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn claims(scope: Option<&str>) -> Claims {
        Claims {
            iss: "i".into(),
            aud: "a".into(),
            sub: Uuid::now_v7(),
            sid: Uuid::now_v7(),
            aal: "aal1".into(),
            org: None,
            org_role: None,
            ent: None,
            email_verified: true,
            client_id: scope.map(|_| Uuid::now_v7()),
            scope: scope.map(str::to_string),
            amr: None,
            iat: 0,
            nbf: 0,
            exp: 0,
            jti: Uuid::now_v7(),
        }
    }

    #[test]
    fn userinfo_answers_only_the_claims_of_the_scopes_the_client_was_granted() {
        let now = crate::clock::now();
        let user = user::Model {
            id: Uuid::now_v7(),
            application_id: Uuid::now_v7(),
            email: "ada@example.com".into(),
            password_hash: None,
            profile: json!({"name": "Ada"}),
            last_sign_in_at: None,
            email_verified_at: None,
            created_at: now,
            updated_at: now,
            external_id: None,
        };
        let keys = |answer: Value| answer.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(userinfo(&claims(Some("openid")), &user)), ["sub"]);
        assert_eq!(keys(userinfo(&claims(Some("openid email")), &user)), ["email", "email_verified", "sub"]);
        let own = keys(userinfo(&claims(None), &user));
        assert_eq!(own, ["email", "email_verified", "name", "sub", "updated_at"], "the application's own token");
    }
}
