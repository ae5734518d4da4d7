//! Refresh-token rotation, group-committed. Every rotation writes its
//! audit row, and audit rows of one application take turns on the chain's
//! head row until their transaction commits; one rotation per transaction
//! would cap an application at one commit (one WAL flush) per rotation.
//! Instead each region has one rotator task: rotations queue to it, and it
//! takes everything queued into one transaction (a few statements for the
//! whole batch plus one audit row each) and one commit. Under light load a
//! batch is one rotation; under heavy load the batch grows and the cost of
//! the commit is shared. Nothing is answered before its commit. On
//! PostgreSQL two batches are in flight ([`rotators`]).
//!
//! The batch spans applications, so it cannot use one application's
//! `TenantTxn`: its queries are raw and each names the application of every
//! row it touches (allowed by name for clippy's `disallowed_methods`), and
//! its audit rows go through `audit::append`, one group per application.
#![allow(clippy::disallowed_methods)]
use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use chrono::Duration;
use entity::{refresh_token, session};
use sea_orm::{sea_query::Expr, ColumnTrait, Condition, DbBackend, DbErr, EntityTrait, QueryFilter};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, Mutex};
use uuid::Uuid;

use super::sessions::{self, Opened, RefreshRefused};
use crate::{
    audit::{self, Actor},
    crypto::sha256,
    error::ApiError,
    events::catalog::EventType,
    region::{Region, Shard},
    storage::{Db, Storage, TenantScope},
};

/// Rotations one transaction takes at most.
const MAX_BATCH: usize = 128;
const QUEUE: usize = 4096;

/// Why a rotation could not be decided (a refused token is an answer, not
/// an error: [`RefreshRefused`]).
#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    #[error("the region {0} is not held here")]
    RegionNotHeld(Region),
    /// The region's rotator is gone (the node is stopping).
    #[error("the rotator has stopped")]
    Stopped,
    /// The batch's transaction failed: every rotation in it gets the error.
    #[error("a rotation batch failed")]
    Batch(#[source] Arc<DbErr>),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<RotationError> for ApiError {
    fn from(err: RotationError) -> Self {
        match err {
            RotationError::RegionNotHeld(_) => ApiError::unavailable("The region is not held here."),
            RotationError::Stopped => ApiError::unavailable("Sessions are unavailable; try again shortly."),
            RotationError::Batch(err) => ApiError::from(&*err),
            RotationError::Db(err) => err.into(),
        }
    }
}

/// What the batch decided for one rotation.
#[allow(clippy::large_enum_variant)] // made once per rotation and taken apart at once
enum Rotated {
    Done(Opened),
    /// The token is not a current one: unknown, or already rotated (reuse).
    NotCurrent,
    SessionEnded,
}

struct Job {
    application_id: Uuid,
    hash: Vec<u8>,
    reply: oneshot::Sender<Result<Rotated, Arc<DbErr>>>,
}

/// The rotators of each shard this node holds.
#[derive(Clone)]
pub struct Rotations {
    storage: Arc<Storage>,
    /// Each shard's queue, its rotators started on its first refresh.
    queues: Arc<std::sync::Mutex<HashMap<Shard, mpsc::Sender<Job>>>>,
    /// How far a refresh slides its session's expiry.
    ttl: Duration,
}

impl Rotations {
    pub fn new(storage: Arc<Storage>, ttl: Duration) -> Self {
        Self { storage, queues: Arc::default(), ttl }
    }

    /// The shard's queue, its rotator tasks started on first use (call
    /// inside the runtime).
    fn queue(&self, at: Shard) -> Result<mpsc::Sender<Job>, RotationError> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = queues.get(&at) {
            return Ok(queue.clone());
        }
        let shard = self.storage.shard(at).ok_or(RotationError::RegionNotHeld(at.region))?;
        let (sender, receiver) = mpsc::channel(QUEUE);
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..rotators(&shard) {
            actix::spawn(run(shard.clone(), self.ttl, receiver.clone()));
        }
        queues.insert(at, sender.clone());
        Ok(sender)
    }

    /// Rotates a refresh token: the presented one is marked rotated, a new
    /// one issued, the session's expiry slides forward. Of two requests
    /// presenting the same token, exactly one rotates it; presenting a
    /// rotated token revokes the session, unless it was rotated within the
    /// application's reuse interval ([`sessions::not_current`]).
    pub async fn rotate(
        &self,
        scope: &TenantScope,
        presented: &str,
    ) -> Result<Result<Opened, RefreshRefused>, RotationError> {
        let (application_id, at) = (scope.tenant().id, scope.tenant().shard());
        if !sessions::is_refresh_token_shape(presented) {
            return Ok(Err(RefreshRefused::Unknown));
        }
        let hash = sha256(presented).to_vec();
        let queue = self.queue(at)?;
        let (reply, answer) = oneshot::channel();
        let job = Job { application_id, hash: hash.clone(), reply };
        queue.send(job).await.map_err(|_| RotationError::Stopped)?;
        let rotated = answer.await.map_err(|_| RotationError::Stopped)?.map_err(RotationError::Batch)?;
        match rotated {
            Rotated::Done(opened) => Ok(Ok(opened)),
            Rotated::SessionEnded => Ok(Err(RefreshRefused::SessionEnded)),
            Rotated::NotCurrent => Ok(sessions::not_current(scope, hash, self.ttl).await?),
        }
    }
}

