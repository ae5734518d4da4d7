//! Sending a message through the application's provider for the channel:
//! the one way out for test sends, invitations and verification emails.
//! `smtp` sends over SMTP (lettre; STARTTLS required when `starttls` is
//! set, plain otherwise); `log` and `shared` (no relay is configured for the
//! shared sender in this build) record the message in the outbox, as does a
//! channel without a provider. Nothing is dropped. Each send's outcome
//! drives the provider's `status` through the tenant actor.
use std::time::Duration;

use entity::messaging_provider;
use lettre::{
    message::{header::ContentType, Mailbox},
    transport::smtp::{authentication::Credentials, Error as SmtpError},
    AsyncSmtpTransport, AsyncTransport, Tokio1Executor,
};

use super::messaging::{self, MessagingError, OutboxEntry, Outcome, SmtpConfig, NO_PROVIDER};
use crate::{crypto::master_key::MasterKey, storage::TenantScope, tenancy::registry::TenantRegistry};

/// Connecting, the dialogue and the message, each.
const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// One message to one recipient (an email address, or an E.164 number for `sms`).
pub struct Message {
    pub to: String,
    pub subject: String,
    pub body: String,
}

/// What became of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Handed to the provider's server.
    Delivered,
    /// Kept in the outbox (`log`, `shared`, or no provider).
    Recorded,
}

#[derive(Clone)]
pub struct Mailer {
    tenants: TenantRegistry,
    master_key: MasterKey,
}

impl Mailer {
    pub fn new(tenants: TenantRegistry, master_key: MasterKey) -> Mailer {
        Mailer { tenants, master_key }
    }

    /// Sends through the channel's provider, or records the message in the
    /// outbox when the channel has none.
    pub async fn send(&self, scope: &TenantScope, channel: &str, message: Message) -> Result<Sent, MessagingError> {
        match self.provider(scope, channel).await? {
            None => {
                let entry = entry(channel, NO_PROVIDER, &message);
                messaging::record_in_outbox(scope, entry).await?;
                Ok(Sent::Recorded)
            }
            Some(provider) => Ok(self.through(scope, &provider, &message, false).await?.0),
        }
    }

    /// A test send (`POST …/providers/messaging/test`): the provider must
    /// exist; its status and `verified_at` are recorded whatever happens.
    pub async fn test_send(
        &self,
        scope: &TenantScope,
        channel: &str,
        to: String,
    ) -> Result<messaging_provider::Model, MessagingError> {
        let provider =
            self.provider(scope, channel).await?.ok_or_else(|| MessagingError::NotFound(channel.to_string()))?;
        let message = Message {
            to,
            subject: "Gatehouse test message".to_string(),
            body: format!(
                "This message was sent through the `{}` {} provider of application {}.\n",
                provider.kind,
                provider.channel,
                scope.tenant().id
            ),
        };
        let (_, row) = self.through(scope, &provider, &message, true).await?;
        Ok(row.unwrap_or(provider))
    }

    async fn provider(
        &self,
        scope: &TenantScope,
        channel: &str,
    ) -> Result<Option<messaging_provider::Model>, MessagingError> {
        let state = self.tenants.state(scope).await.map_err(MessagingError::Tenant)?;
        Ok(state.messaging.iter().find(|p| p.channel == channel).cloned())
    }

    /// Sends through `provider`, then records the outcome on it.
    async fn through(
        &self,
        scope: &TenantScope,
        provider: &messaging_provider::Model,
        message: &Message,
        test: bool,
    ) -> Result<(Sent, Option<messaging_provider::Model>), MessagingError> {
        let result = match provider.kind.as_str() {
            "smtp" => self.smtp(provider, message).await.map(|()| Sent::Delivered),
            kind => {
                messaging::record_in_outbox(scope, entry(&provider.channel, kind, message)).await?;
                Ok(Sent::Recorded)
            }
        };
        let outcome = if result.is_ok() { Outcome::Delivered } else { Outcome::Failed };
        // Only a test send, or a send that changes the status, is a change.
        let row = if test || provider.status != outcome.status() {
            self.tenants
                .record_messaging_outcome(scope, provider.id, provider.updated_at, outcome, test)
                .await
                .map_err(MessagingError::Tenant)?
        } else {
            None
        };
        match result {
            Ok(sent) => Ok((sent, row)),
            Err(reason) => {
                tracing::info!(application_id = %scope.tenant().id, channel = %provider.channel, %reason,
                    "a message could not be sent");
                Err(MessagingError::SendFailed { kind: provider.kind.clone(), reason })
            }
        }
    }

    /// One message over SMTP. The failure says what went wrong in our
    /// words, never the server's text (a server could echo what it was sent).
    async fn smtp(&self, provider: &messaging_provider::Model, message: &Message) -> Result<(), String> {
        let config: SmtpConfig = serde_json::from_value(provider.config.clone())
            .map_err(|_| "the stored settings do not read".to_string())?;
        let password = messaging::open_secret(&self.master_key, provider)
            .map_err(|_| "the stored secret does not open for this provider".to_string())?;
        let from: Mailbox = config.from.parse().map_err(|_| "`config.from` is not a mailbox".to_string())?;
        let to: Mailbox = message.to.parse().map_err(|_| "the recipient is not an email address".to_string())?;
        let email = lettre::Message::builder()
            .from(from)
            .to(to)
            .subject(message.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(message.body.clone())
            .map_err(|_| "the message could not be built".to_string())?;
        let builder = if config.starttls {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&config.host).map_err(|err| describe(&err))?
        } else {
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&config.host)
        };
        let mut builder = builder.port(config.port).timeout(Some(SMTP_TIMEOUT));
        if let (Some(username), Some(password)) = (config.username, password) {
            builder = builder.credentials(Credentials::new(username, password));
        }
        builder.build().send(email).await.map(|_| ()).map_err(|err| describe(&err))
    }
}

fn entry<'a>(channel: &'a str, reason: &'a str, message: &'a Message) -> OutboxEntry<'a> {
    OutboxEntry { channel, reason, recipient: &message.to, subject: &message.subject, body: &message.body }
}

fn describe(err: &SmtpError) -> String {
    if err.is_timeout() {
        "the SMTP server did not answer in time".to_string()
    } else if err.is_tls() {
        "STARTTLS failed".to_string()
    } else if let Some(code) = err.status() {
        format!("the SMTP server refused it ({code})")
    } else if err.is_client() {
        "the SMTP server offers no way to sign in that we support, or no STARTTLS".to_string()
    } else {
        "the SMTP server could not be reached".to_string()
    }
}
