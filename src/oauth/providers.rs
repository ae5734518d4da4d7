//! Every identity provider Gatehouse signs in with, in one table: how it
//! speaks (OpenID Connect, or plain OAuth 2.0 with a user-info call), its
//! endpoints, and the scopes asked when the application names none.
//! Configuration may replace any endpoint of a provider
//! (`oauth.endpoints.<provider>.*`: a self-hosted GitLab, a test provider).
use crate::{
    config::{EndpointOverrides, OAuthSettings},
    events::url_safety::Reach,
};

pub const PROVIDERS: [&str; 8] = ["google", "github", "microsoft", "apple", "gitlab", "discord", "linkedin", "slack"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// An ID token says who signed in: verified against the provider's keys.
    OpenId,
    /// The user-info endpoint says who signed in, read with the access token.
    OAuth,
}

/// A provider's endpoints, configuration applied.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// The provider's name (`google`…), or `sso:{connection_id}` for an
    /// organization's SSO connection.
    pub provider: String,
    pub protocol: Protocol,
    pub authorization_url: String,
    pub token_url: String,
    pub userinfo_url: Option<String>,
    pub jwks_url: Option<String>,
    /// The ID token's expected `iss`; `{tenantid}` stands for the token's
    /// own `tid` claim (Microsoft's multi-tenant endpoint).
    pub issuer: Option<String>,
    pub default_scopes: &'static [&'static str],
    /// The provider answers by POSTing a form to the callback (Apple, when
    /// name or email is asked).
    pub form_post: bool,
    /// How its user-info endpoint names the account.
    pub user_info: UserInfo,
    /// Who named the endpoints: the operator (any address), or an
    /// application (its SSO connection), whose calls reach what its
    /// environment may reach, checked at every address dialled.
    pub named_by: NamedBy,
}

/// Who named a provider's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamedBy {
    Operator,
    Application(Reach),
}

/// The shape of a provider's user-info answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserInfo {
    /// OpenID Connect: `sub`, `email`, `email_verified`.
    Standard,
    /// `id`, `email` (the public one, maybe none); the verified addresses
    /// at `<user-info>/emails`.
    GitHub,
    /// `id`, `email`, `verified`.
    Discord,
}

struct Builtin {
    protocol: Protocol,
    authorization: &'static str,
    token: &'static str,
    userinfo: Option<&'static str>,
    jwks: Option<&'static str>,
    issuer: Option<&'static str>,
    scopes: &'static [&'static str],
    form_post: bool,
    user_info: UserInfo,
}

const fn openid(
    authorization: &'static str,
    token: &'static str,
    userinfo: Option<&'static str>,
    jwks: &'static str,
    issuer: &'static str,
    scopes: &'static [&'static str],
) -> Builtin {
    Builtin {
        protocol: Protocol::OpenId,
        authorization,
        token,
        userinfo,
        jwks: Some(jwks),
        issuer: Some(issuer),
        scopes,
        form_post: false,
        user_info: UserInfo::Standard,
    }
}

const fn oauth(
    authorization: &'static str,
    token: &'static str,
    userinfo: &'static str,
    scopes: &'static [&'static str],
    user_info: UserInfo,
) -> Builtin {
    Builtin {
        protocol: Protocol::OAuth,
        authorization,
        token,
        userinfo: Some(userinfo),
        jwks: None,
        issuer: None,
        scopes,
        form_post: false,
        user_info,
    }
}

const OPENID_SCOPES: &[&str] = &["openid", "email", "profile"];

/// A provider's name as people write it, for a sign-in button.
pub fn display_name(provider: &str) -> &'static str {
    match provider {
        "google" => "Google",
        "microsoft" => "Microsoft",
        "apple" => "Apple",
        "gitlab" => "GitLab",
        "linkedin" => "LinkedIn",
        "slack" => "Slack",
        "github" => "GitHub",
        "discord" => "Discord",
        _ => "your identity provider",
    }
}

