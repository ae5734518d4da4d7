//! Messaging providers (operation 2): one per application and channel,
//! changed through the application's tenant actor, and the outbox of
//! messages recorded instead of sent. Sending is [`super::mailer`]'s.
//!
//! A provider's `status` is `unverified` after each change of its settings,
//! `verified` (with `verified_at`) once a send through it succeeded, and
//! `failing` after a send failed. Its secret (the SMTP password) is sealed
//! to the application and channel and never leaves this module but to the
//! SMTP client.
pub mod http;

use entity::{messaging_outbox, messaging_provider};
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::validate::{Invalid, Issues};
use crate::{
    clock,
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, ApiResult, Code},
    events::catalog::EventType,
    events::url_safety::{self, Reach},
    storage::{Page, TenantConn, TenantScope, Unaudited},
    tenancy::{
        parts::{Rows, TenantPart},
        Environment, InTurn, Tenant,
    },
};

pub const CHANNELS: [&str; 2] = ["email", "sms"];
pub const KINDS: [&str; 3] = ["shared", "smtp", "log"];
pub const UNVERIFIED: &str = "unverified";
pub const VERIFIED: &str = "verified";
pub const FAILING: &str = "failing";
/// The outbox reason of a message whose channel has no provider.
pub const NO_PROVIDER: &str = "no_provider";
pub const MAX_SECRET: usize = 1024;
pub const HOST: &str = "^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$";
/// A phone number in E.164 form, for the `sms` channel.
pub const PHONE: &str = r"^\+[1-9][0-9]{6,14}$";

#[derive(Debug, thiserror::Error)]
pub enum MessagingError {
    #[error("the application has no `{0}` messaging provider")]
    NotFound(String),
    #[error("a production application may not use the shared sender")]
    ProductionSharedSender,
    /// The send failed; the provider's status is now `failing`.
    #[error("the message could not be sent through the `{kind}` provider: {reason}")]
    SendFailed { kind: String, reason: String },
    /// The application already has this many sends in flight, and none
    /// ended within the send's deadline; the provider's status is unchanged.
    #[error("{in_flight} messages are already being sent through the `{kind}` provider")]
    Busy { kind: String, in_flight: usize },
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The tenant's state could not be read or changed.
    #[error("{}", .0.message)]
    Tenant(ApiError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<MessagingError> for ApiError {
    fn from(err: MessagingError) -> Self {
        match err {
            MessagingError::NotFound(channel) => {
                ApiError::new(Code::NotFound, format!("The application has no `{channel}` messaging provider."))
            }
            MessagingError::ProductionSharedSender => ApiError::new(
                Code::ProductionSharedSenderForbidden,
                "A production application may not use the shared sender: configure its own provider.",
            ),
            // The provider's server (not the caller, not us) failed: 503,
            // and the provider is now `failing`.
            MessagingError::SendFailed { kind, reason } => ApiError::new(
                Code::Unavailable,
                format!("The message could not be sent through the `{kind}` provider: {reason}. Its status is now `failing`."),
            ),
            MessagingError::Busy { kind, in_flight } => ApiError::new(
                Code::Unavailable,
                format!("{in_flight} messages are already being sent through the `{kind}` provider of this application: try again shortly."),
            ),
            MessagingError::Invalid(invalid) => invalid.into(),
            MessagingError::Tenant(err) => err,
            MessagingError::Db(err) => err.into(),
        }
    }
}

/// The `smtp` kind's settings (`config`); the password is the `secret`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    #[serde(default)]
    pub username: Option<String>,
    pub from: String,
    /// Upgrade with STARTTLS, and refuse a server that does not offer it.
    /// Default false (plain SMTP, for a development relay on loopback); a
    /// production application must set it.
    #[serde(default)]
    pub starttls: bool,
}

fn default_port() -> u16 {
    587
}

/// Operation 2's body, as the route read it.
pub struct ProviderUpdate {
    pub channel: String,
    pub kind: String,
    pub config: Option<Value>,
    pub secret: Option<String>,
}

/// A checked update: the config in its stored form.
pub struct CheckedUpdate {
    pub channel: String,
    pub kind: String,
    pub config: Value,
    pub secret: Option<String>,
}

impl std::fmt::Debug for CheckedUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedUpdate")
            .field("channel", &self.channel)
            .field("kind", &self.kind)
            .field("config", &self.config)
            .field("secret", &self.secret.as_ref().map(|_| entity::REDACTED))
            .finish()
    }
}

