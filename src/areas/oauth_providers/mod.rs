//! Identity (OAuth) provider settings (operation 1): one row per application
//! and provider, changed through the application's tenant actor. The client
//! secret is sealed to the application and provider and never leaves this
//! module but to the sign-in flow's code exchange; answers say `has_secret`.
pub mod http;

use entity::oauth_provider;
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder};
use serde_json::json;
use uuid::Uuid;

use super::validate::{Invalid, Issues};
use crate::{
    clock,
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, ApiResult, Code},
    storage::{TenantConn, TenantScope},
    tenancy::{
        parts::{Rows, TenantPart},
        Environment, InTurn, Tenant,
    },
};

use crate::events::catalog::EventType;
pub use crate::oauth::providers::PROVIDERS;
pub const MAX_CLIENT_ID: usize = 255;
pub const MAX_SECRET: usize = 1024;
pub const MAX_SCOPES: usize = 50;
pub const MAX_SCOPE: usize = 255;
/// An OAuth scope token (RFC 6749 section 3.3: printable ASCII but space,
/// `"` and `\`), as the providers name them (`openid`, `read:user`,
/// `https://www.googleapis.com/auth/userinfo.email`).
pub const SCOPE: &str = r#"^[!#-\[\]-~]{1,255}$"#;

#[derive(Debug, thiserror::Error)]
pub enum OAuthProviderError {
    #[error("a production application must use its own client credentials")]
    ProductionRequiresOwnCredentials,
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<OAuthProviderError> for ApiError {
    fn from(err: OAuthProviderError) -> Self {
        match err {
            OAuthProviderError::ProductionRequiresOwnCredentials => ApiError::new(
                Code::ProductionRequiresOwnCredentials,
                "A production application must use its own client credentials: set `client_id` and `client_secret`, and not `use_shared_dev_credentials`.",
            ),
            OAuthProviderError::Invalid(invalid) => invalid.into(),
            OAuthProviderError::Db(err) => err.into(),
        }
    }
}

/// Operation 1's body, as the route read it.
pub struct ProviderUpdate {
    pub provider: String,
    pub enabled: bool,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub use_shared_dev_credentials: Option<bool>,
}

/// A checked update: omitted fields in their stored form.
pub struct CheckedUpdate {
    pub provider: String,
    pub enabled: bool,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    pub use_shared_dev_credentials: bool,
}

impl std::fmt::Debug for CheckedUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedUpdate")
            .field("provider", &self.provider)
            .field("enabled", &self.enabled)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| entity::REDACTED))
            .field("scopes", &self.scopes)
            .field("use_shared_dev_credentials", &self.use_shared_dev_credentials)
            .finish()
    }
}

