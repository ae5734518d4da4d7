//! Calls to an identity provider, all with a 10-second budget and answers
//! read up to 1 MiB: the code exchange at its token endpoint (with the PKCE
//! verifier), its user-info endpoint, and its published keys (cached for an
//! hour, fetched again when a token names a key not among them).
use std::{sync::Arc, time::Duration};

use moka::future::Cache;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    id_token::{self, IdTokenError, Jwks},
    providers::{Endpoints, NamedBy, Protocol, UserInfo},
};
use crate::events::url_safety::Reach;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER: usize = 1024 * 1024;
const KEYS_TTL: Duration = Duration::from_secs(3600);
const USER_AGENT: &str = "Gatehouse";

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The token endpoint answered an OAuth error (`invalid_grant`, …).
    #[error("the provider refused the code: {0}")]
    Refused(String),
    #[error("the provider could not be reached")]
    Unreachable,
    #[error("the provider's answer could not be read: {0}")]
    Unreadable(&'static str),
    #[error(transparent)]
    IdToken(#[from] IdTokenError),
}

impl ProviderError {
    /// For the audit row of the failed sign-in.
    pub fn reason(&self) -> &'static str {
        match self {
            ProviderError::Refused(_) => "provider_refused_code",
            ProviderError::Unreachable => "provider_unreachable",
            ProviderError::Unreadable(_) => "provider_answer_unreadable",
            ProviderError::IdToken(err) => err.reason(),
        }
    }
}

/// The application's client at the provider.
pub struct Credentials<'a> {
    pub client_id: &'a str,
    pub client_secret: &'a str,
}

/// The code of a callback and what proves it is ours.
pub struct Grant<'a> {
    pub code: &'a str,
    /// Our callback URL, as sent in the authorization request.
    pub redirect_uri: &'a str,
    pub code_verifier: &'a str,
    pub nonce: &'a str,
}

/// The provider's account that signed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub subject: String,
    pub email: Option<String>,
    /// Whether the provider says it verified the email.
    pub email_verified: bool,
    /// How the user signed in at the provider (its ID token's `amr`).
    pub amr: Option<Vec<String>>,
    /// What an OpenID provider says of the user: its ID token's claims,
    /// with the user-info endpoint's where the token lacks one (an SSO
    /// connection's attribute mapping reads them); empty for the OAuth-only
    /// providers, whose sign-ins read none.
    pub claims: Map<String, Value>,
    /// The profile fields a new user gets from this sign-in (an SSO
    /// connection's attribute mapping); empty for other sign-ins.
    pub profile: Map<String, Value>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Clone)]
pub struct ProviderClient {
    http: reqwest::Client,
    /// For endpoints an application named: public addresses only, checked
    /// at each address dialled.
    public_only: reqwest::Client,
    keys: Cache<String, Arc<Jwks>>,
}

impl ProviderClient {
    pub fn new() -> Result<ProviderClient, reqwest::Error> {
        let builder = || {
            reqwest::Client::builder()
                .timeout(TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(USER_AGENT)
        };
        Ok(ProviderClient {
            http: builder().build()?,
            // A proxy would resolve names itself, past the address check.
            public_only: builder()
                .no_proxy()
                .dns_resolver(crate::events::url_safety::public_only_resolver())
                .build()?,
            keys: Cache::builder().max_capacity(256).time_to_live(KEYS_TTL).build(),
        })
    }

    /// The client for endpoints `named_by` someone.
    fn http(&self, named_by: NamedBy) -> &reqwest::Client {
        match named_by {
            NamedBy::Operator | NamedBy::Application(Reach::PrivateToo) => &self.http,
            NamedBy::Application(Reach::PublicOnly) => &self.public_only,
        }
    }

    /// An OpenID Provider's discovery document
    /// (`{issuer}/.well-known/openid-configuration`), read through the
    /// client for an application's endpoints.
    pub async fn discover(&self, issuer: &str, reach: Reach) -> Result<Value, ProviderError> {
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let response = self
            .http(NamedBy::Application(reach))
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| ProviderError::Unreachable)?;
        if !response.status().is_success() {
            return Err(ProviderError::Unreadable("the discovery document answered an error"));
        }
        let body = read(response).await?;
        serde_json::from_slice(&body).map_err(|_| ProviderError::Unreadable("the discovery document is not JSON"))
    }

    /// Reads a SAML identity provider's metadata document from `url`.
    pub async fn saml_metadata(&self, url: &str, reach: Reach) -> Result<String, ProviderError> {
        let response = self
            .http(NamedBy::Application(reach))
            .get(url)
            .header("accept", "application/samlmetadata+xml, application/xml, text/xml")
            .send()
            .await
            .map_err(|_| ProviderError::Unreachable)?;
        if !response.status().is_success() {
            return Err(ProviderError::Unreadable("the metadata URL answered an error"));
        }
        let body = read(response).await?;
        String::from_utf8(body).map_err(|_| ProviderError::Unreadable("the metadata is not UTF-8"))
    }

