//! Sending a message through the application's provider for the channel:
//! the one way out for test sends, invitations and verification emails.
//! `smtp` sends over SMTP (lettre; STARTTLS required when `starttls` is
//! set, plain otherwise); `log` and `shared` (no relay is configured for the
//! shared sender in this build) record the message in the outbox, as does a
//! channel without a provider. Nothing is dropped. Each send's outcome
//! drives the provider's `status` through the tenant actor.
//!
//! An SMTP send resolves the host itself and dials only addresses the
//! application may reach ([`Reach`]: public ones, unless it is a
//! development application and the operator allows private destinations),
//! by address, so the address dialled is the address checked; STARTTLS
//! still verifies the certificate against the configured host name. A send
//! is bounded as a whole ([`SEND_DEADLINE`]: resolving, waiting for a slot,
//! connecting, the greeting, the dialogue), and an application has at most
//! [`SENDS_PER_APPLICATION`] in flight: more wait for a slot within their
//! deadline, then fail without touching the provider's status.
use std::{io::ErrorKind, net::SocketAddr, sync::Arc, time::Duration};

use entity::messaging_provider;
use lettre::{
    message::{header::ContentType, Mailbox},
    transport::smtp::{
        authentication::Credentials,
        client::{Tls, TlsParameters},
        Error as SmtpError,
    },
    AsyncSmtpTransport, AsyncTransport, Tokio1Executor,
};
use sea_orm::{ColumnTrait, QueryFilter};
use tokio::{
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};
use uuid::Uuid;

use super::messaging::{self, MessagingError, OutboxEntry, Outcome, SmtpConfig, NO_PROVIDER};
use crate::{
    crypto::master_key::MasterKey,
    events::url_safety::Reach,
    storage::{TenantConn, TenantScope},
    tenancy::registry::TenantRegistry,
};

/// One SMTP send, all of it: resolving the host, waiting for a slot,
/// connecting, the greeting, the dialogue and the message.
pub const SEND_DEADLINE: Duration = Duration::from_secs(10);
/// Connecting, and each command's answer (within [`SEND_DEADLINE`]).
const SMTP_TIMEOUT: Duration = Duration::from_secs(5);
/// SMTP sends in flight at once for one application.
pub const SENDS_PER_APPLICATION: usize = 4;
/// Addresses of one host tried in turn when one refuses the connection.
const MAX_ADDRESSES: usize = 4;
/// The reason recorded when the host resolves to no address the
/// application may reach (the webhooks' failure class of the same name).
pub const BLOCKED_DESTINATION: &str = "blocked_destination";

/// One message to one recipient (an email address, or an E.164 number for `sms`).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
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
    /// `security.allow_private_destinations`, as the settings read it.
    allow_private: bool,
    /// Each application's slots for SMTP sends. An entry idle for ten
    /// minutes goes; sends last seconds, so none in use does.
    slots: moka::sync::Cache<Uuid, Arc<Semaphore>>,
}

impl Mailer {
    pub fn new(tenants: TenantRegistry, master_key: MasterKey, allow_private: bool) -> Mailer {
        let slots = moka::sync::Cache::builder().time_to_idle(Duration::from_secs(600)).build();
        Mailer { tenants, master_key, allow_private, slots }
    }

    /// What an application of this environment's SMTP provider may reach.
    pub fn reach(&self, production: bool) -> Reach {
        Reach::of(production, self.allow_private)
    }

    /// A slot for one SMTP send of the application, waited for until `deadline`.
    async fn slot(&self, application_id: Uuid, deadline: Instant) -> Option<OwnedSemaphorePermit> {
        let slots = self.slots.get_with(application_id, || Arc::new(Semaphore::new(SENDS_PER_APPLICATION)));
        tokio::time::timeout_at(deadline, slots.acquire_owned()).await.ok()?.ok()
    }