/// Batches in flight at once per region. On PostgreSQL, two: while one
/// holds the audit chain's head and waits for its commit to be flushed, the
/// next does its first statements (rotating the tokens, reading the
/// sessions, issuing) and then queues on the head. SQLite has one writer.
fn rotators(shard: &Db) -> usize {
    match shard.backend() {
        DbBackend::Postgres => 2,
        _ => 1,
    }
}

/// Takes whatever is queued (up to [`MAX_BATCH`]) as one batch; `None`
/// once the node stops.
async fn next_batch(queue: &Mutex<mpsc::Receiver<Job>>) -> Option<Vec<Job>> {
    let mut queue = queue.lock().await;
    let mut batch = vec![queue.recv().await?];
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    Some(batch)
}

async fn run(shard: Db, ttl: Duration, queue: Arc<Mutex<mpsc::Receiver<Job>>>) {
    while let Some(batch) = next_batch(&queue).await {
        metrics::histogram!("gatehouse_refresh_batch_size").record(batch.len() as f64);
        let presented: Vec<(Uuid, Vec<u8>)> = batch.iter().map(|j| (j.application_id, j.hash.clone())).collect();
        match rotate_batch(&shard, &presented, ttl).await {
            Ok(results) => {
                for (job, result) in batch.into_iter().zip(results) {
                    let _ = job.reply.send(Ok(result));
                }
            }
            Err(err) => {
                let err = Arc::new(err);
                for job in batch {
                    let _ = job.reply.send(Err(err.clone()));
                }
            }
        }
    }
}

/// One transaction for a batch: rotate every presented token that is
/// current, find the sessions, issue the new tokens, slide the sessions,
/// one `session.refreshed` row each. All or nothing.
async fn rotate_batch(shard: &Db, presented: &[(Uuid, Vec<u8>)], ttl: Duration) -> Result<Vec<Rotated>, DbErr> {
    let now = crate::clock::now();
    let txn = shard.begin_write().await?;
    let mut tokens = Condition::any();
    for (application_id, hash) in presented {
        tokens = tokens.add(
            Condition::all()
                .add(refresh_token::Column::ApplicationId.eq(*application_id))
                .add(refresh_token::Column::TokenHash.eq(hash.clone())),
        );
    }
    let mut rotated = refresh_token::Entity::update_many()
        .col_expr(refresh_token::Column::RotatedAt, Expr::value(now))
        .filter(tokens)
        .filter(refresh_token::Column::RotatedAt.is_null())
        .exec_with_returning(&*txn)
        .await?;
    let mut owners = Condition::any();
    for token in &rotated {
        owners = owners.add(
            Condition::all()
                .add(session::Column::ApplicationId.eq(token.application_id))
                .add(session::Column::Id.eq(token.session_id)),
        );
    }
    let live = if rotated.is_empty() {
        Vec::new()
    } else {
        session::Entity::find().filter(owners).filter(sessions::active_at(now)).all(&*txn).await?
    };
    let mut results = Vec::with_capacity(presented.len());
    let mut issued = Vec::new();
    for (application_id, hash) in presented {
        // Each rotated row answers one request: the same token twice in a
        // batch rotates once, and the second is reuse.
        let Some(at) = rotated.iter().position(|t| t.application_id == *application_id && t.token_hash == *hash) else {
            results.push(Rotated::NotCurrent);
            continue;
        };
        let token = rotated.swap_remove(at);
        let Some(session) = live.iter().find(|s| s.id == token.session_id && s.application_id == *application_id)
        else {
            results.push(Rotated::SessionEnded);
            continue;
        };
        let (secret, row) = sessions::new_refresh_token(*application_id, session.id, now);
        issued.push(refresh_token::ActiveModel::from(row));
        let session = session::Model { refreshed_at: now, expires_at: now + ttl, ..session.clone() };
        results.push(Rotated::Done(Opened { session, refresh_token: secret }));
    }
    if !issued.is_empty() {
        refresh_token::Entity::insert_many(issued).exec_without_returning(&*txn).await?;
        // Only the live sessions slide; an expired one stays expired.
        let mut refreshed = Condition::any();
        for result in &results {
            if let Rotated::Done(opened) = result {
                refreshed = refreshed.add(
                    Condition::all()
                        .add(session::Column::ApplicationId.eq(opened.session.application_id))
                        .add(session::Column::Id.eq(opened.session.id)),
                );
            }
        }
        session::Entity::update_many()
            .col_expr(session::Column::RefreshedAt, Expr::value(now))
            .col_expr(session::Column::ExpiresAt, Expr::value(now + ttl))
            .filter(refreshed)
            .exec(&*txn)
            .await?;
        // One group of rows per application, in application order (see
        // `audit::append`).
        let mut by_application: BTreeMap<Uuid, Vec<&session::Model>> = BTreeMap::new();
        for result in &results {
            if let Rotated::Done(opened) = result {
                by_application.entry(opened.session.application_id).or_default().push(&opened.session);
            }
        }
        for (application_id, refreshed) in by_application {
            let actors: Vec<Actor> = refreshed.iter().map(|s| Actor::user(s.user_id)).collect();
            let entries = refreshed
                .iter()
                .zip(&actors)
                .map(|(session, actor)| audit::Entry {
                    id: None,
                    actor,
                    event_type: EventType::SessionRefreshed.as_str(),
                    aggregate_id: Some(session.id),
                    data: json!({"user_id": session.user_id}),
                })
                .collect();
            audit::append(&*txn, application_id, entries).await?;
        }
    }
    txn.commit().await?;
    Ok(results)
}