pub fn is_scope(value: &str) -> bool {
    (1..=MAX_SCOPE).contains(&value.len())
        && value.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// The rules of an identity provider's settings that need no stored row: the fields, and the
/// production rule's first half (no shared development credentials).
pub fn check(update: ProviderUpdate, environment: Environment) -> Result<CheckedUpdate, OAuthProviderError> {
    let mut issues = Issues::default();
    if !PROVIDERS.contains(&update.provider.as_str()) {
        issues.add("provider", format!("must be one of {}", PROVIDERS.join(", ")));
    }
    if let Some(client_id) = &update.client_id {
        issues.text("client_id", client_id, MAX_CLIENT_ID);
    }
    if let Some(secret) = &update.client_secret {
        issues.text("client_secret", secret, MAX_SECRET);
    }
    let scopes = update.scopes.unwrap_or_default();
    if scopes.len() > MAX_SCOPES {
        issues.add("scopes", format!("must be at most {MAX_SCOPES}"));
    }
    for (i, scope) in scopes.iter().enumerate() {
        if !is_scope(scope) {
            issues.add(
                &format!("scopes[{i}]"),
                "must be 1 to 255 printable ASCII characters without space, `\"` or `\\`",
            );
        }
    }
    issues.finish()?;
    let use_shared = update.use_shared_dev_credentials.unwrap_or(false);
    if use_shared && environment.is_live() {
        return Err(OAuthProviderError::ProductionRequiresOwnCredentials);
    }
    let mut unique = Vec::with_capacity(scopes.len());
    for scope in scopes {
        if !unique.contains(&scope) {
            unique.push(scope);
        }
    }
    Ok(CheckedUpdate {
        provider: update.provider,
        enabled: update.enabled,
        client_id: update.client_id,
        client_secret: update.client_secret,
        scopes: unique,
        use_shared_dev_credentials: use_shared,
    })
}

/// Where a provider's sealed client secret belongs: opened anywhere else,
/// it does not open.
pub fn secret_context(application_id: Uuid, provider: &str) -> String {
    format!("{application_id}/oauth_provider/{provider}/client_secret")
}

/// The provider's client secret, opened (`None`: it has none).
pub fn open_client_secret(key: &MasterKey, row: &oauth_provider::Model) -> Result<Option<String>, seal::OpenError> {
    let Some(sealed) = &row.client_secret_sealed else { return Ok(None) };
    let opened = seal::open(key, &secret_context(row.application_id, &row.provider), sealed)?;
    String::from_utf8(opened).map(Some).map_err(|_| seal::OpenError)
}

/// The scopes as stored (a JSON array of strings).
pub fn scopes_of(row: &oauth_provider::Model) -> Vec<String> {
    serde_json::from_value(row.scopes.clone()).unwrap_or_default()
}

/// Creates or replaces the provider's settings (the tenant actor's change).
/// An omitted client secret keeps the stored one.
pub async fn upsert(turn: &InTurn, update: CheckedUpdate) -> Result<oauth_provider::Model, OAuthProviderError> {
    let scope = turn.scope();
    let master_key = turn.master_key();
    let tenant: &Tenant = scope.tenant();
    let mut txn = scope.begin().await?;
    // Two first PUTs of a provider take turns instead of racing to insert.
    txn.lock_tenant().await?;
    let existing = txn
        .find::<oauth_provider::Entity>()
        .filter(oauth_provider::Column::Provider.eq(&update.provider))
        .one(txn.conn())
        .await?;
    let secret_sealed = match (&update.client_secret, &existing) {
        (Some(secret), _) => {
            Some(seal::seal(master_key, &secret_context(tenant.id, &update.provider), secret.as_bytes()))
        }
        (None, Some(row)) => row.client_secret_sealed.clone(),
        (None, None) => None,
    };
    // The production rule's second half: enabled needs a client id and a
    // stored or supplied secret.
    if tenant.environment.is_live() && update.enabled && (update.client_id.is_none() || secret_sealed.is_none()) {
        return Err(OAuthProviderError::ProductionRequiresOwnCredentials);
    }
    let now = clock::now();
    let scopes = json!(update.scopes);
    let row = match existing {
        Some(row) => {
            let mut active = row.into_active_model();
            active.enabled = Set(update.enabled);
            active.client_id = Set(update.client_id.clone());
            active.client_secret_sealed = Set(secret_sealed);
            active.scopes = Set(scopes);
            active.use_shared_dev_credentials = Set(update.use_shared_dev_credentials);
            active.updated_at = Set(now);
            txn.update(active).await?
        }
        None => {
            let row = oauth_provider::Model {
                id: Uuid::now_v7(),
                application_id: tenant.id,
                provider: update.provider.clone(),
                enabled: update.enabled,
                client_id: update.client_id.clone(),
                client_secret_sealed: secret_sealed,
                scopes,
                use_shared_dev_credentials: update.use_shared_dev_credentials,
                created_at: now,
                updated_at: now,
            };
            txn.insert(oauth_provider::ActiveModel::from(row.clone())).await?;
            row
        }
    };
    let data = json!({
        "provider": "oauth",
        "name": row.provider,
        "enabled": row.enabled,
        "client_id": row.client_id,
        "scopes": row.scopes,
        "use_shared_dev_credentials": row.use_shared_dev_credentials,
        "has_secret": row.client_secret_sealed.is_some(),
        "secret_replaced": update.client_secret.is_some(),
    });
    txn.audit(EventType::ProviderUpdated, Some(row.id), data).await?;
    txn.commit().await?;
    Ok(row)
}

/// Every provider's settings of the application, by provider.
pub async fn all(db: &impl TenantConn) -> Result<Vec<oauth_provider::Model>, DbErr> {
    db.find::<oauth_provider::Entity>()
        .order_by_asc(oauth_provider::Column::Provider)
        .order_by_asc(oauth_provider::Column::Id)
        .all(db.conn())
        .await
}

/// The identity providers' settings, one per provider at most; client
/// secrets stay sealed, opened only at a sign-in's code exchange (a tenant part).
pub type Providers = Rows<oauth_provider::Model>;

impl TenantPart for Providers {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(Rows(all(scope).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(provider: &str, shared: Option<bool>, scopes: Option<Vec<&str>>) -> ProviderUpdate {
        ProviderUpdate {
            provider: provider.to_string(),
            enabled: true,
            client_id: None,
            client_secret: None,
            scopes: scopes.map(|s| s.into_iter().map(str::to_string).collect()),
            use_shared_dev_credentials: shared,
        }
    }

    #[test]
    fn the_rules_of_operation_1() {
        assert!(check(update("google", Some(true), None), Environment::Development).is_ok());
        assert!(matches!(
            check(update("google", Some(true), None), Environment::Production),
            Err(OAuthProviderError::ProductionRequiresOwnCredentials)
        ));
        assert!(matches!(
            check(update("myspace", None, None), Environment::Development),
            Err(OAuthProviderError::Invalid(_))
        ));
        let url = "https://www.googleapis.com/auth/userinfo.email";
        let checked =
            check(update("google", None, Some(vec!["openid", url, "openid"])), Environment::Development).unwrap();
        assert_eq!(checked.scopes, vec!["openid".to_string(), url.to_string()]);
        for bad in ["", "a b", "a\"b", "a\\b", "é"] {
            assert!(!is_scope(bad), "{bad:?}");
        }
        assert!(is_scope("read:user") && is_scope("User.Read"));
    }

    #[test]
    fn a_sealed_client_secret_opens_only_for_its_application_and_provider() {
        let key = MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let now = clock::now();
        let row = |application_id: Uuid, provider: &str, sealed: Vec<u8>| oauth_provider::Model {
            id: Uuid::now_v7(),
            application_id,
            provider: provider.to_string(),
            enabled: true,
            client_id: Some("client".to_string()),
            client_secret_sealed: Some(sealed),
            scopes: json!([]),
            use_shared_dev_credentials: false,
            created_at: now,
            updated_at: now,
        };
        let sealed = seal::seal(&key, &secret_context(a, "google"), b"hunter2");
        assert_eq!(open_client_secret(&key, &row(a, "google", sealed.clone())).unwrap().as_deref(), Some("hunter2"));
        assert!(open_client_secret(&key, &row(b, "google", sealed.clone())).is_err(), "another application's row");
        assert!(open_client_secret(&key, &row(a, "github", sealed)).is_err(), "another provider's row");
    }
}
