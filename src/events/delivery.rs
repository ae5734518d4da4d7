//! Delivery workers: one per shard this node holds. A worker claims due
//! messages with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL; on SQLite
//! the single writer makes the claiming `UPDATE … RETURNING` atomic), so
//! several nodes never send one attempt at once, and a crashed node's lease
//! expires and its messages are taken over. Each attempt is recorded; a
//! failure is retried by the schedule; a message that exhausts it, or an
//! answer of 410, disables the endpoint.
//!
//! A worker serves every application of its region: it has no principal,
//! and each row it claims names its application. The queue's statements
//! are in `storage::delivery_queue`; the few here (an endpoint read, its
//! disabling, the attempts) are allowed one by one, each with its reason.
use std::{collections::HashMap, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use entity::{webhook, webhook_attempt, webhook_message};
use sea_orm::{sea_query::Expr, ActiveValue::Set, ColumnTrait, DbErr, EntityTrait, QueryFilter};
use serde_json::json;
use tokio::{
    sync::{mpsc, Semaphore},
    task::JoinHandle,
};
use uuid::Uuid;

use super::{
    outbox, schedule, signing,
    url_safety::{self, Reach},
};
use crate::{
    audit::{self, personal, Actor},
    clock,
    config::WebhookSettings,
    crypto::{master_key::MasterKey, seal},
    events::catalog::EventType,
    region::{
        router::{Directory, Serving},
        Shard,
    },
    shutdown::Shutdown,
    storage::{
        delivery_queue::{self, Leased, Settlement},
        per_shard, Db, Storage,
    },
};

/// When a message of an application this region does not serve now (it
/// is moving) is looked at again.
const NOT_HERE_AFTER: Duration = Duration::from_millis(250);
/// When a leftover message (its application served by another database,
/// and not moving) is looked at again.
const LEFTOVER_AFTER: Duration = Duration::from_secs(600);
/// Outcomes written per transaction at most.
const RECORD_BATCH: usize = 256;
/// How much of an answer is read (and dropped) so the connection can be reused.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub const SUCCEEDED: &str = "succeeded";
pub const FAILED: &str = "failed";
pub const DISABLED: &str = "disabled";

/// The HTTP clients of deliveries and hook calls: redirects are never
/// followed; unless the application may reach private destinations (a
/// development application, and the operator allows it), names resolve to
/// public addresses only, so the address dialled is the address checked (no
/// DNS rebinding).
#[derive(Clone)]
pub struct Clients {
    open: reqwest::Client,
    public_only: reqwest::Client,
    /// `security.allow_private_destinations`, as [`crate::config::Settings::private_destinations_allowed`] reads it.
    allow_private: bool,
}

impl Clients {
    pub fn build(timeout: Duration, allow_private: bool) -> Result<Clients, reqwest::Error> {
        let builder = || {
            reqwest::Client::builder()
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                // A proxy would resolve names itself, past the address check.
                .no_proxy()
                .pool_max_idle_per_host(32)
                .user_agent("Gatehouse-Webhooks/1")
        };
        Ok(Clients {
            open: builder().build()?,
            public_only: builder().dns_resolver(url_safety::public_only_resolver()).build()?,
            allow_private,
        })
    }

    /// What an application of this environment may reach.
    pub fn reach(&self, production: bool) -> Reach {
        Reach::of(production, self.allow_private)
    }

    /// The client for `reach`: public addresses only are checked again
    /// after DNS resolution.
    pub fn client(&self, reach: Reach) -> &reqwest::Client {
        match reach {
            Reach::PrivateToo => &self.open,
            Reach::PublicOnly => &self.public_only,
        }
    }
}

/// The error class recorded for a request that got no answer (webhook
/// deliveries and hook calls alike): `timeout`, `blocked_destination`,
/// `connect` or `request`, judged by the error's kind and its sources.
pub fn failure_class(err: &reqwest::Error) -> &'static str {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if cause.is::<url_safety::BlockedDestination>() {
            return "blocked_destination";
        }
        source = cause.source();
    }
    if err.is_timeout() {
        "timeout"
    } else if err.is_connect() {
        "connect"
    } else {
        "request"
    }
}

