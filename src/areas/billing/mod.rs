//! Billing: the application's payment method (operation 11), its connected
//! account at the payment processor (`POST /v1/billing/connect`), the
//! processor's signed `account.updated` events, and the status projection
//! they keep (operation 19), read through the cache layer.
//!
//! A connected account is linked in two steps, so that no application can
//! squat another's account. `POST /v1/billing/connect` records only the
//! application's *claim* (one per application, any number per account; it
//! never answers 409, so it reveals nothing about other applications). The
//! processor proves the link: a correctly signed `account.updated` event
//! whose account carries `metadata.gatehouse_application_id` naming an
//! application that claims that account makes the claim the *verified* link
//! (`processor_accounts`, unique both ways), and only then is the event
//! applied. The customer sets that metadata on their own account at the
//! processor; nobody can set it on another's. The metadata alone decides:
//! an event whose metadata is absent, unreadable, or names an application
//! that does not claim the account is recorded as unmatched and applied to
//! no one, even if the account has a verified link. When the metadata names
//! another claiming application, the verified link moves to it. An
//! unverified claim receives nothing and its status shows only the account
//! it asked for, every flag false and `verified: false`.
pub mod http;

use std::time::Duration;

use entity::{billing_profile, connect_status, pending_audit_event, processor_event, unmatched_processor_event};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, SqlErr};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{applications, validate::Issues};
use crate::{
    cache::{Bus, Invalidation, ReadThrough, SharedRedis},
    clock,
    crypto::{master_key::MasterKey, seal},
    error::ApiError,
    events::catalog::EventType,
    region::router::Directory,
    region::Region,
    storage::{
        catalog::{self, Claimed, Verified},
        Storage, TenantConn, TenantScope,
    },
    tenancy::Tenant,
};

pub const BRANDS: [&str; 7] = ["visa", "mastercard", "amex", "discover", "jcb", "diners", "unionpay"];
pub const MAX_TOKEN: usize = 1024;
/// A processor account id (`acct_…`) and an event id (`evt_…`): at most this long.
pub const MAX_PROCESSOR_ID: usize = 255;
pub const PROCESSOR_ACCOUNT_ID: &str = "^[A-Za-z0-9_-]{1,255}$";
/// The one event type that changes the projection.
pub const ACCOUNT_UPDATED: &str = "account.updated";
/// The key of the account's processor metadata that names its application:
/// the proof that verifies a claim.
pub const APPLICATION_METADATA: &str = "gatehouse_application_id";
/// A verification that lost a race on the account's primary key is tried again this often.
const VERIFY_ATTEMPTS: usize = 3;

/// The bound on a node's own copy when a bus message is lost.
const LOCAL_TTL: Duration = Duration::from_secs(10);
/// The copy in Redis; every applied event deletes it.
const SHARED_TTL: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    #[error(transparent)]
    Db(#[from] DbErr),
    /// A cached read whose load failed (shared by the readers that waited on it).
    #[error(transparent)]
    Read(std::sync::Arc<DbErr>),
}

impl From<BillingError> for ApiError {
    fn from(err: BillingError) -> Self {
        match err {
            BillingError::Db(err) => err.into(),
            BillingError::Read(err) => ApiError::from(&*err),
        }
    }
}

/// A payment method as the request gives it, checked.
pub struct PaymentMethod {
    pub brand: String,
    pub last4: String,
    pub token: String,
    pub billing_email: Option<String>,
}

impl PaymentMethod {
    pub fn check(
        issues: &mut Issues,
        brand: String,
        last4: String,
        token: String,
        billing_email: Option<String>,
    ) -> PaymentMethod {
        if !BRANDS.contains(&brand.as_str()) {
            issues.add("brand", format!("must be one of {}", BRANDS.join(", ")));
        }
        if last4.len() != 4 || !last4.bytes().all(|b| b.is_ascii_digit()) {
            issues.add("last4", "must be four digits");
        }
        let token = issues.text("token", &token, MAX_TOKEN);
        let billing_email = billing_email.and_then(|raw| match super::users::normalize_email(&raw) {
            Some(email) if email.len() <= 254 => Some(email),
            _ => {
                issues.add("billing_email", "must be an email address");
                None
            }
        });
        PaymentMethod { brand, last4, token, billing_email }
    }
}

