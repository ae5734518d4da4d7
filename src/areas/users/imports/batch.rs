//! Lines of an import, written in one transaction with the job's progress.
//! A batch is tried whole; if anything in it fails (a sign-up took an
//! address meanwhile, a separation-of-duties policy refuses a role), each
//! of its lines is tried alone, so only the bad one is refused.
use std::collections::{HashMap, HashSet};

use entity::{organization, profile_field, sod_policy, user, user_import};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QuerySelect, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    lines::{self, Line, Refusal},
    MAX_ERRORS,
};
use crate::{
    areas::{
        memberships,
        organizations::{self, OrganizationError},
        sod::Grant,
    },
    audit::personal::{self, Subject},
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn, Unaudited},
};

/// Why a batch did not commit.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Another worker took the job over (this one's lease lapsed).
    #[error("the import was taken over by another worker")]
    Stale,
    /// A line was refused by a check only writing can make.
    #[error("{1}")]
    Refused(usize, String),
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// What a batch did.
#[derive(Default)]
struct Tally {
    created: i64,
    skipped: i64,
    refusals: Vec<Refusal>,
}

/// What the batch's lines need from the application.
pub struct Context {
    pub schema: Vec<profile_field::Model>,
    pub policies: Vec<sod_policy::Model>,
}

impl Context {
    pub async fn of(scope: &TenantScope) -> Result<Context, DbErr> {
        Ok(Context {
            schema: crate::areas::profile_fields::schema(scope).await?,
            policies: crate::areas::sod::all(scope).await?,
        })
    }
}

/// Imports `batch` (numbered lines after the job's `lines_done`), whole
/// or line by line; answers the job as it is now.
pub async fn import(
    scope: &TenantScope,
    job: &user_import::Model,
    batch: &[(usize, &str)],
    context: &Context,
) -> Result<user_import::Model, BatchError> {
    match import_together(scope, job, batch, context).await {
        Ok(job) => return Ok(job),
        Err(BatchError::Stale) => return Err(BatchError::Stale),
        Err(BatchError::Refused(..)) => {}
        Err(BatchError::Db(err)) if crate::error::is_fenced(&err) => return Err(BatchError::Db(err)),
        Err(BatchError::Db(err)) => {
            tracing::info!(error = %err, import_id = %job.id, "a batch is retried line by line")
        }
    }
    let mut job = job.clone();
    for line in batch {
        job = match import_together(scope, &job, std::slice::from_ref(line), context).await {
            Ok(job) => job,
            Err(BatchError::Refused(number, message)) => {
                let refusal = Refusal::new(number, None, "refused", message);
                record(scope, &job, 1, Tally { refusals: vec![refusal], ..Tally::default() }).await?
            }
            Err(BatchError::Db(err))
                if matches!(err.sql_err(), Some(sea_orm::SqlErr::UniqueConstraintViolation(_))) =>
            {
                let refusal = Refusal::new(line.0, None, "email_taken", "a user with this email exists");
                record(scope, &job, 1, Tally { refusals: vec![refusal], ..Tally::default() }).await?
            }
            Err(err) => return Err(err),
        };
    }
    Ok(job)
}

/// The batch in one transaction with the job's progress.
async fn import_together(
    scope: &TenantScope,
    job: &user_import::Model,
    batch: &[(usize, &str)],
    context: &Context,
) -> Result<user_import::Model, BatchError> {
    let mut tally = Tally::default();
    let mut checked = Vec::with_capacity(batch.len());
    for (number, text) in batch {
        match lines::check(*number, text, &context.schema) {
            Ok(line) => checked.push(line),
            Err(refusal) => tally.refusals.push(refusal),
        }
    }
    let mut txn = scope.begin().await?;
    let fresh = fresh_lines(&txn, checked, &mut tally).await?;
    for line in &fresh {
        write_line(&mut txn, job.id, line, context).await?;
        tally.created += 1;
    }
    if fresh.is_empty() {
        txn.unaudited(Unaudited::ImportProgress);
    }
    let job = progress(&mut txn, job, batch.len(), tally).await?;
    txn.commit().await?;
    Ok(job)
}

/// The lines to write: those whose `external_id` was imported before are
/// skipped; an address a user holds, or a line repeating an earlier one's
/// id or address, is refused.
async fn fresh_lines(txn: &TenantTxn, checked: Vec<Line>, tally: &mut Tally) -> Result<Vec<Line>, DbErr> {
    let ids: Vec<String> = checked.iter().map(|line| line.external_id.clone()).collect();
    let emails: Vec<String> = checked.iter().map(|line| line.email.clone()).collect();
    let imported: HashSet<String> = txn
        .find::<user::Entity>()
        .select_only()
        .column(user::Column::ExternalId)
        .filter(user::Column::ExternalId.is_in(ids))
        .into_tuple::<Option<String>>()
        .all(txn.conn())
        .await?
        .into_iter()
        .flatten()
        .collect();
    let taken: HashSet<String> = txn
        .find::<user::Entity>()
        .select_only()
        .column(user::Column::Email)
        .filter(user::Column::Email.is_in(emails))
        .into_tuple::<String>()
        .all(txn.conn())
        .await?
        .into_iter()
        .collect();
    let (mut seen_ids, mut seen_emails) = (HashSet::new(), HashSet::new());
    let mut fresh = Vec::with_capacity(checked.len());
    for line in checked {
        let id = Some(line.external_id.as_str());
        if imported.contains(&line.external_id) {
            tally.skipped += 1;
        } else if taken.contains(&line.email) {
            tally.refusals.push(Refusal::new(line.number, id, "email_taken", "a user with this email exists"));
        } else if !seen_ids.insert(line.external_id.clone()) || !seen_emails.insert(line.email.clone()) {
            let message = "an earlier line of the import has this external_id or email";
            tally.refusals.push(Refusal::new(line.number, id, "duplicate_in_import", message));
        } else {
            fresh.push(line);
        }
    }
    Ok(fresh)
}

