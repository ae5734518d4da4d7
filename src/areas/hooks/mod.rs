//! Hooks (operation 8, with create, list, get, delete) and calling them.
//! A `pre_sign_up` hook is POSTed `{"type":"pre_sign_up","application_id",
//! "data":{email, profile}}`, signed like a webhook with the hook's own
//! secret, and answers `{"decision":"allow"}` or `{"decision":"deny",
//! "message"}`. One deadline of `timeout_ms` covers connecting, sending and
//! reading; the answer is read up to 64 KiB; redirects are not followed.
//! When a hook gives no usable answer, `fail_open` lets the sign-up go on;
//! otherwise it fails with 503 `hook_unavailable`. Every call is an audit row.
pub mod http;
pub mod restrictions;

use std::time::{Duration, Instant};

use entity::hook;
use sea_orm::{sea_query::Expr, ColumnTrait, QueryFilter, QueryOrder, UpdateMany};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{
    validate::{Invalid, Issues},
    webhooks::{checked_url, InvalidUrl},
};
use crate::{
    audit::Actor,
    crypto::{master_key::MasterKey, seal},
    error::{ApiError, ApiResult, Code},
    events::catalog::EventType,
    events::{delivery::Clients, signing, url_safety::Reach},
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope},
    tenancy::{
        parts::{Rows, TenantPart},
        state::TenantState,
        InTurn, Tenant,
    },
};
use restrictions::SignUpRestrictions;

pub const POINTS: [&str; 1] = ["pre_sign_up"];
pub const DEFAULT_TIMEOUT_MS: i32 = 5000;
const MAX_ANSWER: usize = 64 * 1024;
/// Longest deny message passed on to the end user.
const MAX_MESSAGE_CHARS: usize = 500;

/// What went wrong with a hook, or what a sign-up's hooks decided.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hook `{0}` not found")]
    NotFound(Uuid),
    /// A hook said no; its message is for the end user.
    #[error("a hook denied the sign-up: {0}")]
    Denied(String),
    /// A hook that fails closed gave no usable answer.
    #[error("a sign-up hook is unavailable")]
    Unavailable,
    #[error(transparent)]
    InvalidUrl(#[from] InvalidUrl),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

impl From<HookError> for ApiError {
    fn from(err: HookError) -> Self {
        match err {
            HookError::NotFound(id) => ApiError::not_found("Hook", id),
            HookError::Denied(message) => ApiError::new(Code::SignUpDenied, message),
            HookError::Unavailable => {
                ApiError::new(Code::HookUnavailable, "A sign-up check is unavailable; try again shortly.")
                    .with_retry_after(1)
            }
            HookError::InvalidUrl(err) => err.into(),
            HookError::Invalid(err) => err.into(),
            HookError::Limit(err) => err.into(),
            HookError::Db(err) => err.into(),
        }
    }
}

fn timeout_issue(issues: &mut Issues, timeout_ms: i32) {
    if !(100..=15_000).contains(&timeout_ms) {
        issues.add("timeout_ms", "must be between 100 and 15000");
    }
}

fn description_issue(issues: &mut Issues, description: &Option<String>) {
    if let Some(description) = description {
        if description.chars().count() > 1024 || description.chars().any(|c| c.is_control() && c != '\n') {
            issues.add("description", "at most 1024 characters, no control characters");
        }
    }
}

pub struct NewHook {
    /// What the application may reach (the route asks the delivery clients).
    pub reach: Reach,
    pub point: String,
    pub url: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub fail_open: bool,
    pub timeout_ms: i32,
}

pub fn secret_context(application_id: Uuid, id: Uuid) -> String {
    format!("{application_id}/hook/{id}/secret")
}

pub async fn create(turn: &InTurn, new: NewHook, limit: u64) -> Result<(hook::Model, String), HookError> {
    let scope = turn.scope();
    let master_key = turn.master_key();
    let mut issues = Issues::default();
    if !POINTS.contains(&new.point.as_str()) {
        issues.add("point", format!("must be one of {}", POINTS.join(", ")));
    }
    timeout_issue(&mut issues, new.timeout_ms);
    description_issue(&mut issues, &new.description);
    issues.finish()?;
    let tenant = scope.tenant();
    let url = checked_url(&new.url, tenant.environment.is_live(), new.reach)?;
    let mut txn = scope.begin().await?;
    txn.reserve::<hook::Entity>(Limit { max: limit, what: "hooks", field: "url" }, |all| all).await?;
    let id = Uuid::now_v7();
    let secret = signing::generate_secret();
    let now = crate::clock::now();
    let row = hook::Model {
        id,
        application_id: tenant.id,
        point: new.point,
        url,
        description: new.description,
        enabled: new.enabled,
        fail_open: new.fail_open,
        timeout_ms: new.timeout_ms,
        secret_sealed: seal::seal(master_key, &secret_context(tenant.id, id), secret.as_bytes()),
        created_at: now,
        updated_at: now,
    };
    txn.insert(hook::ActiveModel::from(row.clone())).await?;
    txn.audit(EventType::HookCreated, Some(id), describe(&row)).await?;
    txn.commit().await?;
    Ok((row, secret))
}

fn describe(row: &hook::Model) -> Value {
    json!({
        "point": row.point,
        "host": crate::events::delivery::host_of(&row.url),
        "enabled": row.enabled,
        "fail_open": row.fail_open,
        "timeout_ms": row.timeout_ms,
    })
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<hook::Model>, bool), sea_orm::DbErr> {
    page.fetch(in_order(db), db.conn()).await
}

/// Every hook of the application in the order they run (creation order):
/// what the tenant's state holds.
pub async fn all(db: &impl TenantConn) -> Result<Vec<hook::Model>, sea_orm::DbErr> {
    in_order(db).all(db.conn()).await
}

/// The application's hooks in the order they run (a tenant part).
pub type Hooks = Rows<hook::Model>;

impl TenantPart for Hooks {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(Rows(all(scope).await?))
    }
}