/// What the payment method's `PUT` and `GET` answer: never the token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaymentSummary {
    pub brand: Option<String>,
    pub last4: Option<String>,
    pub billing_email: Option<String>,
}

impl From<Option<billing_profile::Model>> for PaymentSummary {
    fn from(row: Option<billing_profile::Model>) -> Self {
        match row {
            Some(row) => PaymentSummary {
                brand: Some(row.payment_brand),
                last4: Some(row.payment_last4),
                billing_email: row.billing_email,
            },
            None => PaymentSummary::default(),
        }
    }
}

/// Where the sealed token belongs: opened anywhere else, it does not open.
pub fn token_context(application_id: Uuid) -> String {
    format!("{application_id}/billing_profile/payment_token")
}

/// Attaches or replaces the payment method: the old token is overwritten in
/// the same row, nothing of it is kept.
pub async fn set_payment_method(
    scope: &TenantScope,
    master_key: &MasterKey,
    method: PaymentMethod,
) -> Result<PaymentSummary, BillingError> {
    let application_id = scope.tenant().id;
    let mut txn = scope.begin().await?;
    // Two first PUTs at once take turns instead of racing to insert.
    txn.lock_tenant().await?;
    let existing = txn.find_by_id::<billing_profile::Entity>(application_id).one(txn.conn()).await?;
    let now = clock::now();
    let sealed = seal::seal(master_key, &token_context(application_id), method.token.as_bytes());
    let replaced = existing.is_some();
    let row = match existing {
        Some(row) => {
            let mut active = row.into_active_model();
            active.payment_brand = Set(method.brand.clone());
            active.payment_last4 = Set(method.last4.clone());
            active.payment_token_sealed = Set(sealed);
            active.billing_email = Set(method.billing_email.clone());
            active.updated_at = Set(now);
            txn.update(active).await?
        }
        None => {
            let row = billing_profile::Model {
                application_id,
                payment_brand: method.brand.clone(),
                payment_last4: method.last4.clone(),
                payment_token_sealed: sealed,
                billing_email: method.billing_email.clone(),
                created_at: now,
                updated_at: now,
            };
            txn.insert(billing_profile::ActiveModel::from(row.clone())).await?;
            row
        }
    };
    let data = json!({"brand": method.brand, "last4": method.last4, "replaced": replaced,
        "billing_email_set": method.billing_email.is_some()});
    txn.audit(EventType::BillingPaymentMethodUpdated, Some(application_id), data).await?;
    txn.commit().await?;
    Ok(Some(row).into())
}

pub async fn payment_method(scope: &TenantScope) -> Result<PaymentSummary, BillingError> {
    let row = scope.find_by_id::<billing_profile::Entity>(scope.tenant().id).one(scope.conn()).await?;
    Ok(row.into())
}

/// The connected account's status as the connect status answers it (`onboarded`
/// is `details_submitted`). Cached in Redis: it names no end user.
/// `processor_account_id` is the account the application claimed; the flags
/// are the processor's only once `verified`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectStatus {
    pub processor_account_id: Option<String>,
    /// The claim is the verified link (a signed event's metadata named this application).
    #[serde(default)]
    pub verified: bool,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    pub disabled_reason: Option<String>,
}

/// The status projections, read through the cache layer (this node, then
/// Redis, then the databases) and dropped everywhere by the writer after
/// each commit that changes one.
#[derive(Clone)]
pub struct ConnectStatuses {
    cache: ReadThrough<ConnectStatus>,
    bus: Bus,
}

impl ConnectStatuses {
    pub fn new(redis: Option<SharedRedis>, bus: &Bus) -> ConnectStatuses {
        let cache = ReadThrough::new("connect_status", redis, LOCAL_TTL, SHARED_TTL);
        let local = cache.clone();
        bus.listen(move |invalidation| match *invalidation {
            Invalidation::ConnectStatus { application_id } => local.invalidate_local(application_id),
            Invalidation::All => local.invalidate_all_local(),
            _ => {}
        });
        ConnectStatuses { cache, bus: bus.clone() }
    }

    /// After a commit: Redis and this node's copy first, then the others'.
    async fn changed(&self, application_id: Uuid) {
        self.cache.invalidate(application_id).await;
        self.bus.publish(Invalidation::ConnectStatus { application_id }).await;
    }
}

