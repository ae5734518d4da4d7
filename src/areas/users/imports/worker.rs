//! The region's import worker: one per held shard. It leases a queued
//! import (several nodes never hold one at once; a crashed node's lease
//! lapses and another resumes after the last committed batch), takes its
//! lines [`super::BATCH`] at a time, and completes it: the lines' sealed
//! text is emptied and `user_import.completed` recorded.
use std::{sync::Arc, time::Duration};

use entity::user_import;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, UpdateMany};
use serde_json::json;
use tokio::task::JoinHandle;

use super::{batch, lines, COMPLETED, LEASE};
use crate::{
    audit::Actor,
    crypto::master_key::MasterKey,
    events::catalog::EventType,
    region::{
        router::{Directory, Serving},
        Shard,
    },
    shutdown::Shutdown,
    storage::{
        delivery_queue::{self, Leased},
        per_shard, Db, Storage, TenantConn, TenantScope,
    },
};

const POLL: Duration = Duration::from_millis(500);
/// When an import of an application this region does not serve now is looked at again.
const NOT_HERE_AFTER: Duration = Duration::from_secs(1);

pub struct ImportWorker {
    pub master_key: MasterKey,
    pub directory: Directory,
    pub storage: Arc<Storage>,
    pub shutdown: Shutdown,
}

pub fn start(worker: ImportWorker) -> JoinHandle<()> {
    let worker = Arc::new(worker);
    let (storage, shutdown) = (worker.storage.clone(), worker.shutdown.clone());
    per_shard::spawn(storage, shutdown, move |at, shard| run(worker.clone(), at, shard))
}

async fn run(worker: Arc<ImportWorker>, at: Shard, shard: Db) {
    let shutdown = worker.shutdown.clone();
    while !shutdown.is_signalled() {
        let claimed = delivery_queue::lease_due::<user_import::Entity>(&shard, 1, LEASE).await.unwrap_or_else(|err| {
            tracing::warn!(error = %err, shard = %at, "claiming a user import failed");
            Vec::new()
        });
        let Some(job) = claimed.into_iter().next() else {
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = shutdown.signalled() => {}
            }
            continue;
        };
        let id = job.id;
        if let Err(err) = handle(&worker, at, &shard, job).await {
            tracing::warn!(error = %err, import_id = %id, "a user import stopped; it resumes when its lease lapses");
        }
    }
}

async fn handle(worker: &ImportWorker, at: Shard, shard: &Db, job: user_import::Model) -> Result<(), DbErr> {
    let tenant = match worker.directory.serving(job.application_id, at, &worker.storage).await {
        Serving::Here(tenant) => tenant,
        Serving::Gone => return Ok(()),
        Serving::NotNow | Serving::Elsewhere => {
            let leased = Leased { application_id: job.application_id, id: job.id, lease_until: job.lease_until };
            return delivery_queue::release::<user_import::Entity>(shard, leased, NOT_HERE_AFTER).await;
        }
    };
    let scope = TenantScope::new(tenant, shard.clone(), Actor::system());
    if worker.shutdown.is_signalled() {
        return Ok(());
    }
    process(&scope, job).await.map(|_| ())
}

/// Works a job this process holds from its `lines_done` to the end, batch
/// by batch; answers it completed.
pub async fn process(scope: &TenantScope, mut job: user_import::Model) -> Result<user_import::Model, DbErr> {
    let Some(text) = super::open_lines(scope.master_key(), &job) else {
        return Err(DbErr::Custom(format!("the lines of import {} do not open", job.id)));
    };
    let numbered: Vec<(usize, &str)> = lines::numbered(&text).skip(job.lines_done as usize).collect();
    let context = batch::Context::of(scope).await?;
    for chunk in numbered.chunks(super::BATCH) {
        job = match batch::import(scope, &job, chunk, &context).await {
            Ok(job) => job,
            Err(batch::BatchError::Db(err)) => return Err(err),
            Err(err) => return Err(DbErr::Custom(err.to_string())),
        };
    }
    complete(scope, &job).await
}

/// The last line taken: the job is completed and its lines emptied.
async fn complete(scope: &TenantScope, job: &user_import::Model) -> Result<user_import::Model, DbErr> {
    let mut txn = scope.begin().await?;
    let now = crate::clock::now();
    let done = txn
        .update_many(|q: UpdateMany<user_import::Entity>| {
            q.col_expr(user_import::Column::Status, Expr::value(COMPLETED))
                .col_expr(user_import::Column::LinesSealed, Expr::value(Vec::<u8>::new()))
                .col_expr(user_import::Column::LeaseUntil, Expr::value(Option::<chrono::DateTime<chrono::Utc>>::None))
                .col_expr(user_import::Column::FinishedAt, Expr::value(Some(now)))
                .col_expr(user_import::Column::UpdatedAt, Expr::value(now))
                .filter(user_import::Column::Id.eq(job.id))
                .filter(user_import::Column::LeaseUntil.eq(job.lease_until))
        })
        .await?;
    if done != 1 {
        return Err(DbErr::Custom(format!("import {} was taken over by another worker", job.id)));
    }
    let data = json!({"created": job.created, "skipped": job.skipped, "failed": job.failed});
    txn.audit(EventType::UserImportCompleted, Some(job.id), data).await?;
    txn.commit().await?;
    Ok(user_import::Model { status: COMPLETED.to_string(), lease_until: None, finished_at: Some(now), ..job.clone() })
}