fn in_order(db: &impl TenantConn) -> sea_orm::Select<hook::Entity> {
    db.find::<hook::Entity>().order_by_asc(hook::Column::CreatedAt).order_by_asc(hook::Column::Id)
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<hook::Model, HookError> {
    db.find_by_id::<hook::Entity>(id).one(db.conn()).await?.ok_or(HookError::NotFound(id))
}

#[derive(Default)]
pub struct HookPatch {
    /// What the application may reach (default: public addresses only).
    pub reach: Reach,
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub fail_open: Option<bool>,
    pub timeout_ms: Option<i32>,
}

pub async fn update(turn: &InTurn, id: Uuid, patch: HookPatch) -> Result<hook::Model, HookError> {
    let scope = turn.scope();
    let tenant = scope.tenant();
    let mut issues = Issues::default();
    if let Some(timeout_ms) = patch.timeout_ms {
        timeout_issue(&mut issues, timeout_ms);
    }
    if let Some(description) = &patch.description {
        description_issue(&mut issues, description);
    }
    issues.finish()?;
    let url = patch.url.map(|url| checked_url(&url, tenant.environment.is_live(), patch.reach)).transpose()?;
    let mut txn = scope.begin().await?;
    let mut row = find(&txn, id).await?;
    row.url = url.unwrap_or(row.url);
    row.description = patch.description.unwrap_or(row.description);
    row.enabled = patch.enabled.unwrap_or(row.enabled);
    row.fail_open = patch.fail_open.unwrap_or(row.fail_open);
    row.timeout_ms = patch.timeout_ms.unwrap_or(row.timeout_ms);
    row.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<hook::Entity>| {
        q.col_expr(hook::Column::Url, Expr::value(row.url.clone()))
            .col_expr(hook::Column::Description, Expr::value(row.description.clone()))
            .col_expr(hook::Column::Enabled, Expr::value(row.enabled))
            .col_expr(hook::Column::FailOpen, Expr::value(row.fail_open))
            .col_expr(hook::Column::TimeoutMs, Expr::value(row.timeout_ms))
            .col_expr(hook::Column::UpdatedAt, Expr::value(row.updated_at))
            .filter(hook::Column::Id.eq(id))
    })
    .await?;
    txn.audit(EventType::HookUpdated, Some(id), describe(&row)).await?;
    txn.commit().await?;
    Ok(row)
}

pub async fn delete(turn: &InTurn, id: Uuid) -> Result<(), HookError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    txn.delete::<hook::Entity>(hook::Column::Id.eq(id)).await?;
    txn.audit(EventType::HookDeleted, Some(id), describe(&row)).await?;
    txn.commit().await?;
    Ok(())
}

/// What one call came to.
#[derive(Debug)]
enum Outcome {
    Allow,
    Deny(String),
    /// No usable answer: timeout, connection error, non-2xx, unreadable body.
    Failed(&'static str, Option<u16>),
}

/// Everything a hook call needs from the node.
pub struct Caller<'a> {
    pub master_key: &'a MasterKey,
    pub clients: &'a Clients,
    /// All of one sign-up's hook calls together (`hooks.total_timeout_ms`).
    pub total_timeout: Duration,
}

