//! Messaging providers (operation 2): upsert per channel, list, a test send
//! through the provider, and the outbox of what was recorded instead of sent.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{messaging_outbox, messaging_provider};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        messaging::{self, MessagingError, ProviderUpdate},
        validate::Issues,
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        body::Body,
        envelope,
        query::{ListQuery, Query},
    },
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: |parts| parts.with::<crate::areas::messaging::Providers>(),
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(upsert_messaging_provider, list_messaging_providers, test_messaging_provider, messaging_outbox))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/applications/{application_id}/providers/messaging")
            .route(web::put().to(upsert_messaging_provider))
            .route(web::get().to(list_messaging_providers)),
    )
    .service(
        web::resource("/applications/{application_id}/providers/messaging/test")
            .route(web::post().to(test_messaging_provider)),
    )
    .service(
        web::resource("/applications/{application_id}/providers/messaging/outbox")
            .route(web::get().to(messaging_outbox)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpsertMessagingProviderRequest {
    #[schema(schema_with = crate::openapi::fields::messaging_channel)]
    pub channel: String,
    /// `log` is for development applications only; `shared` is refused for
    /// production ones (`production_shared_sender_forbidden`).
    #[schema(schema_with = crate::openapi::fields::messaging_kind)]
    pub kind: String,
    /// `smtp`: `{host, port (default 587), username, from, starttls (default
    /// false; true required in production)}`; `host` may not be a loopback,
    /// private or other non-public address in any spelling (production
    /// applications, and development ones unless the operator allows private
    /// destinations). Other kinds: null or `{}`.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::fields::messaging_config)]
    pub config: Option<Value>,
    /// `smtp`: the password of `config.username`. Stored sealed, never
    /// returned; omit it to keep the stored one.
    #[schema(schema_with = crate::openapi::fields::optional_text::<1024>)]
    pub secret: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MessagingProviderView {
    /// `email` or `sms`.
    pub channel: String,
    /// `shared`, `smtp` or `log`.
    pub kind: String,
    /// The kind's settings, without the secret.
    pub config: Map<String, Value>,
    /// Whether a secret is stored (it is never shown).
    pub has_secret: bool,
    /// `unverified` after each change, `verified` once a send succeeded,
    /// `failing` after one failed.
    pub status: String,
    /// The last successful send, null before one.
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub verified_at: Option<DateTime<Utc>>,
    /// When the settings last changed.
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&messaging_provider::Model> for MessagingProviderView {
    fn from(row: &messaging_provider::Model) -> Self {
        MessagingProviderView {
            channel: row.channel.clone(),
            kind: row.kind.clone(),
            config: row.config.as_object().cloned().unwrap_or_default(),
            has_secret: row.secret_sealed.is_some(),
            status: row.status.clone(),
            verified_at: row.verified_at,
            updated_at: row.updated_at,
        }
    }
}

/// Upsert the application's messaging provider for a channel.
/// A change makes it `unverified` until a test send succeeds.
#[utoipa::path(put, path = "/v1/applications/{application_id}/providers/messaging", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application.")),
    request_body = UpsertMessagingProviderRequest,
    responses((status = 200, body = MessagingProviderView),
        (status = 404, description = "`not_found`: not the caller's application"),
        (status = 422, description = "`validation_failed`, or `production_shared_sender_forbidden`: a production application may not use the shared sender")),
    security(("secret_key" = ["admin"])))]
pub async fn upsert_messaging_provider(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let r: UpsertMessagingProviderRequest = body.json().await?;
    let update = ProviderUpdate { channel: r.channel, kind: r.kind, config: r.config, secret: r.secret };
    let environment = key.tenant().environment;
    let checked = messaging::check(update, environment, state.mailer.reach(environment.is_live()))?;
    let row =
        state.tenants.change(&key.scope, move |turn| async move { messaging::upsert(&turn, checked).await }).await?;
    Ok(envelope::ok(MessagingProviderView::from(&row)))
}

/// The application's messaging providers, one per configured channel (secrets never shown).
#[utoipa::path(get, path = "/v1/applications/{application_id}/providers/messaging", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application.")),
    responses((status = 200, body = [MessagingProviderView]),
        (status = 404, description = "`not_found`: not the caller's application")),
    security(("secret_key" = ["providers:read"])))]
