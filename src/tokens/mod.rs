//! End-user access tokens: EdDSA JWTs ([`jwt`]) signed with per-application
//! keys ([`keys`], held in each tenant's state), and the issuer each
//! application's tokens carry.
pub mod algorithms;
pub mod jwt;
pub mod keys;

use entity::session;
use uuid::Uuid;

use crate::error::ApiError;

/// `iss` of an application's tokens: `{public_url}/v1/applications/{id}`.
pub fn issuer(public_url: &str, application_id: Uuid) -> String {
    format!("{}/v1/applications/{application_id}", public_url.trim_end_matches('/'))
}

/// An application without a current signing key: its first key is made
/// before any token is signed, so this is a defect.
#[derive(Debug, thiserror::Error)]
#[error("the application has no signing key")]
pub struct NoSigningKey;

impl From<NoSigningKey> for ApiError {
    fn from(err: NoSigningKey) -> Self {
        ApiError::internal_error(&err)
    }
}

/// Issues and verifies one node's access tokens.
#[derive(Clone)]
pub struct AccessTokens {
    public_url: String,
    ttl_seconds: i64,
    /// `Cache-Control` of the JWKS and discovery documents.
    documents_cache_control: String,
}

/// What a token says of its session's active organization.
pub struct OrganizationClaims {
    pub id: Uuid,
    /// The user's role there (`org_role`).
    pub role: String,
    /// `ent`: none unless the application names features to carry.
    pub entitlements: Option<serde_json::Map<String, serde_json::Value>>,
}

/// One application's current signing key with the claims it vouches for.
pub struct Signer {
    kid: Uuid,
    key: ed25519_compact::SecretKey,
    issuer: String,
    ttl_seconds: i64,
}

impl Signer {
    /// A token for a session; `organization` is the active one, the
    /// user's role in it and the entitlements its tokens carry. An OAuth
    /// client's session gets RFC 9068's token: `at+jwt`, its `client_id`
    /// and the granted `scope`.
    pub fn issue(&self, session: &session::Model, organization: Option<OrganizationClaims>) -> Issued {
        let now = crate::clock::now().timestamp();
        let (org, org_role, ent) = match organization {
            Some(o) => (Some(o.id), Some(o.role), o.entitlements),
            None => (None, None, None),
        };
        let claims = jwt::Claims {
            iss: self.issuer.clone(),
            aud: session.application_id.to_string(),
            sub: session.user_id,
            sid: session.id,
            aal: session.aal.clone(),
            org,
            org_role,
            ent,
            email_verified: session.email_verified,
            client_id: session.oauth_client_id,
            scope: session.oauth_scope.clone(),
            amr: session.amr.as_ref().map(|amr| amr.split(' ').map(str::to_string).collect()),
            iat: now,
            nbf: now,
            exp: now + self.ttl_seconds,
            jti: Uuid::now_v7(),
        };
        Issued { token: jwt::sign(&claims, self.kid, &self.key), expires_in: self.ttl_seconds }
    }

    /// A machine token for a service account of `application_id`, carrying
    /// `scopes`.
    pub fn issue_machine(&self, application_id: Uuid, account_id: Uuid, scopes: &[String]) -> Issued {
        let now = crate::clock::now().timestamp();
        let claims = jwt::MachineClaims {
            iss: self.issuer.clone(),
            aud: application_id.to_string(),
            sub: account_id,
            client_id: account_id,
            scope: scopes.join(" "),
            iat: now,
            nbf: now,
            exp: now + self.ttl_seconds,
            jti: Uuid::now_v7(),
        };
        Issued { token: jwt::sign_typed(&claims, jwt::MACHINE_TYPE, self.kid, &self.key), expires_in: self.ttl_seconds }
    }
}

/// What signs a client's ID tokens: the application's current key of the
/// algorithm the client asked for.
pub struct IdTokenSigner {
    kid: Uuid,
    key: algorithms::PrivateKey,
    algorithm: algorithms::Algorithm,
}

impl IdTokenSigner {
    pub fn new(keys: &keys::KeySet, algorithm: algorithms::Algorithm) -> Result<Self, NoSigningKey> {
        let (kid, key) = keys.current_of(algorithm).ok_or(NoSigningKey)?;
        Ok(Self { kid, key, algorithm })
    }

    pub fn sign(&self, claims: &jwt::IdTokenClaims) -> String {
        jwt::sign_with(claims, jwt::END_USER_TYPE, self.kid, &self.key)
    }

    /// `at_hash` of the access token issued with the ID token.
    pub fn at_hash(&self, access_token: &str) -> String {
        jwt::at_hash(self.algorithm, access_token)
    }
}

impl Signer {
    /// The issuer its tokens name.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn ttl_seconds(&self) -> i64 {
        self.ttl_seconds
    }
}

/// An access token and when it expires.
pub struct Issued {
    pub token: String,
    pub expires_in: i64,
}

impl AccessTokens {
    pub fn new(public_url: String, ttl_seconds: u64, jwks_max_age_seconds: u64) -> Self {
        let documents_cache_control = format!("public, max-age={jwks_max_age_seconds}");
        Self { public_url, ttl_seconds: ttl_seconds as i64, documents_cache_control }
    }

    /// `public, max-age=…`: how long a verifier may keep the JWKS (a
    /// scheduled rotation waits that long before its key signs).
    pub fn documents_cache_control(&self) -> &str {
        &self.documents_cache_control
    }

    pub fn issuer(&self, application_id: Uuid) -> String {
        issuer(&self.public_url, application_id)
    }

    /// What signs the application's tokens: its current key. Get it before a
    /// request commits anything: nothing that can fail is left for after the
    /// commit.
    pub fn signer(&self, application_id: Uuid, keys: &keys::KeySet) -> Result<Signer, NoSigningKey> {
        let (kid, key) = keys.current().ok_or(NoSigningKey)?;
        Ok(Signer { kid, key, issuer: self.issuer(application_id), ttl_seconds: self.ttl_seconds })
    }

    /// The claims of a token of this application signed by `key`, or why not.
    pub fn check(
        &self,
        application_id: Uuid,
        parsed: jwt::Unverified<'_>,
        key: &ed25519_compact::PublicKey,
    ) -> Result<jwt::Claims, jwt::Rejection> {
        let issuer = self.issuer(application_id);
        let audience = application_id.to_string();
        let expected = jwt::Expected { issuer: &issuer, audience: &audience, now: crate::clock::now().timestamp() };
        parsed.verify(key, &expected)
    }
}