/// What the delivery workers work with.
pub struct Deliverer {
    pub settings: WebhookSettings,
    /// Whether an application is live (which destinations it may reach).
    pub directory: Directory,
    pub clients: Clients,
    /// Opens the endpoints' signing secrets.
    pub master_key: MasterKey,
    /// The held regions' databases.
    pub storage: Arc<Storage>,
    pub shutdown: Shutdown,
}

/// Starts one worker per held shard (and per shard opened later) on the
/// current arbiter; each ends after the node's shutdown signal, once its
/// outcomes are recorded.
pub fn start(deliverer: Deliverer) -> JoinHandle<()> {
    let deliverer = Arc::new(deliverer);
    let (storage, shutdown) = (deliverer.storage.clone(), deliverer.shutdown.clone());
    per_shard::spawn(storage, shutdown, move |at, shard| run(deliverer.clone(), at, shard))
}

/// Claims due messages while permits are free and delivers each in its own
/// task; outcomes go to one recorder that writes them in batches, so a
/// thousand deliveries cost a few commits, and a slow endpoint holds one
/// permit, not the worker.
async fn run(state: Arc<Deliverer>, at: Shard, shard: Db) {
    let poll = Duration::from_millis(state.settings.poll_interval_ms.max(10));
    let lease = Duration::from_secs(state.settings.lease_seconds);
    let permits = Arc::new(Semaphore::new(state.settings.concurrency.max(1)));
    let concurrency = permits.available_permits() as u32;
    let (outcomes, recorded) = mpsc::channel(RECORD_BATCH * 4);
    // Checked at start-up, so this parse succeeds.
    let delays = schedule::parse(&state.settings.retry_schedule).unwrap_or_else(|_| vec![Duration::ZERO]);
    let recorder = actix::spawn(recorder(delays, shard.clone(), recorded));
    let shutdown = state.shutdown.clone();
    while !shutdown.is_signalled() {
        // Wait for at least one free permit before claiming anything.
        tokio::select! {
            permit = permits.clone().acquire_owned() => drop(permit.expect("never closed")),
            () = shutdown.signalled() => break,
        }
        let free = permits.available_permits() as u64;
        let claimed = match delivery_queue::lease_due::<webhook_message::Entity>(&shard, free, lease).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(error = %err, region = %shard.label, "claiming webhook deliveries failed");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = shutdown.signalled() => {}
            }
            continue;
        }
        let endpoints = match endpoints_of(&shard, &claimed).await {
            Ok(endpoints) => endpoints,
            Err(err) => {
                tracing::warn!(error = %err, "loading webhook endpoints failed; the leases will expire");
                tokio::time::sleep(poll).await;
                continue;
            }
        };
        for message in claimed {
            let tenant = match state.directory.serving(message.application_id, at, &state.storage).await {
                Serving::Here(tenant) => tenant,
                Serving::Gone => {
                    finish_without_attempt(&shard, &message).await;
                    continue;
                }
                serving @ (Serving::NotNow | Serving::Elsewhere) => {
                    let leased = Leased {
                        application_id: message.application_id,
                        id: message.id,
                        lease_until: message.lease_until,
                    };
                    let after = if matches!(serving, Serving::NotNow) { NOT_HERE_AFTER } else { LEFTOVER_AFTER };
                    if let Err(err) = delivery_queue::release::<webhook_message::Entity>(&shard, leased, after).await {
                        tracing::warn!(error = %err, "releasing a webhook message failed; its lease will expire");
                    }
                    continue;
                }
            };
            let production = tenant.environment.is_live();
            let endpoint = endpoints
                .get(&message.webhook_id)
                .filter(|e| e.application_id == message.application_id && e.status == outbox::ACTIVE)
                .cloned();
            let Some(endpoint) = endpoint else {
                finish_without_attempt(&shard, &message).await;
                continue;
            };
            // Opened now, not when queued: a user erased meanwhile is not in it.
            let body = match personal::reveal_payload(
                &shard.conn,
                &state.master_key,
                message.application_id,
                &message.payload,
            )
            .await
            {
                Ok(body) => body,
                Err(err) => {
                    tracing::warn!(error = %err, "opening a webhook message's personal data failed; its lease will expire");
                    continue;
                }
            };
            let permit = permits.clone().acquire_owned().await.expect("never closed");
            let (state, outcomes) = (state.clone(), outcomes.clone());
            actix::spawn(async move {
                let outcome = attempt(&state, &endpoint, &message, &body, production).await;
                metrics::counter!("gatehouse_webhook_attempts_total", "outcome" => if outcome.succeeded() { "succeeded" } else { "failed" })
                    .increment(1);
                metrics::histogram!("gatehouse_webhook_message_age_seconds")
                    .record((clock::now() - message.created_at).num_milliseconds().max(0) as f64 / 1000.0);
                let _ = outcomes.send((endpoint, message, outcome)).await;
                drop(permit);
            });
        }
    }
    // Stopping: every delivery in flight holds a permit and hands its
    // outcome over before letting go; then the recorder writes what it got.
    drop(permits.acquire_many(concurrency).await);
    drop(outcomes);
    let _ = recorder.await;
}

