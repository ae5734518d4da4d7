//! Billing: the payment method (operation 11), the connected account and
//! its status (operation 19), and the payment processor's signed events.
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    area::Area,
    areas::{
        billing::{self, ConnectStatus, Destination, PaymentMethod, PaymentSummary, ProcessorEvent},
        validate::Issues,
    },
    auth::{public_scope, secret_key::SecretKey},
    error::{ApiError, ApiResult},
    events::processor_signature,
    http::{body::Body, envelope},
    region::forward,
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["billing"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(set_payment_method, get_payment_method, connect_account, connect_status, receive_processor_event))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/billing/payment-method")
            .route(web::put().to(set_payment_method))
            .route(web::get().to(get_payment_method)),
    )
    .service(web::resource("/billing/connect").route(web::post().to(connect_account)))
    .service(web::resource("/billing/connect/status").route(web::get().to(connect_status)))
    .service(web::resource("/billing/processor-webhooks").route(web::post().to(receive_processor_event)));
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPaymentMethodRequest {
    #[schema(schema_with = crate::openapi::fields::card_brand)]
    pub brand: String,
    /// The card's last four digits.
    #[schema(pattern = "^[0-9]{4}$")]
    pub last4: String,
    /// The processor's token for the payment method: stored sealed, never returned.
    #[schema(schema_with = crate::openapi::fields::text::<1024>)]
    pub token: String,
    #[schema(schema_with = crate::openapi::fields::optional_email)]
    pub billing_email: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct PaymentMethodView {
    pub has_payment_method: bool,
    pub payment_brand: Option<String>,
    pub payment_last4: Option<String>,
    pub billing_email: Option<String>,
}

impl From<PaymentSummary> for PaymentMethodView {
    fn from(summary: PaymentSummary) -> Self {
        PaymentMethodView {
            has_payment_method: summary.brand.is_some(),
            payment_brand: summary.brand,
            payment_last4: summary.last4,
            billing_email: summary.billing_email,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectRequest {
    /// The account's id at the processor (`acct_…`).
    #[schema(pattern = "^[A-Za-z0-9_-]{1,255}$")]
    pub processor_account_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct ConnectStatusView {
    pub charges_enabled: bool,
    pub details_submitted: bool,
    /// The processor's `requirements.disabled_reason`.
    pub disabled_reason: Option<String>,
    /// `details_submitted`.
    pub onboarded: bool,
    pub payouts_enabled: bool,
    /// The account this application claimed with `POST /v1/billing/connect`
    /// (null until then), whether or not the claim is verified.
    pub processor_account_id: Option<String>,
    /// Whether the claim is the verified link: a signed processor event for
    /// the account carried `metadata.gatehouse_application_id` naming this
    /// application. Until then every flag is false and no event is applied.
    pub verified: bool,
}

impl From<ConnectStatus> for ConnectStatusView {
    fn from(status: ConnectStatus) -> Self {
        ConnectStatusView {
            charges_enabled: status.charges_enabled,
            details_submitted: status.details_submitted,
            disabled_reason: status.disabled_reason,
            onboarded: status.details_submitted,
            payouts_enabled: status.payouts_enabled,
            processor_account_id: status.processor_account_id,
            verified: status.verified,
        }
    }
}

/// A processor event (Stripe's format); only these fields are read.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description of the body; the handler reads raw bytes
pub struct ProcessorEventBody {
    /// `event`.
    pub object: Option<String>,
    /// The event id (`evt_…`): a second delivery is acknowledged and ignored.
    pub id: String,
    /// `account.updated` changes the status; other types are acknowledged.
    #[schema(rename = "type")]
    pub event_type: String,
    /// Unix seconds; an event older than the stored state does not overwrite it.
    #[schema(minimum = 0)]
    pub created: i64,
    /// `{object: the account}`; the account's `metadata.gatehouse_application_id` names the application.
    pub data: std::collections::HashMap<String, serde_json::Value>,
}

#[derive(Serialize, ToSchema)]
pub struct ReceivedView {
    pub received: bool,
}

/// Attach or replace the application's payment method. The
/// token is stored sealed and never returned; the previous one is not kept.
#[utoipa::path(put, path = "/v1/billing/payment-method", tag = "billing", request_body = SetPaymentMethodRequest,
    responses((status = 200, body = PaymentMethodView), (status = 422)),
    security(("secret_key" = ["admin"])))]
pub async fn set_payment_method(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: SetPaymentMethodRequest = body.json().await?;
    let mut issues = Issues::default();
    let method = PaymentMethod::check(&mut issues, request.brand, request.last4, request.token, request.billing_email);
    issues.finish()?;
    let summary = billing::set_payment_method(&key.scope, &state.master_key, method).await?;
    Ok(envelope::ok(PaymentMethodView::from(summary)))
}

/// The payment-method summary (never the token).
#[utoipa::path(get, path = "/v1/billing/payment-method", tag = "billing",
    responses((status = 200, body = PaymentMethodView)), security(("secret_key" = ["billing:read"])))]
pub async fn get_payment_method(key: SecretKey) -> ApiResult<HttpResponse> {
    let summary = billing::payment_method(&key.scope).await?;
    Ok(envelope::ok(PaymentMethodView::from(summary)))
}

/// Claim the application's account at the payment processor; claiming
/// another account replaces the claim. Any application may claim any account
/// and the answer never says whether another one did: the claim is trusted
/// for nothing until the processor proves it. It becomes the verified link
/// when a signed `account.updated` event arrives whose account carries
/// `metadata.gatehouse_application_id` = this application's id (set it on
/// the account at the processor); until then the status shows the claimed
/// account with `verified: false` and every flag false.
#[utoipa::path(post, path = "/v1/billing/connect", tag = "billing", request_body = ConnectRequest,
    responses((status = 200, body = ConnectStatusView), (status = 422)),
    security(("secret_key" = ["admin"])))]