/// Operation 19. Before the claim is verified: the claimed account (if
/// any), every flag false, no reason, `verified` false.
pub async fn connect_status(
    storage: &Storage,
    statuses: &ConnectStatuses,
    scope: &TenantScope,
) -> Result<ConnectStatus, BillingError> {
    let application_id = scope.tenant().id;
    let load = || async {
        let claim = catalog::application_processor_account(&storage.catalog, application_id).await?;
        let row = match claim {
            Some((_, true)) => scope.find_by_id::<connect_status::Entity>(application_id).one(scope.conn()).await?,
            _ => None,
        };
        Ok::<_, DbErr>(project(claim, row))
    };
    statuses.cache.get_with(application_id, load).await.map_err(BillingError::Read)
}

/// The stored projection counts only while its account is the claimed one
/// and that claim is verified (a new claim starts from nothing).
fn project(claim: Option<(String, bool)>, row: Option<connect_status::Model>) -> ConnectStatus {
    let Some((claimed, verified)) = claim else { return ConnectStatus::default() };
    match row {
        Some(row) if verified && row.processor_account_id == claimed => ConnectStatus {
            processor_account_id: Some(claimed),
            verified,
            charges_enabled: row.charges_enabled,
            payouts_enabled: row.payouts_enabled,
            details_submitted: row.details_submitted,
            disabled_reason: row.disabled_reason,
        },
        _ => ConnectStatus { processor_account_id: Some(claimed), verified, ..ConnectStatus::default() },
    }
}

/// Records the application's claim of a processor account; claiming another
/// account replaces the claim (and drops the verified link of the earlier
/// one). Every application may claim any account: the answer never depends
/// on another application's claim or link, so it is no oracle. The claim
/// receives nothing until a signed event verifies it (see the module
/// documentation). The catalog row and its audit row commit together in the
/// catalog; the audit row is then relayed into the regional chain.
pub async fn connect(
    storage: &Storage,
    statuses: &ConnectStatuses,
    scope: &TenantScope,
    processor_account_id: String,
) -> Result<ConnectStatus, BillingError> {
    let tenant = scope.tenant().clone();
    let actor = scope.actor();
    let audit = pending_audit_event::Model {
        id: Uuid::now_v7(),
        application_id: tenant.id,
        event_type: EventType::BillingConnectedAccountClaimed.as_str().to_string(),
        actor_kind: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        aggregate_id: Some(tenant.id),
        data: json!({"processor_account_id": processor_account_id}),
        created_at: clock::now(),
    };
    let pending = audit.clone();
    match catalog::claim_processor_account(&storage.catalog, tenant.id, &processor_account_id, audit).await? {
        Claimed::Claimed => {
            if let Err(err) = applications::relay(storage, &tenant, &pending).await {
                tracing::warn!(application_id = %tenant.id, error = %crate::error::cause_chain(&err), "audit row left pending for the relay");
            }
            statuses.changed(tenant.id).await;
        }
        Claimed::Unchanged => {}
    }
    connect_status(storage, statuses, scope).await
}

/// A verified processor event, as far as Gatehouse reads it.
#[derive(Clone, Debug)]
pub struct ProcessorEvent {
    pub id: String,
    pub event_type: String,
    /// Unix seconds: "older" is judged by it.
    pub created: i64,
    /// `data.object.id`: for `account.updated`, the account.
    pub object_id: Option<String>,
    /// `data.object.metadata.gatehouse_application_id`, when it is an
    /// application id: the application the account's owner names.
    pub named_application: Option<Uuid>,
    pub object: Value,
}