type Recorded = (webhook::Model, webhook_message::Model, Outcome);

/// Writes outcomes in batches: whatever has arrived, up to [`RECORD_BATCH`].
async fn recorder(delays: Vec<Duration>, shard: Db, mut outcomes: mpsc::Receiver<Recorded>) {
    let mut batch = Vec::with_capacity(RECORD_BATCH);
    while outcomes.recv_many(&mut batch, RECORD_BATCH).await > 0 {
        if let Err(err) = record(&delays, &shard, &batch).await {
            tracing::warn!(error = %err, "recording webhook attempts failed; their leases will expire and they are retried");
        }
        batch.clear();
    }
}

/// The endpoints of a claimed batch, in one query.
#[allow(clippy::disallowed_methods)] // by the claimed messages' own endpoint ids, across applications
async fn endpoints_of(shard: &Db, messages: &[webhook_message::Model]) -> Result<HashMap<Uuid, webhook::Model>, DbErr> {
    let ids: Vec<Uuid> =
        messages.iter().map(|m| m.webhook_id).collect::<std::collections::HashSet<_>>().into_iter().collect();
    let rows = webhook::Entity::find().filter(webhook::Column::Id.is_in(ids)).all(&shard.conn).await?;
    Ok(rows.into_iter().map(|row| (row.id, row)).collect())
}

/// What one attempt came to.
struct Outcome {
    status: Option<u16>,
    error: Option<&'static str>,
    duration_ms: i64,
    retry_after: Option<Duration>,
}

impl Outcome {
    fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// One attempt of `body` (the message's payload as sent); `production`:
/// whether the message's application is live (which destinations it may
/// reach), as the directory said at the claim.
async fn attempt(
    state: &Deliverer,
    endpoint: &webhook::Model,
    message: &webhook_message::Model,
    body: &str,
    production: bool,
) -> Outcome {
    let started = std::time::Instant::now();
    let failed = |error: &'static str| Outcome {
        status: None,
        error: Some(error),
        duration_ms: started.elapsed().as_millis() as i64,
        retry_after: None,
    };
    let reach = state.clients.reach(production);
    let Ok(url) = url_safety::check(&endpoint.url, production, reach) else {
        return failed("blocked_destination");
    };
    let Some(signature) = signatures(state, endpoint, message, body) else {
        return failed("secret_unavailable");
    };
    let client = state.clients.client(reach);
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", message.id.to_string())
        .header("webhook-timestamp", signature.0.to_string())
        .header("webhook-signature", signature.1)
        .body(body.to_string())
        .send()
        .await;
    let mut response = match response {
        Ok(response) => response,
        Err(err) => return failed(failure_class(&err)),
    };
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map(|s| Duration::from_secs(s.min(86_400)));
    let mut read = 0;
    while let Ok(Some(chunk)) = response.chunk().await {
        read += chunk.len();
        if read > MAX_ANSWER_BYTES {
            break;
        }
    }
    let error =
        (!(200..300).contains(&status)).then_some(if (300..400).contains(&status) { "redirect" } else { "status" });
    Outcome { status: Some(status), error, duration_ms: started.elapsed().as_millis() as i64, retry_after }
}