    /// Sends through the channel's provider, or records the message in the
    /// outbox when the channel has none. The provider is read from the
    /// database, not through the application's tenant actor: a queued
    /// mail's send must not wait for the application's turn, which a region
    /// move holds while it waits for that send.
    pub async fn send(&self, scope: &TenantScope, channel: &str, message: Message) -> Result<Sent, MessagingError> {
        let provider = scope
            .find::<messaging_provider::Entity>()
            .filter(messaging_provider::Column::Channel.eq(channel))
            .one(scope.conn())
            .await?;
        match provider {
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
        Ok(state.part::<crate::areas::messaging::Providers>().iter().find(|p| p.channel == channel).cloned())
    }

    /// Sends through `provider`, then records the outcome on it.
    async fn through(
        &self,
        scope: &TenantScope,
        provider: &messaging_provider::Model,
        message: &Message,
        test: bool,
    ) -> Result<(Sent, Option<messaging_provider::Model>), MessagingError> {
        let deadline = Instant::now() + SEND_DEADLINE;
        let _slot = match provider.kind.as_str() {
            "smtp" => Some(
                self.slot(scope.tenant().id, deadline)
                    .await
                    .ok_or(MessagingError::Busy { kind: provider.kind.clone(), in_flight: SENDS_PER_APPLICATION })?,
            ),
            _ => None,
        };
        let result = match provider.kind.as_str() {
            "smtp" => {
                let reach = self.reach(scope.tenant().environment.is_live());
                match tokio::time::timeout_at(deadline, self.smtp(provider, message, reach)).await {
                    Ok(sent) => sent.map(|()| Sent::Delivered),
                    Err(_) => Err(format!("the SMTP server did not answer in time ({} s)", SEND_DEADLINE.as_secs())),
                }
            }
            kind => {
                messaging::record_in_outbox(scope, entry(&provider.channel, kind, message)).await?;
                Ok(Sent::Recorded)
            }
        };
        let outcome = if result.is_ok() { Outcome::Delivered } else { Outcome::Failed };
        let (provider_id, settings_at) = (provider.id, provider.updated_at);
        let record = {
            let (tenants, scope) = (self.tenants.clone(), scope.clone());
            async move {
                tenants
                    .change(&scope, move |turn| async move {
                        messaging::record_outcome(&turn, provider_id, settings_at, outcome, test).await
                    })
                    .await
            }
        };
        // Only a test send, or a send that changes the status, is a change.
        // A test send answers the row; a queued mail's send does not wait
        // for its application's turn (a region move may hold it), the next
        // send records its outcome too.
        let row = if test {
            record.await.map_err(MessagingError::Tenant)?
        } else {
            if provider.status != outcome.status() {
                actix::spawn(async move {
                    if let Err(err) = record.await {
                        tracing::warn!(error = %err.message, "a provider's status could not be recorded");
                    }
                });
            }
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

    /// One message over SMTP, to an address of the host that `reach`
    /// allows. The failure says what went wrong in our words, never the
    /// server's text (a server could echo what it was sent).
    async fn smtp(&self, provider: &messaging_provider::Model, message: &Message, reach: Reach) -> Result<(), String> {
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
        let addresses = resolve(&config.host, config.port, reach).await?;
        let tls = match config.starttls {
            // The certificate is checked against the host name, whatever address is dialled.
            true => Some(TlsParameters::new(config.host.clone()).map_err(|err| describe(&err))?),
            false => None,
        };
        let credentials = match (config.username, password) {
            (Some(username), Some(password)) => Some(Credentials::new(username, password)),
            _ => None,
        };
        let mut last = None;
        for address in addresses {
            // The address, not the name: lettre resolves nothing, so it dials what was checked.
            let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(address.ip().to_string())
                .port(address.port())
                .timeout(Some(SMTP_TIMEOUT));
            if let Some(tls) = &tls {
                builder = builder.tls(Tls::Required(tls.clone()));
            }
            if let Some(credentials) = &credentials {
                builder = builder.credentials(credentials.clone());
            }
            match builder.build().send(email.clone()).await {
                Ok(_) => return Ok(()),
                // Nothing reached this address: the next one may be up.
                Err(err) if not_dialled(&err) => last = Some(err),
                Err(err) => return Err(describe(&err)),
            }
        }
        Err(last.map(|err| describe(&err)).unwrap_or_else(|| "the SMTP server could not be reached".to_string()))
    }
}

/// The addresses of `host` that `reach` allows, in the resolver's order (at
/// most [`MAX_ADDRESSES`]); none: the destination is refused, with nothing dialled.
async fn resolve(host: &str, port: u16, reach: Reach) -> Result<Vec<SocketAddr>, String> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| "the SMTP host does not resolve".to_string())?
        .collect();
    let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| reach.allows(a.ip())).take(MAX_ADDRESSES).collect();
    if allowed.is_empty() {
        return Err(format!(
            "the SMTP host resolves to no public address, so nothing was dialled ({BLOCKED_DESTINATION})"
        ));
    }
    Ok(allowed)
}

/// The connection itself was refused or had no route: nothing was sent.
fn not_dialled(err: &SmtpError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::AddrNotAvailable
            );
        }
        source = cause.source();
    }
    false
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