/// The rules of a messaging provider that need no stored row. `reach` says whether
/// the SMTP host may be a loopback or private address ([`Reach::of`]); when
/// it may not, a host that is one in any spelling (`127.1`, `2130706433`,
/// `0`, `localhost`) is refused here, and every address a name resolves to
/// is checked again at each send.
pub fn check(update: ProviderUpdate, environment: Environment, reach: Reach) -> Result<CheckedUpdate, MessagingError> {
    let mut issues = Issues::default();
    if !CHANNELS.contains(&update.channel.as_str()) {
        issues.add("channel", format!("must be one of {}", CHANNELS.join(", ")));
    }
    if !KINDS.contains(&update.kind.as_str()) {
        issues.add("kind", format!("must be one of {}", KINDS.join(", ")));
    } else if update.kind == "smtp" && update.channel == "sms" {
        issues.add("kind", "`smtp` sends email only");
    } else if update.kind == "log" && environment != Environment::Development {
        issues.add("kind", "`log` is for development applications only");
    }
    let config = match (update.kind.as_str(), update.config) {
        ("smtp", Some(value)) => match serde_json::from_value::<SmtpConfig>(value) {
            Ok(config) => {
                smtp_issues(&mut issues, &config, environment, reach);
                serde_json::to_value(config).expect("a config serialises")
            }
            Err(err) => {
                issues.add("config", format!("must be {{host, port, username, from, starttls}}: {err}"));
                Value::Null
            }
        },
        ("smtp", None) => {
            issues.add("config", "`smtp` needs {host, from}");
            Value::Null
        }
        (_, None | Some(Value::Null)) => json!({}),
        (_, Some(Value::Object(map))) if map.is_empty() => json!({}),
        (_, Some(_)) => {
            issues.add("config", "only `smtp` takes settings");
            Value::Null
        }
    };
    if let Some(secret) = &update.secret {
        if update.kind != "smtp" {
            issues.add("secret", "only `smtp` takes a secret");
        } else {
            issues.text("secret", secret, MAX_SECRET);
        }
    }
    issues.finish()?;
    if update.kind == "shared" && environment.is_live() {
        return Err(MessagingError::ProductionSharedSender);
    }
    Ok(CheckedUpdate { channel: update.channel, kind: update.kind, config, secret: update.secret })
}

fn smtp_issues(issues: &mut Issues, config: &SmtpConfig, environment: Environment, reach: Reach) {
    if !is_host(&config.host) {
        issues.add("config.host", "must be a host name or an IPv4 address");
    } else if reach == Reach::PublicOnly && !url_safety::host_may_be_public(&config.host) {
        issues.add("config.host", "must not be a loopback, private or otherwise non-public address");
    }
    if config.port == 0 {
        issues.add("config.port", "must be between 1 and 65535");
    }
    if let Some(username) = &config.username {
        issues.text("config.username", username, 255);
    }
    if !is_email(&config.from) {
        issues.add("config.from", "must be an email address");
    }
    if environment.is_live() && !config.starttls {
        issues.add("config.starttls", "a production application sends over TLS: must be true");
    }
}

fn is_host(host: &str) -> bool {
    let bytes = host.as_bytes();
    (1..=253).contains(&bytes.len())
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'.' || *b == b'-')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

pub fn is_email(value: &str) -> bool {
    value.len() <= 254 && super::profile_fields::is_email(value)
}