/// Checks a sign-up against the application's restrictions, then runs its
/// enabled `pre_sign_up` hooks in order; the first refusal, deny or closed
/// failure stops the sign-up. Both come from the tenant's state: no query
/// when there are none.
pub async fn pre_sign_up(
    caller: &Caller<'_>,
    scope: &TenantScope,
    state: &TenantState,
    email: &str,
    profile: &Value,
) -> Result<(), HookError> {
    state.part::<SignUpRestrictions>().check(email)?;
    let hooks = state.part::<Hooks>();
    let tenant = scope.tenant();
    let mut hooks = hooks.iter().filter(|h| h.point == "pre_sign_up" && h.enabled).peekable();
    if hooks.peek().is_none() {
        return Ok(());
    }
    let body = json!({
        "type": "pre_sign_up",
        "application_id": tenant.id,
        "data": {"email": email, "profile": profile},
    })
    .to_string();
    let deadline = Instant::now() + caller.total_timeout;
    for hook in hooks {
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        let outcome = call(caller, tenant, hook, &body, left).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        record_call(scope, hook, &outcome, duration_ms).await?;
        match outcome {
            Outcome::Allow => {}
            Outcome::Deny(message) => return Err(HookError::Denied(message)),
            Outcome::Failed(..) if hook.fail_open => {}
            Outcome::Failed(..) => return Err(HookError::Unavailable),
        }
    }
    Ok(())
}

async fn record_call(
    scope: &TenantScope,
    hook: &hook::Model,
    outcome: &Outcome,
    duration_ms: u64,
) -> Result<(), sea_orm::DbErr> {
    let (result, reason, status) = match outcome {
        Outcome::Allow => ("allow", None, None),
        Outcome::Deny(_) => ("deny", None, None),
        Outcome::Failed(reason, status) => ("failed", Some(*reason), *status),
    };
    let data = json!({
        "point": hook.point,
        "outcome": result,
        "error": reason,
        "response_status": status,
        "duration_ms": duration_ms,
        "fail_open": hook.fail_open,
    });
    let mut txn = scope.begin().await?;
    txn.audit_as(&Actor::public(), EventType::HookCalled, Some(hook.id), data).await?;
    txn.commit().await?;
    Ok(())
}

/// One call, bounded by the smaller of the hook's own timeout and `left` of
/// the sign-up's overall deadline (none left: a timeout without a call).
async fn call(caller: &Caller<'_>, tenant: &Tenant, hook: &hook::Model, body: &str, left: Duration) -> Outcome {
    let deadline = Duration::from_millis(hook.timeout_ms.max(1) as u64).min(left);
    if deadline.is_zero() {
        return Outcome::Failed("timeout", None);
    }
    match tokio::time::timeout(deadline, exchange(caller, tenant, hook, body, deadline)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Failed("timeout", None),
    }
}

async fn exchange(caller: &Caller<'_>, tenant: &Tenant, hook: &hook::Model, body: &str, deadline: Duration) -> Outcome {
    let production = tenant.environment.is_live();
    let reach = caller.clients.reach(production);
    let Ok(url) = crate::events::url_safety::check(&hook.url, production, reach) else {
        return Outcome::Failed("blocked_destination", None);
    };
    let Ok(secret) = seal::open(caller.master_key, &secret_context(tenant.id, hook.id), &hook.secret_sealed) else {
        return Outcome::Failed("secret_unavailable", None);
    };
    let secret = String::from_utf8_lossy(&secret).into_owned();
    let message_id = format!("hook_{}", Uuid::now_v7().simple());
    let timestamp = crate::clock::now().timestamp();
    let response = caller
        .clients
        .client(reach)
        .post(url)
        .timeout(deadline)
        .header("content-type", "application/json")
        .header("webhook-id", &message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signing::sign(&secret, &message_id, timestamp, body))
        .body(body.to_string())
        .send()
        .await;
    let mut response = match response {
        Ok(response) => response,
        Err(err) => return Outcome::Failed(crate::events::delivery::failure_class(&err), None),
    };
    let status = response.status().as_u16();
    if !response.status().is_success() {
        return Outcome::Failed("status", Some(status));
    }
    let mut answer = Vec::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(_) => return Outcome::Failed("read", Some(status)),
        };
        if answer.len() + chunk.len() > MAX_ANSWER {
            return Outcome::Failed("answer_too_large", Some(status));
        }
        answer.extend_from_slice(&chunk);
    }
    decide(&answer).unwrap_or(Outcome::Failed("unreadable_answer", Some(status)))
}

fn decide(answer: &[u8]) -> Option<Outcome> {
    let answer: Value = serde_json::from_slice(answer).ok()?;
    match answer.get("decision")?.as_str()? {
        "allow" => Some(Outcome::Allow),
        "deny" => {
            let message = answer.get("message").and_then(Value::as_str).unwrap_or("Sign-up was denied.");
            let message: String =
                message.chars().filter(|c| !c.is_control()).take(MAX_MESSAGE_CHARS).collect::<String>();
            Some(Outcome::Deny(if message.trim().is_empty() { "Sign-up was denied.".into() } else { message }))
        }
        _ => None,
    }
}
