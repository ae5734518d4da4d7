//! Machine tokens (RFC 6749 section 4.4, `client_credentials`): a service
//! account authenticates with its id as `client_id` and one of its keys as
//! `client_secret`, and gets an access token in RFC 9068's profile carrying
//! its scopes, or the narrower set it asks for. Issuing writes nothing (the
//! key's `last_used_at` at most once a minute, off the request path); a
//! refused key is audited as refused key uses are.
use uuid::Uuid;

use super::{
    auth::{AuthError, Issuer},
    service_accounts::{self, KeyRefusal, Verified},
};
use crate::{storage::TenantScope, tokens::Issued};

/// An RFC 6749 section 5.2 refusal.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefused {
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// The client could not be authenticated; the key that was presented,
    /// when it is one of this application's.
    #[error("the client could not be authenticated")]
    InvalidClient(KeyRefusal),
    #[error("the grant type is not supported")]
    UnsupportedGrantType,
    #[error("a requested scope is not one of the service account's")]
    InvalidScope,
}

impl TokenRefused {
    /// The `error` of the answer.
    pub fn code(&self) -> &'static str {
        match self {
            TokenRefused::InvalidRequest(_) => "invalid_request",
            TokenRefused::InvalidClient(_) => "invalid_client",
            TokenRefused::UnsupportedGrantType => "unsupported_grant_type",
            TokenRefused::InvalidScope => "invalid_scope",
        }
    }
}

/// A token request, its client credentials already taken from wherever the
/// client sent them.
pub struct TokenRequest {
    pub grant_type: Option<String>,
    /// Space-separated; absent: all of the account's scopes.
    pub scope: Option<String>,
    pub client_id: String,
    pub client_secret: String,
}

/// A token issued, with what it was issued for.
pub struct MachineToken {
    pub issued: Issued,
    pub scopes: Vec<String>,
    pub verified: Verified,
}

pub async fn issue(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    request: TokenRequest,
) -> Result<Result<MachineToken, TokenRefused>, AuthError> {
    match request.grant_type.as_deref() {
        Some("client_credentials") => {}
        Some(_) => return Ok(Err(TokenRefused::UnsupportedGrantType)),
        None => return Ok(Err(TokenRefused::InvalidRequest("`grant_type` is required"))),
    }
    let live = scope.tenant().environment.is_live();
    let verified = match service_accounts::authenticate(scope, live, &request.client_secret).await? {
        Ok(verified) => verified,
        Err(refusal) => return Ok(Err(TokenRefused::InvalidClient(refusal))),
    };
    // The key of another account: this client did not authenticate.
    if Uuid::try_parse(&request.client_id).ok() != Some(verified.account.id) {
        return Ok(Err(TokenRefused::InvalidClient(KeyRefusal::Unknown)));
    }
    let granted = service_accounts::account_scopes(&verified.account);
    let scopes = match request.scope.as_deref().map(str::split_whitespace) {
        None => granted,
        Some(asked) => {
            let mut narrowed: Vec<String> = Vec::new();
            for wanted in asked {
                if !granted.iter().any(|g| g == wanted) {
                    return Ok(Err(TokenRefused::InvalidScope));
                }
                if !narrowed.iter().any(|n| n == wanted) {
                    narrowed.push(wanted.to_string());
                }
            }
            narrowed
        }
    };
    let signer = issuer.signer(scope).await?;
    let issued = signer.issue_machine(scope.tenant().id, verified.account.id, &scopes);
    Ok(Ok(MachineToken { issued, scopes, verified }))
}