pub fn is_phone(value: &str) -> bool {
    let digits = value.strip_prefix('+').unwrap_or("");
    (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0')
}

/// Where a channel's sealed secret belongs: opened anywhere else, it does not open.
pub fn secret_context(application_id: Uuid, channel: &str) -> String {
    format!("{application_id}/messaging_provider/{channel}/secret")
}

/// The provider's secret, opened (`None`: it has none).
pub fn open_secret(key: &MasterKey, row: &messaging_provider::Model) -> Result<Option<String>, seal::OpenError> {
    let Some(sealed) = &row.secret_sealed else { return Ok(None) };
    let opened = seal::open(key, &secret_context(row.application_id, &row.channel), sealed)?;
    String::from_utf8(opened).map(Some).map_err(|_| seal::OpenError)
}

/// Creates or replaces the channel's provider (the tenant actor's change).
/// An omitted secret keeps the stored one while the kind stays `smtp`.
pub async fn upsert(turn: &InTurn, update: CheckedUpdate) -> Result<messaging_provider::Model, MessagingError> {
    let scope = turn.scope();
    let master_key = turn.master_key();
    let tenant: &Tenant = scope.tenant();
    let mut txn = scope.begin().await?;
    // Two first PUTs of a channel take turns instead of racing to insert.
    txn.lock_tenant().await?;
    let existing = txn
        .find::<messaging_provider::Entity>()
        .filter(messaging_provider::Column::Channel.eq(&update.channel))
        .one(txn.conn())
        .await?;
    let context = secret_context(tenant.id, &update.channel);
    let secret_sealed = match (&update.secret, &existing) {
        (Some(secret), _) => Some(seal::seal(master_key, &context, secret.as_bytes())),
        (None, Some(row)) if row.kind == "smtp" && update.kind == "smtp" => row.secret_sealed.clone(),
        _ => None,
    };
    if update.kind == "smtp" {
        let has_username = update.config.get("username").is_some_and(|u| !u.is_null());
        let mut issues = Issues::default();
        if has_username && secret_sealed.is_none() {
            issues.add("secret", "the password of `config.username` is required");
        } else if !has_username && secret_sealed.is_some() {
            issues.add("secret", "a password needs `config.username`");
        }
        issues.finish()?;
    }
    let now = clock::now();
    let row = match existing {
        Some(row) => {
            let unchanged = row.kind == update.kind && row.config == update.config && update.secret.is_none();
            let mut active = row.clone().into_active_model();
            active.kind = Set(update.kind.clone());
            active.config = Set(update.config.clone());
            active.secret_sealed = Set(secret_sealed);
            if !unchanged {
                // New settings have not been shown to work yet.
                active.status = Set(UNVERIFIED.to_string());
                active.verified_at = Set(None);
                active.updated_at = Set(now);
            }
            txn.update(active).await?
        }
        None => {
            let row = messaging_provider::Model {
                id: Uuid::now_v7(),
                application_id: tenant.id,
                channel: update.channel.clone(),
                kind: update.kind.clone(),
                config: update.config.clone(),
                secret_sealed,
                status: UNVERIFIED.to_string(),
                verified_at: None,
                created_at: now,
                updated_at: now,
            };
            txn.insert(messaging_provider::ActiveModel::from(row.clone())).await?;
            row
        }
    };
    let data = json!({"provider": "messaging", "channel": row.channel, "kind": row.kind});
    txn.audit(EventType::ProviderUpdated, Some(row.id), data).await?;
    txn.commit().await?;
    Ok(row)
}

/// Every provider of the application (one per channel), by channel.
pub async fn all(db: &impl TenantConn) -> Result<Vec<messaging_provider::Model>, DbErr> {
    db.find::<messaging_provider::Entity>()
        .order_by_asc(messaging_provider::Column::Channel)
        .order_by_asc(messaging_provider::Column::Id)
        .all(db.conn())
        .await
}

/// The application's providers, one per channel at most (a tenant part).
pub type Providers = Rows<messaging_provider::Model>;

impl TenantPart for Providers {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(Rows(all(scope).await?))
    }
}

/// What a send through a provider did to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    Failed,
}

impl Outcome {
    /// The provider's status after it.
    pub fn status(self) -> &'static str {
        match self {
            Outcome::Delivered => VERIFIED,
            Outcome::Failed => FAILING,
        }
    }
}

/// Records a send's outcome on the provider whose settings of `settings_at`
/// made it (the tenant actor's change). A test send is always recorded (and
/// audited); another send only when it changes the status. Settings changed
/// since the send leave the status as the change set it.
pub async fn record_outcome(
    turn: &InTurn,
    provider_id: Uuid,
    settings_at: chrono::DateTime<chrono::Utc>,
    outcome: Outcome,
    test: bool,
) -> Result<Option<messaging_provider::Model>, MessagingError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let Some(row) = txn.find_by_id::<messaging_provider::Entity>(provider_id).one(txn.conn()).await? else {
        return Ok(None);
    };
    let status = outcome.status();
    if row.updated_at != settings_at || (!test && row.status == status) {
        return Ok(Some(row));
    }
    let mut active = row.clone().into_active_model();
    active.status = Set(status.to_string());
    if outcome == Outcome::Delivered {
        active.verified_at = Set(Some(clock::now()));
    }
    let row = txn.update(active).await?;
    let data = json!({"provider": "messaging", "channel": row.channel, "kind": row.kind, "status": row.status,
        "test_send": test});
    txn.audit(EventType::ProviderUpdated, Some(row.id), data).await?;
    txn.commit().await?;
    Ok(Some(row))
}

/// A message the outbox keeps.
pub struct OutboxEntry<'a> {
    pub channel: &'a str,
    pub reason: &'a str,
    pub recipient: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
}

