//! Webhook endpoints: register, list, change, delete, rotate the secret; and
//! their deliveries.
pub mod http;

use chrono::Utc;
use entity::{webhook, webhook_attempt, webhook_message};
use sea_orm::{
    sea_query::Expr, ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder, QuerySelect,
    UpdateMany,
};
use serde_json::json;
use uuid::Uuid;

use super::validate::Issues;
use crate::{
    clock,
    crypto::seal,
    error::{ApiError, Code},
    events::catalog::EventType,
    events::{delivery, outbox, signing, url_safety},
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope},
    tenancy::InTurn,
};

pub const MAX_EVENT_TYPES: usize = 50;
/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;

/// What went wrong with a webhook endpoint or one of its deliveries.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook `{0}` not found")]
    NotFound(Uuid),
    #[error("delivery `{0}` not found")]
    DeliveryNotFound(Uuid),
    /// A disabled endpoint sends nothing, retries included.
    #[error("webhook `{0}` is disabled")]
    Disabled(Uuid),
    /// A worker holds the message's lease.
    #[error("delivery `{0}` is being sent")]
    DeliveryInFlight(Uuid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<WebhookError> for ApiError {
    fn from(err: WebhookError) -> Self {
        match err {
            WebhookError::NotFound(id) => ApiError::not_found("Webhook", id),
            WebhookError::DeliveryNotFound(id) => ApiError::not_found("Delivery", id),
            WebhookError::Disabled(id) => {
                ApiError::new(Code::Conflict, format!("Webhook `{id}` is disabled; enable it first."))
            }
            WebhookError::DeliveryInFlight(id) => {
                ApiError::new(Code::Conflict, format!("Delivery `{id}` is being sent right now."))
            }
            WebhookError::Limit(err) => err.into(),
            WebhookError::Db(err) => err.into(),
        }
    }
}

/// A destination URL the rules refuse (webhooks and hooks alike): the issue
/// says why, as `url_safety` words it.
#[derive(Debug, thiserror::Error)]
#[error("the URL {0}")]
pub struct InvalidUrl(pub String);

impl From<InvalidUrl> for ApiError {
    fn from(InvalidUrl(issue): InvalidUrl) -> Self {
        ApiError::invalid_url("url", issue)
    }
}

/// A URL that passed the rules: `https` for a production application, and
/// a host `reach` allows.
pub fn checked_url(raw: &str, production: bool, reach: url_safety::Reach) -> Result<String, InvalidUrl> {
    url_safety::check(raw, production, reach).map(|_| raw.to_string()).map_err(InvalidUrl)
}

/// Event types to filter on: audit types or dotted families.
pub fn event_types(issues: &mut Issues, values: Vec<String>) -> Vec<String> {
    if values.len() > MAX_EVENT_TYPES {
        issues.add("event_types", format!("at most {MAX_EVENT_TYPES} entries"));
    }
    let valid = |t: &str| {
        t.len() <= 128
            && t.split('.').all(|part| {
                part.starts_with(|c: char| c.is_ascii_lowercase())
                    && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
    };
    if let Some(bad) = values.iter().find(|t| !valid(t)) {
        issues.add("event_types", format!("`{}` is not an event type", bad.escape_debug()));
    }
    let mut values = values;
    values.sort();
    values.dedup();
    values
}

pub struct NewWebhook {
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<String>,
}

#[derive(Default)]
pub struct WebhookPatch {
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub event_types: Option<Vec<String>>,
    pub status: Option<String>,
}

pub async fn create(turn: &InTurn, new: NewWebhook, limit: u64) -> Result<(webhook::Model, String), WebhookError> {
    let scope = turn.scope();
    let master_key = turn.master_key();
    let application_id = scope.tenant().id;
    let mut txn = scope.begin().await?;
    txn.reserve::<webhook::Entity>(Limit { max: limit, what: "webhook endpoints", field: "url" }, |all| all).await?;
    let id = Uuid::now_v7();
    let secret = signing::generate_secret();
    let now = clock::now();
    let row = webhook::Model {
        id,
        application_id,
        url: new.url,
        description: new.description,
        event_types: json!(new.event_types),
        status: outbox::ACTIVE.to_string(),
        secret_sealed: seal::seal(master_key, &delivery::secret_context(application_id, id), secret.as_bytes()),
        previous_secret_sealed: None,
        previous_secret_expires_at: None,
        created_at: now,
        updated_at: now,
    };
    txn.insert(webhook::ActiveModel::from(row.clone())).await?;
    txn.audit(
        EventType::WebhookCreated,
        Some(id),
        json!({"host": delivery::host_of(&row.url), "event_types": row.event_types}),
    )
    .await?;
    txn.commit().await?;
    Ok((row, secret))
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<webhook::Model>, bool), DbErr> {
    page.fetch(
        db.find::<webhook::Entity>().order_by_asc(webhook::Column::CreatedAt).order_by_asc(webhook::Column::Id),
        db.conn(),
    )
    .await
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<webhook::Model, WebhookError> {
    db.find_by_id::<webhook::Entity>(id).one(db.conn()).await?.ok_or(WebhookError::NotFound(id))
}

pub async fn update(turn: &InTurn, id: Uuid, patch: WebhookPatch) -> Result<webhook::Model, WebhookError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let mut row = find(&txn, id).await?.into_active_model();
    let mut changed = Vec::new();
    if let Some(url) = patch.url {
        row.url = Set(url);
        changed.push("url");
    }
    if let Some(description) = patch.description {
        row.description = Set(description);
        changed.push("description");
    }
    if let Some(types) = patch.event_types {
        row.event_types = Set(json!(types));
        changed.push("event_types");
    }
    if let Some(status) = patch.status {
        row.status = Set(status);
        changed.push("status");
    }
    row.updated_at = Set(clock::now());
    let updated = txn.update(row).await?;
    txn.audit(EventType::WebhookUpdated, Some(id), json!({"changed": changed})).await?;
    txn.commit().await?;
    Ok(updated)
}

/// Deletes an endpoint with its messages and attempts.
pub async fn delete(turn: &InTurn, id: Uuid) -> Result<(), WebhookError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    let messages: Vec<Uuid> = txn
        .find::<webhook_message::Entity>()
        .filter(webhook_message::Column::WebhookId.eq(id))
        .select_only()
        .column(webhook_message::Column::Id)
        .into_tuple()
        .all(txn.conn())
        .await?;
    for chunk in messages.chunks(500) {
        txn.delete::<webhook_attempt::Entity>(webhook_attempt::Column::MessageId.is_in(chunk.to_vec())).await?;
    }
    txn.delete::<webhook_message::Entity>(webhook_message::Column::WebhookId.eq(id)).await?;
    txn.delete::<webhook::Entity>(webhook::Column::Id.eq(id)).await?;
    txn.audit(EventType::WebhookDeleted, Some(id), json!({"host": delivery::host_of(&row.url)})).await?;
    txn.commit().await?;
    Ok(())
}

/// A new secret; the previous one keeps signing for a day beside it.
pub async fn rotate_secret(turn: &InTurn, id: Uuid) -> Result<(webhook::Model, String), WebhookError> {
    let scope = turn.scope();
    let master_key = turn.master_key();
    let application_id = scope.tenant().id;
    let mut txn = scope.begin().await?;
    let current = find(&txn, id).await?;
    let secret = signing::generate_secret();
    let mut row = current.clone().into_active_model();
    row.previous_secret_sealed = Set(Some(current.secret_sealed));
    row.previous_secret_expires_at = Set(Some(clock::now() + chrono::Duration::hours(ROTATION_OVERLAP_HOURS)));
    row.secret_sealed = Set(seal::seal(master_key, &delivery::secret_context(application_id, id), secret.as_bytes()));
    row.updated_at = Set(clock::now());
    let updated = txn.update(row).await?;
    txn.audit(EventType::WebhookSecretRotated, Some(id), json!({})).await?;
    txn.commit().await?;
    Ok((updated, secret))
}

/// A page of an endpoint's messages, newest first, each with its attempts.
pub async fn deliveries(
    db: &impl TenantConn,
    webhook_id: Uuid,
    page: Page,
) -> Result<(Vec<(webhook_message::Model, Vec<webhook_attempt::Model>)>, bool), WebhookError> {
    find(db, webhook_id).await?;
    let query = db
        .find::<webhook_message::Entity>()
        .filter(webhook_message::Column::WebhookId.eq(webhook_id))
        .order_by_desc(webhook_message::Column::CreatedAt)
        .order_by_desc(webhook_message::Column::Id);
    let (messages, has_more) = page.fetch(query, db.conn()).await?;
    let mut attempts = db
        .find::<webhook_attempt::Entity>()
        .filter(webhook_attempt::Column::MessageId.is_in(messages.iter().map(|m| m.id)))
        .order_by_asc(webhook_attempt::Column::Attempt)
        .all(db.conn())
        .await?;
    let grouped = messages
        .into_iter()
        .map(|message| {
            let (mine, rest): (Vec<_>, Vec<_>) = attempts.drain(..).partition(|a| a.message_id == message.id);
            attempts = rest;
            (message, mine)
        })
        .collect();
    Ok((grouped, has_more))
}

/// Sends a message again: it is due now, whatever happened to it before.
pub async fn retry(
    scope: &TenantScope,
    webhook_id: Uuid,
    message_id: Uuid,
) -> Result<webhook_message::Model, WebhookError> {
    let mut txn = scope.begin().await?;
    if find(&txn, webhook_id).await?.status != outbox::ACTIVE {
        return Err(WebhookError::Disabled(webhook_id));
    }
    let filter = webhook_message::Column::WebhookId.eq(webhook_id).and(webhook_message::Column::Id.eq(message_id));
    let now = clock::now();
    let changed = txn
        .update_many(|q: UpdateMany<webhook_message::Entity>| {
            q.col_expr(webhook_message::Column::Status, Expr::value(outbox::PENDING))
                .col_expr(webhook_message::Column::NextAttemptAt, Expr::value(now))
                .col_expr(webhook_message::Column::LeaseUntil, Expr::value(Option::<chrono::DateTime<Utc>>::None))
                .filter(filter.clone())
                .filter(webhook_message::Column::LeaseUntil.is_null().or(webhook_message::Column::LeaseUntil.lt(now)))
        })
        .await?;
    if changed == 0 {
        txn.find::<webhook_message::Entity>()
            .filter(filter)
            .one(txn.conn())
            .await?
            .ok_or(WebhookError::DeliveryNotFound(message_id))?;
        return Err(WebhookError::DeliveryInFlight(message_id));
    }
    txn.audit(EventType::WebhookDeliveryRetried, Some(webhook_id), json!({"message_id": message_id})).await?;
    let message = txn
        .find::<webhook_message::Entity>()
        .filter(filter)
        .one(txn.conn())
        .await?
        .ok_or(WebhookError::DeliveryNotFound(message_id))?;
    txn.commit().await?;
    Ok(message)
}
