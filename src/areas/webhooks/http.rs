//! Webhook endpoints (operation 4, with list, get, update, delete, secret
//! rotation) and their deliveries.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{webhook, webhook_attempt, webhook_message};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        validate::Issues,
        webhooks::{self, NewWebhook, WebhookPatch},
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    events::{delivery, outbox},
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["webhooks"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_webhook,
    list_webhooks,
    find_webhook,
    update_webhook,
    delete_webhook,
    rotate_webhook_secret,
    list_deliveries,
    retry_delivery
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/webhooks").route(web::post().to(create_webhook)).route(web::get().to(list_webhooks)))
        .service(
            web::resource("/webhooks/{webhook_id}")
                .route(web::get().to(find_webhook))
                .route(web::patch().to(update_webhook))
                .route(web::delete().to(delete_webhook)),
        )
        .service(web::resource("/webhooks/{webhook_id}/rotate-secret").route(web::post().to(rotate_webhook_secret)))
        .service(web::resource("/webhooks/{webhook_id}/deliveries").route(web::get().to(list_deliveries)))
        .service(
            web::resource("/webhooks/{webhook_id}/deliveries/{message_id}/retry").route(web::post().to(retry_delivery)),
        );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    #[schema(schema_with = crate::openapi::fields::url)]
    pub url: String,
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub description: Option<String>,
    /// Audit event types or dotted families (`api_key` takes `api_key.created`); none: every event.
    #[schema(schema_with = crate::openapi::fields::event_types)]
    pub event_types: Option<Vec<String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookRequest {
    #[schema(schema_with = crate::openapi::fields::optional_url)]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "crate::http::body::present")]
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub description: Option<Option<String>>,
    #[schema(schema_with = crate::openapi::fields::event_types)]
    pub event_types: Option<Vec<String>>,
    #[schema(schema_with = crate::openapi::fields::webhook_status)]
    pub status: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookView {
    pub id: Uuid,
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<String>,
    /// `active`, or `disabled` (by a change, a 410, or a message that exhausted the retry schedule).
    pub status: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&webhook::Model> for WebhookView {
    fn from(row: &webhook::Model) -> Self {
        WebhookView {
            id: row.id,
            url: row.url.clone(),
            description: row.description.clone(),
            event_types: serde_json::from_value(row.event_types.clone()).unwrap_or_default(),
            status: row.status.clone(),
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WebhookWithSecretView {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_…`: the signing secret, shown this once.
    pub secret: String,
}

#[derive(Serialize, ToSchema)]
pub struct AttemptView {
    pub attempt: i32,
    pub response_status: Option<i32>,
    pub duration_ms: i64,
    /// `timeout`, `connect`, `status`, `redirect`, `blocked_destination`…
    pub error: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub attempted_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryView {
    /// The `webhook-id` of every attempt of this message.
    pub id: Uuid,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts: Vec<AttemptView>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl DeliveryView {
    fn new(message: &webhook_message::Model, attempts: &[webhook_attempt::Model]) -> Self {
        DeliveryView {
            id: message.id,
            event_type: message.event_type.clone(),
            status: message.status.clone(),
            attempts: attempts
                .iter()
                .map(|a| AttemptView {
                    attempt: a.attempt,
                    response_status: a.response_status,
                    duration_ms: a.duration_ms,
                    error: a.error.clone(),
                    attempted_at: a.attempted_at,
                })
                .collect(),
            next_attempt_at: message.next_attempt_at,
            created_at: message.created_at,
        }
    }
}

/// Register a webhook endpoint. The signing secret is in the answer once.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = CreateWebhookRequest,
    responses((status = 201, body = WebhookWithSecretView), (status = 422, description = "invalid_url or validation_failed")),
    security(("secret_key" = ["webhooks:write"])))]
pub async fn create_webhook(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateWebhookRequest = body.json().await?;
    let live = key.tenant().environment.is_live();
    let url = webhooks::checked_url(&request.url, live, state.webhooks.reach(live))?;
    let mut issues = Issues::default();
    let description = request.description.map(|d| issues.text("description", &d, 1024));
    let event_types = webhooks::event_types(&mut issues, request.event_types.unwrap_or_default());
    issues.finish()?;
    let limit = state.settings.limits.webhooks_per_application;
    let new = NewWebhook { url, description, event_types };
    let (row, secret) =
        state.tenants.change(&key.scope, move |turn| async move { webhooks::create(&turn, new, limit).await }).await?;
    Ok(envelope::created(WebhookWithSecretView { webhook: (&row).into(), secret }))
}

/// List the application's webhook endpoints, oldest first.
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", params(ListQuery),
    responses((status = 200, body = [WebhookView])), security(("secret_key" = ["webhooks:read"])))]
pub async fn list_webhooks(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (rows, has_more) = webhooks::list(&key.scope, page).await?;
    Ok(envelope::page(rows.iter().map(WebhookView::from).collect(), has_more))
}

/// Get a webhook endpoint (never its secret).
#[utoipa::path(get, path = "/v1/webhooks/{webhook_id}", tag = "webhooks",
    params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id.")),
    responses((status = 200, body = WebhookView), (status = 404)), security(("secret_key" = ["webhooks:read"])))]
pub async fn find_webhook(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path)?;
    let row = webhooks::find(&key.scope, id).await?;
    Ok(envelope::ok(WebhookView::from(&row)))
}

/// Change an endpoint's url, description, event types or status.
#[utoipa::path(patch, path = "/v1/webhooks/{webhook_id}", tag = "webhooks",
    params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id.")), request_body = UpdateWebhookRequest,
    responses((status = 200, body = WebhookView), (status = 404), (status = 422)), security(("secret_key" = ["webhooks:write"])))]
pub async fn update_webhook(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path)?;
    let request: UpdateWebhookRequest = body.json().await?;
    let live = key.tenant().environment.is_live();
    let reach = state.webhooks.reach(live);
    let url = request.url.map(|u| webhooks::checked_url(&u, live, reach)).transpose()?;
    let mut issues = Issues::default();
    let description = request.description.map(|d| d.map(|d| issues.text("description", &d, 1024)));
    let event_types = request.event_types.map(|t| webhooks::event_types(&mut issues, t));
    if let Some(status) = &request.status {
        if status != outbox::ACTIVE && status != delivery::DISABLED {
            issues.add("status", "must be active or disabled");
        }
    }
    issues.finish()?;
    let patch = WebhookPatch { url, description, event_types, status: request.status };
    let row =
        state.tenants.change(&key.scope, move |turn| async move { webhooks::update(&turn, id, patch).await }).await?;
    Ok(envelope::ok(WebhookView::from(&row)))
}

/// Delete an endpoint and its delivery history.
#[utoipa::path(delete, path = "/v1/webhooks/{webhook_id}", tag = "webhooks",
    params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id.")),
    responses((status = 200), (status = 404)), security(("secret_key" = ["webhooks:write"])))]
pub async fn delete_webhook(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path)?;
    state.tenants.change(&key.scope, move |turn| async move { webhooks::delete(&turn, id).await }).await?;
    Ok(envelope::ok(serde_json::json!({})))
}

/// Replace the signing secret. For 24 hours deliveries carry signatures
/// under both the new and the previous secret.
#[utoipa::path(post, path = "/v1/webhooks/{webhook_id}/rotate-secret", tag = "webhooks",
    params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id.")),
    responses((status = 200, body = WebhookWithSecretView), (status = 404)), security(("secret_key" = ["webhooks:write"])))]
pub async fn rotate_webhook_secret(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path)?;
    body.no_fields().await?;
    let (row, secret) =
        state.tenants.change(&key.scope, move |turn| async move { webhooks::rotate_secret(&turn, id).await }).await?;
    Ok(envelope::ok(WebhookWithSecretView { webhook: (&row).into(), secret }))
}

/// The endpoint's messages, newest first, with every attempt.
#[utoipa::path(get, path = "/v1/webhooks/{webhook_id}/deliveries", tag = "webhooks", params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id."), ListQuery),
    responses((status = 200, body = [DeliveryView]), (status = 404)), security(("secret_key" = ["webhooks:read"])))]
pub async fn list_deliveries(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path)?;
    let page = query.parsed()?.page()?;
    let (messages, has_more) = webhooks::deliveries(&key.scope, id, page).await?;
    Ok(envelope::page(messages.iter().map(|(m, a)| DeliveryView::new(m, a)).collect(), has_more))
}

/// Send a message again now.
#[utoipa::path(post, path = "/v1/webhooks/{webhook_id}/deliveries/{message_id}/retry", tag = "webhooks",
    params(("webhook_id" = Uuid, Path, description = "The webhook endpoint's id."), ("message_id" = Uuid, Path, description = "The delivery's message id (`webhook-id`).")),
    responses((status = 200, body = DeliveryView), (status = 404)), security(("secret_key" = ["webhooks:write"])))]
pub async fn retry_delivery(key: SecretKey, path: web::Path<(String, String)>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Webhook", &path.0)?;
    let message_id = path_id("Delivery", &path.1)?;
    body.no_fields().await?;
    let message = webhooks::retry(&key.scope, id, message_id).await?;
    Ok(envelope::ok(DeliveryView::new(&message, &[])))
}