/// The user of a line, its audit row and its organizations.
async fn write_line(txn: &mut TenantTxn, import_id: Uuid, line: &Line, context: &Context) -> Result<(), BatchError> {
    let now = crate::clock::now();
    let user = user::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        email: line.email.clone(),
        password_hash: line.password_hash.clone(),
        profile: serde_json::Value::Object(line.profile.clone()),
        last_sign_in_at: None,
        email_verified_at: line.email_verified.then_some(now),
        created_at: now,
        updated_at: now,
        external_id: Some(line.external_id.clone()),
    };
    txn.insert(user::ActiveModel::from(user.clone())).await?;
    let data = json!({"import_id": import_id, "external_id": line.external_id});
    let email = personal::fields([("email", json!(user.email))]);
    txn.audit_personal(EventType::UserCreated, Some(user.id), data, Subject::User(user.id), email).await?;
    let mut organization_ids: HashMap<&str, Uuid> = HashMap::new();
    for membership in &line.organizations {
        let organization_id = match organization_ids.get(membership.slug.as_str()) {
            Some(id) => *id,
            None => organization_of(txn, membership).await.map_err(|err| refused(line, err))?,
        };
        organization_ids.insert(&membership.slug, organization_id);
        let grant = Grant { organization_id, user_id: user.id, role: membership.role.clone() };
        memberships::join_in(txn, &context.policies, grant).await.map_err(|err| refused(line, err))?;
    }
    Ok(())
}

/// The organization with the membership's slug, made if there is none.
async fn organization_of(txn: &mut TenantTxn, membership: &lines::Membership) -> Result<Uuid, OrganizationError> {
    let found = txn
        .find::<organization::Entity>()
        .filter(organization::Column::Slug.eq(membership.slug.clone()))
        .one(txn.conn())
        .await?;
    match found {
        Some(organization) => Ok(organization.id),
        None => {
            let made =
                organizations::insert(txn, Uuid::now_v7(), membership.name.clone(), membership.slug.clone()).await?;
            Ok(made.id)
        }
    }
}

fn refused(line: &Line, err: OrganizationError) -> BatchError {
    match err {
        OrganizationError::Db(err) => BatchError::Db(err),
        other => BatchError::Refused(line.number, crate::error::ApiError::from(other).to_string()),
    }
}

/// Writes a refusal-only step (a line tried alone) with the job's progress.
async fn record(
    scope: &TenantScope,
    job: &user_import::Model,
    lines: usize,
    tally: Tally,
) -> Result<user_import::Model, BatchError> {
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::ImportProgress);
    let job = progress(&mut txn, job, lines, tally).await?;
    txn.commit().await?;
    Ok(job)
}

/// Moves the job past `lines` lines in the caller's transaction, while it
/// is still where this worker left it (else [`BatchError::Stale`]).
async fn progress(
    txn: &mut TenantTxn,
    job: &user_import::Model,
    lines: usize,
    tally: Tally,
) -> Result<user_import::Model, BatchError> {
    let mut errors = job.errors.as_array().cloned().unwrap_or_default();
    let room = MAX_ERRORS.saturating_sub(errors.len());
    errors.extend(tally.refusals.iter().take(room).map(|refusal| json!(refusal)));
    let next = user_import::Model {
        lines_done: job.lines_done + lines as i64,
        created: job.created + tally.created,
        skipped: job.skipped + tally.skipped,
        failed: job.failed + tally.refusals.len() as i64,
        errors: serde_json::Value::Array(errors),
        updated_at: crate::clock::now(),
        // Each batch renews the worker's hold.
        lease_until: Some(crate::clock::now() + chrono::Duration::from_std(super::LEASE).unwrap_or_default()),
        ..job.clone()
    };
    let moved = txn
        .update_many(|q: UpdateMany<user_import::Entity>| {
            q.col_expr(user_import::Column::LinesDone, Expr::value(next.lines_done))
                .col_expr(user_import::Column::Created, Expr::value(next.created))
                .col_expr(user_import::Column::Skipped, Expr::value(next.skipped))
                .col_expr(user_import::Column::Failed, Expr::value(next.failed))
                .col_expr(user_import::Column::Errors, Expr::value(next.errors.clone()))
                .col_expr(user_import::Column::UpdatedAt, Expr::value(next.updated_at))
                .col_expr(user_import::Column::LeaseUntil, Expr::value(next.lease_until))
                .filter(user_import::Column::Id.eq(job.id))
                .filter(user_import::Column::LinesDone.eq(job.lines_done))
                .filter(user_import::Column::LeaseUntil.eq(job.lease_until))
        })
        .await?;
    if moved != 1 {
        return Err(BatchError::Stale);
    }
    Ok(next)
}