/// Records a message instead of sending it: never dropped.
pub async fn record_in_outbox(scope: &TenantScope, entry: OutboxEntry<'_>) -> Result<messaging_outbox::Model, DbErr> {
    let row = messaging_outbox::Model {
        id: Uuid::now_v7(),
        application_id: scope.tenant().id,
        channel: entry.channel.to_string(),
        reason: entry.reason.to_string(),
        recipient: entry.recipient.to_string(),
        subject: entry.subject.to_string(),
        body: entry.body.to_string(),
        created_at: clock::now(),
    };
    let mut txn = scope.begin().await?;
    txn.insert(messaging_outbox::ActiveModel::from(row.clone())).await?;
    txn.unaudited(Unaudited::MessagingOutbox);
    txn.commit().await?;
    Ok(row)
}

/// The outbox, newest first.
pub async fn outbox(db: &impl TenantConn, page: Page) -> Result<(Vec<messaging_outbox::Model>, bool), DbErr> {
    let query = db
        .find::<messaging_outbox::Entity>()
        .order_by_desc(messaging_outbox::Column::CreatedAt)
        .order_by_desc(messaging_outbox::Column::Id);
    page.fetch(query, db.conn()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_for_its_application_and_channel() {
        let key = MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let now = clock::now();
        let row = |application_id: Uuid, channel: &str, sealed: Vec<u8>| messaging_provider::Model {
            id: Uuid::now_v7(),
            application_id,
            channel: channel.to_string(),
            kind: "smtp".to_string(),
            config: json!({}),
            secret_sealed: Some(sealed),
            status: UNVERIFIED.to_string(),
            verified_at: None,
            created_at: now,
            updated_at: now,
        };
        let sealed = seal::seal(&key, &secret_context(a, "email"), b"hunter2");
        assert_eq!(open_secret(&key, &row(a, "email", sealed.clone())).unwrap().as_deref(), Some("hunter2"));
        assert!(open_secret(&key, &row(b, "email", sealed.clone())).is_err(), "another application's row");
        assert!(open_secret(&key, &row(a, "sms", sealed)).is_err(), "another channel's row");
    }

    #[test]
    fn the_rules_of_operation_2() {
        let update = |channel: &str, kind: &str, config: Option<Value>, secret: Option<&str>| ProviderUpdate {
            channel: channel.to_string(),
            kind: kind.to_string(),
            config,
            secret: secret.map(str::to_string),
        };
        let smtp = json!({"host": "smtp.example.com", "from": "no-reply@example.com", "starttls": true});
        assert!(check(
            update("email", "smtp", Some(smtp.clone()), Some("pw")),
            Environment::Production,
            Reach::PublicOnly
        )
        .is_ok());
        assert!(matches!(
            check(update("email", "shared", None, None), Environment::Production, Reach::PublicOnly),
            Err(MessagingError::ProductionSharedSender)
        ));
        assert!(matches!(
            check(update("email", "log", None, None), Environment::Production, Reach::PublicOnly),
            Err(MessagingError::Invalid(_))
        ));
        assert!(matches!(
            check(update("sms", "smtp", Some(smtp), None), Environment::Development, Reach::PrivateToo),
            Err(MessagingError::Invalid(_))
        ));
        assert!(matches!(
            check(update("email", "log", None, Some("pw")), Environment::Development, Reach::PrivateToo),
            Err(MessagingError::Invalid(_))
        ));
        let plain = json!({"host": "smtp.example.com", "from": "no-reply@example.com"});
        assert!(matches!(
            check(update("email", "smtp", Some(plain), None), Environment::Production, Reach::PublicOnly),
            Err(MessagingError::Invalid(_))
        ));
        for host in ["127.0.0.1", "localhost", "2130706433", "127.1", "0", "169.254.169.254", "10.255.255.1"] {
            let internal = json!({"host": host, "from": "no-reply@example.com", "starttls": true});
            assert!(
                matches!(
                    check(
                        update("email", "smtp", Some(internal.clone()), None),
                        Environment::Production,
                        Reach::PublicOnly
                    ),
                    Err(MessagingError::Invalid(_))
                ),
                "{host} in production"
            );
            let development =
                check(update("email", "smtp", Some(internal), None), Environment::Development, Reach::PrivateToo);
            assert!(development.is_ok(), "{host} where the operator allows private destinations");
        }
        assert!(is_phone("+4915112345678") && !is_phone("+0123456789") && !is_phone("12345678"));
    }
}