pub async fn list_messaging_providers(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let rows = messaging::all(&key.scope).await.map_err(MessagingError::from)?;
    Ok(envelope::page(rows.iter().map(MessagingProviderView::from).collect(), false))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestMessagingProviderRequest {
    #[schema(schema_with = crate::openapi::fields::messaging_channel)]
    pub channel: String,
    /// An email address for `email`, an E.164 number (`+4915112345678`) for `sms`.
    #[schema(min_length = 1, max_length = 254)]
    pub to: String,
}

/// Send a test message through the channel's provider. Success makes it
/// `verified` (with `verified_at`); a failure makes it `failing` and answers
/// 503 `unavailable` (an SMTP host that resolves to no address the
/// application may reach is `blocked_destination`, with nothing dialled).
/// The send takes at most 10 s; an application has at most 4 in flight.
#[utoipa::path(post, path = "/v1/applications/{application_id}/providers/messaging/test", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application.")),
    request_body = TestMessagingProviderRequest,
    responses((status = 200, body = MessagingProviderView),
        (status = 404, description = "`not_found`: not the caller's application, or no provider for the channel"),
        (status = 503, description = "`unavailable`: the provider did not take the message (its status is now `failing`), or the application's sends in flight left no slot within the send's deadline")),
    security(("secret_key" = ["admin"])))]
pub async fn test_messaging_provider(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let r: TestMessagingProviderRequest = body.json().await?;
    let mut issues = Issues::default();
    match r.channel.as_str() {
        "email" if !messaging::is_email(&r.to) => issues.add("to", "must be an email address"),
        "sms" if !messaging::is_phone(&r.to) => issues.add("to", "must be an E.164 phone number"),
        "email" | "sms" => {}
        _ => issues.add("channel", format!("must be one of {}", messaging::CHANNELS.join(", "))),
    }
    issues.finish().map_err(MessagingError::from)?;
    let row = state.mailer.test_send(&key.scope, &r.channel, r.to).await?;
    Ok(envelope::ok(MessagingProviderView::from(&row)))
}

#[derive(Serialize, ToSchema)]
pub struct OutboxMessageView {
    pub id: Uuid,
    /// `email` or `sms`.
    pub channel: String,
    /// `log` or `shared` (the provider's kind), or `no_provider`.
    pub reason: String,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

impl From<&messaging_outbox::Model> for OutboxMessageView {
    fn from(row: &messaging_outbox::Model) -> Self {
        OutboxMessageView {
            id: row.id,
            channel: row.channel.clone(),
            reason: row.reason.clone(),
            recipient: row.recipient.clone(),
            subject: row.subject.clone(),
            body: row.body.clone(),
            created_at: row.created_at,
        }
    }
}

/// The messages recorded instead of sent (the `log` kind, the shared
/// sender, or a channel without a provider), newest first.
#[utoipa::path(get, path = "/v1/applications/{application_id}/providers/messaging/outbox", tag = "providers",
    params(("application_id" = Uuid, Path, description = "The caller's application."), ListQuery),
    responses((status = 200, body = [OutboxMessageView]),
        (status = 404, description = "`not_found`: not the caller's application")),
    security(("secret_key" = ["admin"])))]
pub async fn messaging_outbox(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    // What was recorded may carry links meant for the recipient alone.
    key.own_application(&path)?;
    let page = query.parsed()?.page()?;
    let (rows, has_more) = messaging::outbox(&key.scope, page).await.map_err(MessagingError::from)?;
    Ok(envelope::page(rows.iter().map(OutboxMessageView::from).collect(), has_more))
}
