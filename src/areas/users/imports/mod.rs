//! Bulk imports of users from another system (Auth0, Clerk, Firebase,
//! Cognito, Keycloak, a database of one's own), with the password hashes
//! they came with. A request queues a job of NDJSON lines, sealed under the
//! master key (they hold hashes); the region's worker ([`worker`]) takes
//! them in batches ([`batch`]), each batch one transaction with the job's
//! progress, so a crash resumes where the last batch committed. A line is
//! idempotent by its `external_id`: imported again, it is skipped; a bad
//! line is reported and changes nothing.
pub mod batch;
pub mod lines;
pub mod worker;

use chrono::{DateTime, Utc};
use entity::user_import;
use sea_orm::{DbErr, IntoActiveModel};
use serde::Serialize;
use uuid::Uuid;

use crate::{
    crypto::{master_key::MasterKey, seal},
    events::{catalog::EventType, outbox::PENDING},
    storage::{TenantConn, TenantScope},
};

/// Lines one request may carry (its body is at most 1 MiB anyway).
pub const MAX_LINES: usize = 10_000;
/// Errors a job keeps: the first ones, with the count of all.
pub const MAX_ERRORS: usize = 100;
pub const COMPLETED: &str = "completed";
/// How long a worker holds an import between batches.
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(60);
/// Lines one transaction takes.
pub const BATCH: usize = 500;

/// What the job's lines are sealed to.
pub fn sealing_context(application_id: Uuid, id: Uuid) -> String {
    format!("{application_id}/user_imports/{id}")
}

/// The job's lines, opened.
pub fn open_lines(master_key: &MasterKey, job: &user_import::Model) -> Option<String> {
    let opened = seal::open(master_key, &sealing_context(job.application_id, job.id), &job.lines_sealed).ok()?;
    String::from_utf8(opened).ok()
}

/// An import as the API answers it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportView {
    pub id: Uuid,
    /// `queued` (no line taken yet), `running` or `completed`.
    pub status: &'static str,
    pub lines_total: i64,
    pub lines_done: i64,
    /// Lines that made a user.
    pub created: i64,
    /// Lines whose `external_id` was imported before: nothing changed.
    pub skipped: i64,
    /// Lines refused: nothing of them was written.
    pub failed: i64,
    /// The first 100 refusals: `{line, external_id, code, message}`.
    #[schema(value_type = Vec<Object>)]
    pub errors: serde_json::Value,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub finished_at: Option<DateTime<Utc>>,
}

impl From<&user_import::Model> for ImportView {
    fn from(job: &user_import::Model) -> Self {
        let status = match (job.status.as_str(), job.lines_done) {
            (COMPLETED, _) => COMPLETED,
            (_, 0) => "queued",
            _ => "running",
        };
        ImportView {
            id: job.id,
            status,
            lines_total: job.lines_total,
            lines_done: job.lines_done,
            created: job.created,
            skipped: job.skipped,
            failed: job.failed,
            errors: job.errors.clone(),
            created_at: job.created_at,
            finished_at: job.finished_at,
        }
    }
}

/// Queues a job of `lines` (NDJSON, counted by the caller) and records it;
/// `held`: leased to the caller, who works it now (the command line).
pub async fn queue(scope: &TenantScope, lines: &str, count: usize, held: bool) -> Result<user_import::Model, DbErr> {
    let (id, now) = (Uuid::now_v7(), crate::clock::now());
    let application_id = scope.tenant().id;
    let job = user_import::Model {
        id,
        application_id,
        status: PENDING.to_string(),
        lines_total: count as i64,
        lines_done: 0,
        created: 0,
        skipped: 0,
        failed: 0,
        errors: serde_json::json!([]),
        lines_sealed: seal::seal(scope.master_key(), &sealing_context(application_id, id), lines.as_bytes()),
        next_attempt_at: Some(now),
        lease_until: held.then(|| now + chrono::Duration::from_std(LEASE).unwrap_or_default()),
        created_at: now,
        updated_at: now,
        finished_at: None,
    };
    let mut txn = scope.begin().await?;
    txn.insert(job.clone().into_active_model()).await?;
    txn.audit(EventType::UserImportQueued, Some(id), serde_json::json!({"lines": count})).await?;
    txn.commit().await?;
    Ok(job)
}

/// `gatehouse users import`: queues `text` as imports of at most
/// [`MAX_LINES`] lines each and works them in this process (a crash leaves
/// them to the service's workers once their leases lapse); answers each
/// job as it ended.
pub async fn import_file(
    storage: &crate::storage::Storage,
    application_id: Uuid,
    text: &str,
) -> Result<Vec<ImportView>, crate::error::ApiError> {
    use crate::error::ApiError;
    let tenant = crate::areas::applications::find(storage, application_id).await?;
    let shard = storage.shard(tenant.shard()).ok_or_else(|| {
        ApiError::invalid(
            "application",
            format!("its region `{}` is not held by this node's configuration", tenant.region),
        )
    })?;
    let scope = TenantScope::new(tenant, shard, crate::audit::Actor::system());
    let numbered: Vec<&str> = lines::numbered(text).map(|(_, line)| line).collect();
    let mut ended = Vec::new();
    for chunk in numbered.chunks(MAX_LINES) {
        let job = queue(&scope, &chunk.join("\n"), chunk.len(), true).await?;
        let job = worker::process(&scope, job).await?;
        ended.push(ImportView::from(&job));
    }
    Ok(ended)
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<Option<user_import::Model>, DbErr> {
    db.find_by_id::<user_import::Entity>(id).one(db.conn()).await
}
