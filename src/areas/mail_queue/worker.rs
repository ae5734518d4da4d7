//! The mail worker: one per shard this node holds. It leases due mail
//! (`storage::delivery_queue`, the webhook queue's lease), prepares a job
//! into its message (the code or token made once, in the application's
//! transaction), sends it through the application's email provider, and
//! settles the row: `sent`, `skipped` (nothing to send), retried on the
//! schedule, or `failed` once the schedule is spent.
//!
//! It acts only on mail of applications its region's database serves now:
//! not moving, and pinned there. A region move waits for leased mail to
//! settle before it copies, so what the old region sent is copied as sent
//! and the new region sends the rest: each email once. (A crash between a
//! send and its settling sends that email again once the lease expires:
//! an SMTP send and a database commit cannot be one step.)
use std::{collections::BTreeMap, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use entity::{mail_queue, user};
use futures_util::StreamExt;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, EntityTrait, QueryFilter, UpdateMany};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::Mail;
use crate::{
    areas::{
        email_verifications,
        mailer::{Mailer, Message, SENDS_PER_APPLICATION, SEND_DEADLINE},
        password_resets, users,
    },
    audit::Actor,
    clock,
    crypto::master_key::MasterKey,
    events::outbox::PENDING,
    region::{
        router::{Directory, Serving},
        Shard,
    },
    shutdown::Shutdown,
    storage::{
        delivery_queue::{self, Leased},
        per_shard, Db, Storage, TenantConn, TenantScope, Unaudited,
    },
};

pub const SENT: &str = "sent";
pub const SKIPPED: &str = "skipped";
pub const FAILED: &str = "failed";

/// Mail leased at once by one worker.
const BATCH: u64 = 32;
/// How long a lease lasts: a send is bounded by the mailer's 10 s deadline
/// ([`SEND_DEADLINE`]); a row still waiting its turn when less than that is
/// left is let go, not sent.
pub const LEASE: Duration = Duration::from_secs(30);
/// How often an idle worker looks for due mail.
const POLL: Duration = Duration::from_millis(100);
/// Waits before the attempts after the first; then the mail has failed.
/// A code lives 15 minutes and a reset token 30.
const RETRY_AFTER: [Duration; 3] = [Duration::from_secs(10), Duration::from_secs(60), Duration::from_secs(300)];
/// When mail of an application this region does not serve now (it is
/// moving) is looked at again.
const NOT_HERE_AFTER: Duration = Duration::from_millis(250);
/// When a leftover row (its application served by another database, and
/// not moving) is looked at again.
const LEFTOVER_AFTER: Duration = Duration::from_secs(600);
/// How long settled rows are kept (their sealed text is emptied at once).
const KEEP_SETTLED: chrono::Duration = chrono::Duration::days(7);

/// What the mail workers work with.
pub struct MailWorker {
    pub mailer: Mailer,
    pub master_key: MasterKey,
    pub directory: Directory,
    pub storage: Arc<Storage>,
    pub shutdown: Shutdown,
}

/// Starts one worker per held shard (and per shard opened later) on the
/// current arbiter; each ends after the node's shutdown signal, once its
/// batch in hand is settled.
pub fn start(worker: MailWorker) -> JoinHandle<()> {
    let worker = Arc::new(worker);
    let (storage, shutdown) = (worker.storage.clone(), worker.shutdown.clone());
    per_shard::spawn(storage, shutdown, move |at, shard| run(worker.clone(), at, shard))
}

async fn run(worker: Arc<MailWorker>, at: Shard, shard: Db) {
    let shutdown = worker.shutdown.clone();
    let mut purged_at = std::time::Instant::now();
    while !shutdown.is_signalled() {
        let claimed = match delivery_queue::lease_due::<mail_queue::Entity>(&shard, BATCH, LEASE).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(error = %err, shard = %at, "claiming mail failed");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            if purged_at.elapsed() > Duration::from_secs(600) {
                purged_at = std::time::Instant::now();
                if let Err(err) = purge_settled(&shard).await {
                    tracing::warn!(error = %err, "removing old settled mail failed");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = shutdown.signalled() => {}
            }
            continue;
        }
        // Each application's mail in turn, as many at once as the mailer
        // sends for it: a row is checked just before its send, so once an
        // application starts moving, its mail still waiting is let go at
        // once, and a move waits for a few sends at most.
        let mut by_application: BTreeMap<Uuid, Vec<mail_queue::Model>> = BTreeMap::new();
        for row in claimed {
            by_application.entry(row.application_id).or_default().push(row);
        }
        let applications = by_application.into_values().map(|rows| {
            futures_util::stream::iter(rows)
                .for_each_concurrent(SENDS_PER_APPLICATION, |row| handle(&worker, at, &shard, row))
        });
        futures_util::future::join_all(applications).await;
    }
}