impl ProcessorEvent {
    /// The fields Gatehouse needs, each checked; the rest is ignored.
    pub fn parse(body: &Value) -> Result<ProcessorEvent, crate::areas::validate::Invalid> {
        let mut issues = Issues::default();
        let text = |issues: &mut Issues, field: &str, value: Option<&Value>| match value.and_then(Value::as_str) {
            Some(s) => Some(issues.text(field, s, MAX_PROCESSOR_ID)),
            None => {
                issues.add(field, "must be a string");
                None
            }
        };
        let id = text(&mut issues, "id", body.get("id"));
        let event_type = text(&mut issues, "type", body.get("type"));
        let created = body.get("created").and_then(Value::as_i64).filter(|c| *c >= 0);
        if created.is_none() {
            issues.add("created", "must be a non-negative integer");
        }
        let object = body.pointer("/data/object").cloned().unwrap_or(Value::Null);
        if !object.is_object() {
            issues.add("data.object", "must be an object");
        }
        let object_id = match object.get("id") {
            Some(Value::String(s)) => Some(issues.text("data.object.id", s, MAX_PROCESSOR_ID)),
            _ => None,
        };
        issues.finish()?;
        // Unreadable metadata is no proof: such an event is unmatched, not refused.
        let named_application = object
            .pointer(&format!("/metadata/{APPLICATION_METADATA}"))
            .and_then(Value::as_str)
            .and_then(|id| Uuid::parse_str(id.trim()).ok());
        Ok(ProcessorEvent {
            id: id.unwrap_or_default(),
            event_type: event_type.unwrap_or_default(),
            created: created.unwrap_or_default(),
            object_id,
            named_application,
            object,
        })
    }