fn builtin(provider: &str) -> Option<(&'static str, Builtin)> {
    let entry = match provider {
        "google" => (
            "google",
            openid(
                "https://accounts.google.com/o/oauth2/v2/auth",
                "https://oauth2.googleapis.com/token",
                Some("https://openidconnect.googleapis.com/v1/userinfo"),
                "https://www.googleapis.com/oauth2/v3/certs",
                "https://accounts.google.com",
                OPENID_SCOPES,
            ),
        ),
        "microsoft" => (
            "microsoft",
            openid(
                "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
                "https://login.microsoftonline.com/common/oauth2/v2.0/token",
                Some("https://graph.microsoft.com/oidc/userinfo"),
                "https://login.microsoftonline.com/common/discovery/v2.0/keys",
                "https://login.microsoftonline.com/{tenantid}/v2.0",
                OPENID_SCOPES,
            ),
        ),
        "apple" => (
            "apple",
            Builtin {
                form_post: true,
                ..openid(
                    "https://appleid.apple.com/auth/authorize",
                    "https://appleid.apple.com/auth/token",
                    None,
                    "https://appleid.apple.com/auth/keys",
                    "https://appleid.apple.com",
                    &["openid", "email", "name"],
                )
            },
        ),
        "gitlab" => (
            "gitlab",
            openid(
                "https://gitlab.com/oauth/authorize",
                "https://gitlab.com/oauth/token",
                Some("https://gitlab.com/oauth/userinfo"),
                "https://gitlab.com/oauth/discovery/keys",
                "https://gitlab.com",
                OPENID_SCOPES,
            ),
        ),
        "linkedin" => (
            "linkedin",
            openid(
                "https://www.linkedin.com/oauth/v2/authorization",
                "https://www.linkedin.com/oauth/v2/accessToken",
                Some("https://api.linkedin.com/v2/userinfo"),
                "https://www.linkedin.com/oauth/openid/jwks",
                "https://www.linkedin.com/oauth",
                OPENID_SCOPES,
            ),
        ),
        "slack" => (
            "slack",
            openid(
                "https://slack.com/openid/connect/authorize",
                "https://slack.com/api/openid.connect.token",
                Some("https://slack.com/api/openid.connect.userInfo"),
                "https://slack.com/openid/connect/keys",
                "https://slack.com",
                OPENID_SCOPES,
            ),
        ),
        "github" => (
            "github",
            oauth(
                "https://github.com/login/oauth/authorize",
                "https://github.com/login/oauth/access_token",
                "https://api.github.com/user",
                &["read:user", "user:email"],
                UserInfo::GitHub,
            ),
        ),
        "discord" => (
            "discord",
            oauth(
                "https://discord.com/oauth2/authorize",
                "https://discord.com/api/oauth2/token",
                "https://discord.com/api/users/@me",
                &["identify", "email"],
                UserInfo::Discord,
            ),
        ),
        _ => return None,
    };
    Some(entry)
}

/// The provider's endpoints with configuration's overrides; `None` for a
/// provider Gatehouse does not know.
pub fn endpoints(provider: &str, settings: &OAuthSettings) -> Option<Endpoints> {
    let (name, builtin) = builtin(provider)?;
    let overrides = settings.endpoints.get(provider).cloned().unwrap_or_default();
    let EndpointOverrides { authorization_url, token_url, userinfo_url, jwks_url, issuer } = overrides;
    Some(Endpoints {
        provider: name.to_string(),
        protocol: builtin.protocol,
        authorization_url: authorization_url.unwrap_or_else(|| builtin.authorization.to_string()),
        token_url: token_url.unwrap_or_else(|| builtin.token.to_string()),
        userinfo_url: userinfo_url.or_else(|| builtin.userinfo.map(str::to_string)),
        jwks_url: jwks_url.or_else(|| builtin.jwks.map(str::to_string)),
        issuer: issuer.or_else(|| builtin.issuer.map(str::to_string)),
        default_scopes: builtin.scopes,
        form_post: builtin.form_post,
        user_info: builtin.user_info,
        named_by: NamedBy::Operator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_has_endpoints_and_openid_ones_have_keys_and_an_issuer() {
        let settings = OAuthSettings::default();
        for provider in PROVIDERS {
            let endpoints = endpoints(provider, &settings).unwrap_or_else(|| panic!("{provider} has no entry"));
            assert_eq!(endpoints.provider, provider);
            match endpoints.protocol {
                Protocol::OpenId => assert!(endpoints.jwks_url.is_some() && endpoints.issuer.is_some(), "{provider}"),
                Protocol::OAuth => assert!(endpoints.userinfo_url.is_some(), "{provider}"),
            }
            for url in [&endpoints.authorization_url, &endpoints.token_url] {
                assert!(url.starts_with("https://"), "{provider}: {url}");
            }
        }
        assert!(endpoints("myspace", &settings).is_none());
    }

    #[test]
    fn configuration_replaces_only_the_endpoints_it_names() {
        let mut settings = OAuthSettings::default();
        settings.endpoints.insert(
            "gitlab".into(),
            EndpointOverrides {
                authorization_url: Some("https://git.example.com/oauth/authorize".into()),
                issuer: Some("https://git.example.com".into()),
                ..Default::default()
            },
        );
        let gitlab = endpoints("gitlab", &settings).unwrap();
        assert_eq!(gitlab.authorization_url, "https://git.example.com/oauth/authorize");
        assert_eq!(gitlab.issuer.as_deref(), Some("https://git.example.com"));
        assert_eq!(gitlab.token_url, "https://gitlab.com/oauth/token");
    }
}