/// One leased row, from its lease to its settling.
async fn handle(worker: &MailWorker, at: Shard, shard: &Db, row: mail_queue::Model) {
    let tenant = match worker.directory.serving(row.application_id, at, &worker.storage).await {
        Serving::Here(tenant) => tenant,
        // Its application was deleted: there is no one to write to.
        Serving::Gone => return settle(shard, &row, SKIPPED).await,
        Serving::NotNow => return release(shard, &row, NOT_HERE_AFTER).await,
        Serving::Elsewhere => return release(shard, &row, LEFTOVER_AFTER).await,
    };
    // Waiting for its turn took so long that the lease could lapse during
    // the send, and another worker send it too: due again at once instead.
    let send_by = clock::now() + chrono::Duration::from_std(SEND_DEADLINE).unwrap_or_default();
    if row.lease_until.is_some_and(|until| until < send_by) {
        return release(shard, &row, Duration::ZERO).await;
    }
    let scope = TenantScope::new(tenant, shard.clone(), Actor::system());
    let Some(mail) = Mail::open(&worker.master_key, &row) else {
        tracing::warn!(mail_id = %row.id, "a queued mail could not be opened; it is dropped");
        return settle(shard, &row, FAILED).await;
    };
    let message = match mail {
        Mail::Message(message) => message,
        job => match prepare(worker, &scope, &row, job).await {
            Ok(Some(message)) => message,
            Ok(None) => {
                metrics::counter!("gatehouse_mail_total", "outcome" => SKIPPED).increment(1);
                return;
            }
            Err(err) => {
                tracing::warn!(error = %err, mail_id = %row.id, "preparing a mail failed");
                return retry(shard, &row).await;
            }
        },
    };
    match worker.mailer.send(&scope, "email", message).await {
        Ok(_) => settle(shard, &row, SENT).await,
        Err(err) => {
            tracing::warn!(error = %err, mail_id = %row.id, "a mail could not be sent");
            retry(shard, &row).await
        }
    }
}

/// Makes the job's code or token and its message, and puts the message in
/// the row (or settles it `skipped` when there is nothing to send), in one
/// transaction of the application that commits only while the row's lease
/// is still this worker's: whatever befalls the send, the code is made once.
async fn prepare(
    worker: &MailWorker,
    scope: &TenantScope,
    row: &mail_queue::Model,
    job: Mail,
) -> Result<Option<Message>, DbErr> {
    let mut txn = scope.acting_as(job.preparer()).begin().await?;
    let application = scope.tenant().name.clone();
    let message = match job {
        Mail::Message(message) => Some(message),
        Mail::VerificationCode { user_id } => match txn.find_by_id::<user::Entity>(user_id).one(txn.conn()).await? {
            Some(user) => email_verifications::issue(&mut txn, &worker.master_key, &application, &user).await?,
            None => None,
        },
        Mail::VerificationResend { email } => match users::find_by_email(&txn, &email).await? {
            Some(user) => email_verifications::issue(&mut txn, &worker.master_key, &application, &user).await?,
            None => None,
        },
        Mail::PasswordReset { email, redirect_uri } => match users::find_by_email(&txn, &email).await? {
            Some(user) => Some(password_resets::issue(&mut txn, &application, &user, redirect_uri.as_deref()).await?),
            None => None,
        },
    };
    let now = clock::now();
    let kept = match &message {
        Some(message) => {
            let sealed = Mail::Message(message.clone()).seal(&worker.master_key, row.application_id, row.id);
            txn.update_many(|q: UpdateMany<mail_queue::Entity>| {
                q.col_expr(mail_queue::Column::Kind, Expr::value("message"))
                    .col_expr(mail_queue::Column::Sealed, Expr::value(sealed))
                    .filter(mail_queue::Column::Id.eq(row.id))
                    .filter(mail_queue::Column::LeaseUntil.eq(row.lease_until))
            })
            .await?
        }
        None => {
            txn.update_many(|q: UpdateMany<mail_queue::Entity>| {
                settled(q, SKIPPED, row.attempts_made + 1, now)
                    .filter(mail_queue::Column::Id.eq(row.id))
                    .filter(mail_queue::Column::LeaseUntil.eq(row.lease_until))
            })
            .await?
        }
    };
    if kept == 0 {
        drop(txn); // rolled back
        return Err(DbErr::Custom("the mail's lease was taken over while it was prepared".into()));
    }
    txn.unaudited(Unaudited::MailQueue);
    txn.commit().await?;
    Ok(message)
}