    fn flag(&self, name: &str) -> bool {
        self.object.get(name).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// Where an event goes.
pub enum Destination {
    /// Not an `account.updated` event, or one without an account: acknowledged, nothing kept.
    Ignored,
    /// No application's claim matches the account's metadata: kept in the catalog.
    Unmatched,
    /// The application, in a region this node holds.
    Here(Tenant),
    /// The application, in a region another node holds.
    Elsewhere(Region),
}

/// Finds the event's application and whether this node holds its region.
/// The application is the one the account's metadata names, and only if it
/// claims the account; that claim becomes (or stays) the verified link
/// before the event is applied. Anything else is recorded as unmatched. The
/// caller has verified the signature.
pub async fn route_event(
    storage: &Storage,
    statuses: &ConnectStatuses,
    directory: &Directory,
    event: &ProcessorEvent,
) -> Result<Destination, crate::error::ApiError> {
    let Some(account) = event.object_id.as_deref().filter(|_| event.event_type == ACCOUNT_UPDATED) else {
        return Ok(Destination::Ignored);
    };
    let tenant = match event.named_application {
        Some(id) => directory.resolve(id).await?,
        None => None,
    };
    let verified = match &tenant {
        Some(tenant) => verify_claim(storage, statuses, directory, tenant, account, event).await?,
        None => Verified::NotClaimed,
    };
    let (Some(tenant), Verified::Unchanged | Verified::Linked { .. }) = (tenant, verified) else {
        let row = unmatched_processor_event::Model {
            event_id: event.id.clone(),
            event_type: event.event_type.clone(),
            processor_account_id: account.to_string(),
            created: event.created,
            received_at: clock::now(),
        };
        catalog::record_unmatched_event(&storage.catalog, row).await?;
        tracing::info!(event_id = %event.id, processor_account_id = %account, "processor event whose metadata names no application claiming the account");
        return Ok(Destination::Unmatched);
    };
    Ok(if storage.holds(tenant.region) { Destination::Here(tenant) } else { Destination::Elsewhere(tenant.region) })
}

/// Makes the tenant's claim of `account` the verified link (the event's
/// metadata names the tenant), relays the audit rows of a change into the
/// regions this node holds (the others' relay picks them up) and drops the
/// cached status of every application whose link changed.
async fn verify_claim(
    storage: &Storage,
    statuses: &ConnectStatuses,
    directory: &Directory,
    tenant: &Tenant,
    account: &str,
    event: &ProcessorEvent,
) -> Result<Verified, crate::error::ApiError> {
    let audit = |application_id: Uuid, event_type: &str| pending_audit_event::Model {
        id: Uuid::now_v7(),
        application_id,
        event_type: event_type.to_string(),
        actor_kind: crate::audit::ActorKind::Public.as_str().to_string(),
        actor_id: None,
        aggregate_id: Some(application_id),
        data: json!({"processor_account_id": account, "event_id": event.id}),
        created_at: clock::now(),
    };
    let mut attempt = 1;
    let (verified, audits) = loop {
        match catalog::verify_processor_account(&storage.catalog, tenant.id, account, &audit).await {
            Ok(done) => break done,
            // Another application's verification of the account committed first: look again.
            Err(err)
                if attempt < VERIFY_ATTEMPTS && matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
            {
                attempt += 1
            }
            Err(err) => return Err(err.into()),
        }
    };
    for pending in &audits {
        let owner = match pending.application_id == tenant.id {
            true => Some(tenant.clone()),
            false => directory.resolve(pending.application_id).await.ok().flatten(),
        };
        if let Some(owner) = owner.filter(|owner| storage.holds(owner.region)) {
            if let Err(err) = applications::relay(storage, &owner, pending).await {
                tracing::warn!(application_id = %owner.id, error = %crate::error::cause_chain(&err), "audit row left pending for the relay");
            }
        }
        statuses.changed(pending.application_id).await;
    }
    Ok(verified)
}

/// What applying an event did.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The projection now holds it.
    Applied,
    /// Older than the stored state: recorded, the projection unchanged.
    Superseded,
    /// Its id was taken before: nothing changed.
    Duplicate,
}

/// Applies an `account.updated` event to the application's projection, in
/// one transaction with its event-id row (the unique index makes a second
/// delivery change nothing) and its audit row. Events of one application
/// take turns (the tenant lock), so of concurrent ones the newest `created`
/// is what stays.
pub async fn apply_account_event(
    scope: &TenantScope,
    statuses: &ConnectStatuses,
    event: &ProcessorEvent,
) -> Result<Applied, BillingError> {
    let application_id = scope.tenant().id;
    let account = event.object_id.clone().unwrap_or_default();
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let seen = txn
        .find::<processor_event::Entity>()
        .filter(processor_event::Column::EventId.eq(event.id.as_str()))
        .one(txn.conn())
        .await?;
    if seen.is_some() {
        return Ok(Applied::Duplicate);
    }
    let stored = txn.find_by_id::<connect_status::Entity>(application_id).one(txn.conn()).await?;
    // An equal `created` applies: of two events of one second, the later delivered wins.
    let newer = match &stored {
        Some(row) => row.processor_account_id != account || event.created >= row.event_created,
        None => true,
    };
    let now = clock::now();
    let record = processor_event::Model {
        id: Uuid::now_v7(),
        application_id,
        event_id: event.id.clone(),
        event_type: event.event_type.clone(),
        processor_account_id: account.clone(),
        created: event.created,
        outcome: if newer { "applied" } else { "superseded" }.to_string(),
        received_at: now,
    };
    if let Err(err) = txn.insert(processor_event::ActiveModel::from(record)).await {
        return match err.sql_err() {
            Some(SqlErr::UniqueConstraintViolation(_)) => Ok(Applied::Duplicate),
            _ => Err(err.into()),
        };
    }
    if !newer {
        let data = json!({"event_id": event.id, "created": event.created,
            "stored_created": stored.map(|s| s.event_created), "processor_account_id": account});
        txn.audit(EventType::BillingProcessorEventSuperseded, Some(application_id), data).await?;
        txn.commit().await?;
        return Ok(Applied::Superseded);
    }
    let disabled_reason =
        event.object.pointer("/requirements/disabled_reason").and_then(Value::as_str).map(str::to_string);
    let row = connect_status::Model {
        application_id,
        processor_account_id: account.clone(),
        charges_enabled: event.flag("charges_enabled"),
        payouts_enabled: event.flag("payouts_enabled"),
        details_submitted: event.flag("details_submitted"),
        disabled_reason,
        event_created: event.created,
        event_id: event.id.clone(),
        updated_at: now,
    };
    match stored {
        Some(_) => {
            txn.update(connect_status::ActiveModel::from(row.clone()).reset_all()).await?;
        }
        None => txn.insert(connect_status::ActiveModel::from(row.clone())).await?,
    }
    let data = json!({
        "event_id": event.id,
        "created": event.created,
        "processor_account_id": account,
        "charges_enabled": row.charges_enabled,
        "payouts_enabled": row.payouts_enabled,
        "details_submitted": row.details_submitted,
        "disabled_reason": row.disabled_reason,
    });
    txn.audit(EventType::BillingConnectStatusUpdated, Some(application_id), data).await?;
    txn.commit().await?;
    statuses.changed(application_id).await;
    Ok(Applied::Applied)
}