pub async fn connect_account(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: ConnectRequest = body.json().await?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let id = request.processor_account_id;
    if id.is_empty() || id.len() > billing::MAX_PROCESSOR_ID || !id.chars().all(valid) {
        return Err(ApiError::invalid("processor_account_id", "must be 1 to 255 letters, digits, `_` or `-`"));
    }
    let status = billing::connect(&state.storage, &state.connect_statuses, &key.scope, id).await?;
    Ok(envelope::ok(ConnectStatusView::from(status)))
}

/// The connected account's status, kept current by the
/// processor's events and cached across nodes.
#[utoipa::path(get, path = "/v1/billing/connect/status", tag = "billing",
    responses((status = 200, body = ConnectStatusView)), security(("secret_key" = ["billing:read"])))]
pub async fn connect_status(state: web::Data<AppState>, key: SecretKey) -> ApiResult<HttpResponse> {
    let status = billing::connect_status(&state.storage, &state.connect_statuses, &key.scope).await?;
    Ok(envelope::ok(ConnectStatusView::from(status)))
}

/// The payment processor's events. Public: the `Stripe-Signature` header
/// (HMAC-SHA256 of `"{t}.{body}"` with the configured secret, 300 s either
/// way) is the credential, and a bad one changes nothing. The account's
/// `metadata.gatehouse_application_id` names the application, which must
/// have claimed the account in `data.object.id`; the event then verifies the
/// claim and is applied. An event whose metadata names no application
/// claiming the account is acknowledged, applied to no one and kept for the
/// operator.
#[utoipa::path(post, path = "/v1/billing/processor-webhooks", tag = "billing", request_body = ProcessorEventBody,
    extensions(("x-gatehouse-caller" = json!("inbound"))),
    params(("Stripe-Signature" = String, Header, description = "`t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…]`")),
    responses((status = 200, body = ReceivedView),
        (status = 400, description = "`invalid_signature`: the signature is missing, malformed, outside 300 s or does not match; or `malformed_json`"),
        (status = 422, description = "`validation_failed`: a signed event without `id`, `type`, `created` or `data.object`")))]
pub async fn receive_processor_event(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: Body,
) -> ApiResult<HttpResponse> {
    let bytes = body.raw().await?;
    let mut headers = req.headers().get_all("stripe-signature");
    let header = match (headers.next(), headers.next()) {
        (Some(value), None) => Some(value.to_str().map_err(|_| processor_signature::SignatureError::Malformed)?),
        (None, _) => None,
        (Some(_), Some(_)) => return Err(processor_signature::SignatureError::Malformed.into()),
    };
    let secret = state.settings.billing.processor_webhook_secret.as_deref().unwrap_or_default();
    if secret.is_empty() {
        tracing::warn!("a processor event was refused: billing.processor_webhook_secret is not set");
        return Err(processor_signature::SignatureError::Mismatch.into());
    }
    processor_signature::verify(header, &bytes, secret, crate::clock::now().timestamp())?;
    let event = ProcessorEvent::parse(&crate::http::body::parse(&bytes)?)?;
    match billing::route_event(&state.storage, &state.connect_statuses, &state.directory, &event).await? {
        Destination::Ignored | Destination::Unmatched => {}
        Destination::Elsewhere(region) => return forward::to_peer(&state, &req, bytes, region).await,
        Destination::Here(tenant) => {
            let scope =
                public_scope(&state, tenant).ok_or_else(|| ApiError::unavailable("The region is not held here."))?;
            billing::apply_account_event(&scope, &state.connect_statuses, &event).await?;
        }
    }
    Ok(envelope::ok(ReceivedView { received: true }))
}