    /// Exchanges the code and says which account signed in: from the
    /// verified ID token (OpenID providers; the user-info endpoint fills in
    /// an email, or a `wanted` claim, the token leaves out) or from the
    /// user-info endpoint.
    pub async fn sign_in(
        &self,
        endpoints: &Endpoints,
        credentials: &Credentials<'_>,
        grant: &Grant<'_>,
        wanted: &[String],
    ) -> Result<Account, ProviderError> {
        let tokens = self.exchange(endpoints, credentials, grant).await?;
        let access_token = tokens.access_token.as_deref();
        match endpoints.protocol {
            Protocol::OpenId => {
                let token = tokens.id_token.as_deref().ok_or(ProviderError::Unreadable("no id_token"))?;
                let claims = self.verify_id_token(endpoints, credentials.client_id, grant.nonce, token).await?;
                let mut account = Account {
                    subject: claims.sub.clone(),
                    email: claims.email.clone(),
                    email_verified: claims.email_verified(),
                    amr: claims.amr(),
                    claims: claims.about_the_user(),
                    profile: Map::new(),
                };
                let lacking = account.email.is_none() || wanted.iter().any(|c| !account.claims.contains_key(c));
                if let (true, Some(url), Some(access_token)) = (lacking, &endpoints.userinfo_url, access_token) {
                    let info = standard_account(&self.get_json(endpoints, url, access_token).await?)?;
                    // OpenID Connect Core 5.3.2: the user-info `sub` must be the token's.
                    if info.subject == account.subject {
                        if account.email.is_none() {
                            account.email = info.email;
                            account.email_verified = info.email_verified;
                        }
                        for (name, value) in info.claims {
                            account.claims.entry(name).or_insert(value);
                        }
                    }
                }
                Ok(account)
            }
            Protocol::OAuth => {
                let access_token = access_token.ok_or(ProviderError::Unreadable("no access_token"))?;
                let url =
                    endpoints.userinfo_url.as_deref().ok_or(ProviderError::Unreadable("no user-info endpoint"))?;
                let info = self.get_json(endpoints, url, access_token).await?;
                match endpoints.user_info {
                    UserInfo::Standard => standard_account(&info),
                    UserInfo::Discord => discord_account(&info),
                    UserInfo::GitHub => {
                        let emails = self.get_json(endpoints, &format!("{url}/emails"), access_token).await?;
                        github_account(&info, &emails)
                    }
                }
            }
        }
    }

    async fn exchange(
        &self,
        endpoints: &Endpoints,
        credentials: &Credentials<'_>,
        grant: &Grant<'_>,
    ) -> Result<TokenAnswer, ProviderError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", grant.code),
            ("redirect_uri", grant.redirect_uri),
            ("client_id", credentials.client_id),
            ("client_secret", credentials.client_secret),
            ("code_verifier", grant.code_verifier),
        ];
        let response = self
            .http(endpoints.named_by)
            .post(&endpoints.token_url)
            .header("accept", "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|_| ProviderError::Unreachable)?;
        let status = response.status();
        let body = read(response).await?;
        let answer: TokenAnswer =
            serde_json::from_slice(&body).map_err(|_| ProviderError::Unreadable("token answer is not JSON"))?;
        // GitHub answers a refused code with 200 and an `error`.
        match (status.is_success(), answer.error.as_deref()) {
            (true, None) => Ok(answer),
            (_, error) => Err(ProviderError::Refused(error.unwrap_or("unknown").chars().take(64).collect())),
        }
    }

    async fn verify_id_token(
        &self,
        endpoints: &Endpoints,
        client_id: &str,
        nonce: &str,
        token: &str,
    ) -> Result<id_token::IdClaims, ProviderError> {
        let jwks_url = endpoints.jwks_url.as_deref().ok_or(ProviderError::Unreadable("no keys endpoint"))?;
        let issuer = endpoints.issuer.as_deref().ok_or(ProviderError::Unreadable("no issuer"))?;
        let expected = id_token::Expected { issuer, client_id, nonce, now: crate::clock::now().timestamp() };
        let unverified = id_token::parse(token)?;
        let keys = self.keys(endpoints.named_by, jwks_url, false).await?;
        match unverified.verify(&keys, &expected) {
            // Rotated since we fetched them: once more, fresh.
            Err(IdTokenError::UnknownKey) => {
                Ok(unverified.verify(&*self.keys(endpoints.named_by, jwks_url, true).await?, &expected)?)
            }
            verified => Ok(verified?),
        }
    }

    async fn keys(&self, named_by: NamedBy, url: &str, fresh: bool) -> Result<Arc<Jwks>, ProviderError> {
        if fresh {
            self.keys.invalidate(url).await;
        }
        let fetch = async {
            let response = self.http(named_by).get(url).send().await.map_err(|_| ProviderError::Unreachable)?;
            if !response.status().is_success() {
                return Err(ProviderError::Unreadable("keys endpoint answered an error"));
            }
            let body = read(response).await?;
            let keys: Jwks =
                serde_json::from_slice(&body).map_err(|_| ProviderError::Unreadable("keys are not a JWKS"))?;
            Ok(Arc::new(keys))
        };
        self.keys.try_get_with(url.to_string(), fetch).await.map_err(|err: Arc<ProviderError>| match &*err {
            ProviderError::Unreachable => ProviderError::Unreachable,
            _ => ProviderError::Unreadable("keys are not a JWKS"),
        })
    }

    async fn get_json(&self, endpoints: &Endpoints, url: &str, access_token: &str) -> Result<Value, ProviderError> {
        let response = self
            .http(endpoints.named_by)
            .get(url)
            .bearer_auth(access_token)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| ProviderError::Unreachable)?;
        if !response.status().is_success() {
            return Err(ProviderError::Unreadable("user-info endpoint answered an error"));
        }
        let body = read(response).await?;
        serde_json::from_slice(&body).map_err(|_| ProviderError::Unreadable("user info is not JSON"))
    }
}