/// The timestamp and the `webhook-signature` value: the current secret, and
/// during the day after a rotation the previous one too.
fn signatures(
    state: &Deliverer,
    endpoint: &webhook::Model,
    message: &webhook_message::Model,
    body: &str,
) -> Option<(i64, String)> {
    let context = secret_context(endpoint.application_id, endpoint.id);
    let open =
        |sealed: &[u8]| seal::open(&state.master_key, &context, sealed).ok().and_then(|s| String::from_utf8(s).ok());
    let timestamp = Utc::now().timestamp();
    let id = message.id.to_string();
    let mut signatures = vec![signing::sign(&open(&endpoint.secret_sealed)?, &id, timestamp, body)];
    if let (Some(previous), Some(until)) = (&endpoint.previous_secret_sealed, endpoint.previous_secret_expires_at) {
        if until > Utc::now() {
            signatures.extend(open(previous).map(|secret| signing::sign(&secret, &id, timestamp, body)));
        }
    }
    Some((timestamp, signatures.join(" ")))
}

/// What a webhook's signing secret is sealed to.
pub fn secret_context(application_id: Uuid, webhook_id: Uuid) -> String {
    format!("{application_id}/webhooks/{webhook_id}/secret")
}

#[allow(clippy::disallowed_methods)] // each attempt row carries its message's application
async fn record(delays: &[Duration], shard: &Db, batch: &[Recorded]) -> Result<(), DbErr> {
    let now = clock::now();
    let decided: Vec<Decided> = batch.iter().map(|recorded| Decided::new(delays, now, recorded)).collect();
    let txn = shard.begin_write().await?;
    // Only while the claim is still ours: a message whose lease expired
    // (or was retried by hand) belongs to its new owner, who records it.
    let settlements: Vec<Settlement> = decided.iter().map(Decided::settlement).collect();
    let updated = delivery_queue::settle(&*txn, shard.backend(), &settlements).await?;
    for decided in &decided {
        // A message failing its last scheduled attempt disables the endpoint;
        // a failed manual retry beyond the schedule does not, again.
        let (endpoint, message, _) = decided.recorded;
        if decided.status == FAILED && decided.exhausted_now && updated.contains(&message.id) {
            let reason =
                if decided.gone { "endpoint answered 410 Gone" } else { "a message exhausted the retry schedule" };
            disable(&*txn, endpoint, reason).await?;
        }
    }
    let attempts = decided.iter().map(|d| d.attempt(now));
    webhook_attempt::Entity::insert_many(attempts).exec_without_returning(&*txn).await?;
    txn.commit().await
}

/// What one outcome makes of its message.
struct Decided<'a> {
    recorded: &'a Recorded,
    status: &'static str,
    attempts_made: i32,
    next_attempt_at: Option<DateTime<Utc>>,
    gone: bool,
    /// This attempt was the schedule's last (or the endpoint is gone).
    exhausted_now: bool,
}

impl<'a> Decided<'a> {
    fn new(delays: &[Duration], now: DateTime<Utc>, recorded: &'a Recorded) -> Self {
        let (_, message, outcome) = recorded;
        let attempts_made = message.attempts_made + 1;
        let gone = outcome.status == Some(410);
        let (status, next_attempt_at) = if outcome.succeeded() {
            (SUCCEEDED, None)
        } else if gone || attempts_made as usize >= delays.len() {
            (FAILED, None)
        } else {
            let delay =
                schedule::with_jitter(delays[attempts_made as usize]).max(outcome.retry_after.unwrap_or_default());
            (outbox::PENDING, Some(now + chrono::Duration::from_std(delay).unwrap_or_default()))
        };
        let exhausted_now = attempts_made as usize == delays.len() || gone;
        Decided { recorded, status, attempts_made, next_attempt_at, gone, exhausted_now }
    }