/// A row settled: its status, the attempt counted, its sealed text gone.
fn settled(
    q: UpdateMany<mail_queue::Entity>,
    status: &'static str,
    attempts_made: i32,
    now: DateTime<Utc>,
) -> UpdateMany<mail_queue::Entity> {
    q.col_expr(mail_queue::Column::Status, Expr::value(status))
        .col_expr(mail_queue::Column::AttemptsMade, Expr::value(attempts_made))
        .col_expr(mail_queue::Column::Sealed, Expr::value(Vec::<u8>::new()))
        .col_expr(mail_queue::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(mail_queue::Column::LeaseUntil, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(mail_queue::Column::SettledAt, Expr::value(Some(now)))
}

async fn settle(shard: &Db, row: &mail_queue::Model, status: &'static str) {
    metrics::counter!("gatehouse_mail_total", "outcome" => status).increment(1);
    let now = clock::now();
    update_leased(shard, row, |q| settled(q, status, row.attempts_made + 1, now)).await;
}

/// A failed attempt: tried again on the schedule, or `failed` once it is spent.
async fn retry(shard: &Db, row: &mail_queue::Model) {
    let attempts_made = row.attempts_made + 1;
    let Some(delay) = RETRY_AFTER.get(row.attempts_made as usize) else {
        return settle(shard, row, FAILED).await;
    };
    metrics::counter!("gatehouse_mail_total", "outcome" => "retried").increment(1);
    let next = clock::now() + chrono::Duration::from_std(*delay).unwrap_or_default();
    update_leased(shard, row, |q| {
        q.col_expr(mail_queue::Column::AttemptsMade, Expr::value(attempts_made))
            .col_expr(mail_queue::Column::NextAttemptAt, Expr::value(Some(next)))
            .col_expr(mail_queue::Column::LeaseUntil, Expr::value(Option::<DateTime<Utc>>::None))
    })
    .await;
}

/// Lets go of a row without an attempt, to be looked at again `after`.
async fn release(shard: &Db, row: &mail_queue::Model, after: Duration) {
    if let Err(err) = delivery_queue::release::<mail_queue::Entity>(shard, leased(row), after).await {
        tracing::warn!(error = %err, mail_id = %row.id, "releasing a mail failed; its lease will expire");
    }
}

/// Changes a leased row while the lease is still this worker's.
async fn update_leased(
    shard: &Db,
    row: &mail_queue::Model,
    build: impl FnOnce(UpdateMany<mail_queue::Entity>) -> UpdateMany<mail_queue::Entity>,
) {
    if let Err(err) = delivery_queue::update_leased::<mail_queue::Entity>(shard, leased(row), build).await {
        tracing::warn!(error = %err, mail_id = %row.id, "settling a mail failed; its lease will expire and it is retried");
    }
}

fn leased(row: &mail_queue::Model) -> Leased {
    Leased { application_id: row.application_id, id: row.id, lease_until: row.lease_until }
}

/// Removes the region's mail settled more than [`KEEP_SETTLED`] ago.
#[allow(clippy::disallowed_methods)] // the region's queue across applications, settled rows only
async fn purge_settled(shard: &Db) -> Result<(), DbErr> {
    let before = clock::now() - KEEP_SETTLED;
    let txn = shard.begin_write().await?;
    mail_queue::Entity::delete_many()
        .filter(mail_queue::Column::Status.ne(PENDING))
        .filter(mail_queue::Column::SettledAt.lt(before))
        .exec(&*txn)
        .await?;
    txn.commit().await
}