async fn read(mut response: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| ProviderError::Unreachable)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(ProviderError::Unreadable("answer larger than 1 MiB"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A provider's account id: a string, or a number as GitHub sends it.
fn subject(value: &Value) -> Result<String, ProviderError> {
    let subject = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(ProviderError::Unreadable("no account id")),
    };
    if subject.is_empty() || subject.len() > 255 {
        return Err(ProviderError::Unreadable("no account id"));
    }
    Ok(subject)
}

fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn flag(value: &Value) -> bool {
    value.as_bool().unwrap_or(false) || value.as_str() == Some("true")
}

fn standard_account(info: &Value) -> Result<Account, ProviderError> {
    Ok(Account {
        subject: subject(&info["sub"])?,
        email: text(&info["email"]),
        email_verified: flag(&info["email_verified"]),
        amr: None,
        claims: info.as_object().cloned().unwrap_or_default(),
        profile: Map::new(),
    })
}

fn discord_account(info: &Value) -> Result<Account, ProviderError> {
    Ok(Account {
        subject: subject(&info["id"])?,
        email: text(&info["email"]),
        email_verified: flag(&info["verified"]),
        amr: None,
        claims: Map::new(),
        profile: Map::new(),
    })
}

/// GitHub's primary address when it is verified; else any verified one;
/// else the public one, unverified.
fn github_account(info: &Value, emails: &Value) -> Result<Account, ProviderError> {
    let listed = emails.as_array().map(Vec::as_slice).unwrap_or_default();
    let verified = |entry: &&Value| flag(&entry["verified"]) && text(&entry["email"]).is_some();
    let chosen =
        listed.iter().filter(verified).find(|entry| flag(&entry["primary"])).or_else(|| listed.iter().find(verified));
    let (email, email_verified) = match chosen {
        Some(entry) => (text(&entry["email"]), true),
        None => (text(&info["email"]), false),
    };
    Ok(Account {
        subject: subject(&info["id"])?,
        email,
        email_verified,
        amr: None,
        claims: Map::new(),
        profile: Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn github_takes_the_verified_primary_address() {
        let info = json!({"id": 583231, "email": "public@example.com"});
        let emails = json!([
            {"email": "old@example.com", "primary": false, "verified": true},
            {"email": "main@example.com", "primary": true, "verified": true},
        ]);
        let account = github_account(&info, &emails).unwrap();
        assert_eq!(account.subject, "583231");
        assert_eq!((account.email.as_deref(), account.email_verified), (Some("main@example.com"), true));
        let unverified = json!([{"email": "main@example.com", "primary": true, "verified": false}]);
        let account = github_account(&info, &unverified).unwrap();
        assert_eq!((account.email.as_deref(), account.email_verified), (Some("public@example.com"), false));
    }

    #[test]
    fn discord_and_standard_accounts_need_an_id() {
        let account = discord_account(&json!({"id": "80351110224678912", "email": "n@example.com", "verified": true}));
        assert!(account.unwrap().email_verified);
        assert!(discord_account(&json!({"email": "n@example.com"})).is_err());
        let account = standard_account(&json!({"sub": "abc", "email": "a@example.com", "email_verified": "true"}));
        assert!(account.unwrap().email_verified);
        assert!(standard_account(&json!({"sub": ""})).is_err());
    }
}