    fn settlement(&self) -> Settlement {
        let (_, message, _) = self.recorded;
        Settlement {
            application_id: message.application_id,
            id: message.id,
            lease_until: message.lease_until,
            status: self.status,
            attempts_made: self.attempts_made,
            next_attempt_at: self.next_attempt_at,
        }
    }

    fn attempt(&self, now: DateTime<Utc>) -> webhook_attempt::ActiveModel {
        let (_, message, outcome) = self.recorded;
        webhook_attempt::ActiveModel {
            id: Set(Uuid::now_v7()),
            application_id: Set(message.application_id),
            message_id: Set(message.id),
            attempt: Set(self.attempts_made),
            response_status: Set(outcome.status.map(i32::from)),
            duration_ms: Set(outcome.duration_ms),
            error: Set(outcome.error.map(str::to_owned)),
            attempted_at: Set(now),
        }
    }
}

/// Disables an active endpoint and records why (a system change).
#[allow(clippy::disallowed_methods)] // by the endpoint's own application; its audit row in the same transaction
async fn disable(db: &impl sea_orm::ConnectionTrait, endpoint: &webhook::Model, reason: &str) -> Result<(), DbErr> {
    let changed = webhook::Entity::update_many()
        .col_expr(webhook::Column::Status, Expr::value(DISABLED))
        .col_expr(webhook::Column::UpdatedAt, Expr::value(clock::now()))
        .filter(webhook::Column::ApplicationId.eq(endpoint.application_id))
        .filter(webhook::Column::Id.eq(endpoint.id))
        .filter(webhook::Column::Status.eq(outbox::ACTIVE))
        .exec(db)
        .await?;
    if changed.rows_affected > 0 {
        let entry = audit::Entry {
            id: None,
            actor: &Actor::system(),
            event_type: EventType::WebhookEndpointDisabled.as_str(),
            aggregate_id: Some(endpoint.id),
            data: json!({"host": host_of(&endpoint.url), "reason": reason}),
        };
        audit::append(db, endpoint.application_id, vec![entry]).await?;
    }
    Ok(())
}

/// The host of an endpoint's URL: what audit rows say of it, since a URL
/// itself can be a credential (chat-service webhook URLs are).
pub fn host_of(url: &str) -> String {
    url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default()
}

/// A message whose endpoint was deleted or disabled is not sent.
#[allow(clippy::disallowed_methods)] // by the message's own application
async fn finish_without_attempt(shard: &Db, message: &webhook_message::Model) {
    let result = async {
        let txn = shard.begin_write().await?;
        webhook_message::Entity::update_many()
            .col_expr(webhook_message::Column::Status, Expr::value(FAILED))
            .col_expr(webhook_message::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
            .col_expr(webhook_message::Column::LeaseUntil, Expr::value(Option::<DateTime<Utc>>::None))
            .filter(webhook_message::Column::ApplicationId.eq(message.application_id))
            .filter(webhook_message::Column::Id.eq(message.id))
            .exec(&*txn)
            .await?;
        txn.commit().await
    };
    if let Err(err) = result.await {
        tracing::warn!(error = %err, "closing an undeliverable webhook message failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_that_resolves_only_to_internal_addresses_is_a_blocked_destination() {
        let clients = Clients::build(Duration::from_secs(2), true).unwrap();
        // Production: `localhost` resolves, but only to loopback, so nothing is dialled.
        let err = clients.client(clients.reach(true)).post("https://localhost:1/").send().await.unwrap_err();
        assert_eq!(failure_class(&err), "blocked_destination");
        // Development, where the operator allows it, dials it, and nobody listens there.
        let err = clients.client(clients.reach(false)).post("http://127.0.0.1:1/").send().await.unwrap_err();
        assert_eq!(failure_class(&err), "connect");
        // Where the operator does not, a development application is refused as production is.
        let strict = Clients::build(Duration::from_secs(2), false).unwrap();
        let err = strict.client(strict.reach(false)).post("http://localhost:1/").send().await.unwrap_err();
        assert_eq!(failure_class(&err), "blocked_destination");
    }
}
