//! Filters of the audit list and export, and reading the chain back.
use chrono::DateTime;
use entity::{audit_event, audit_head};
use sea_orm::{
    sea_query::{Expr, LikeExpr},
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{
    chain::{ChainBreak, Verifier},
    personal::{self, Personal},
    ActorKind,
};
use crate::{
    error::{ApiError, ApiResult},
    storage::{Page, TenantConn},
};

/// The query string of `GET /v1/audit-logs` and `/export`.
/// An empty filter is no filter (a form's blank field). Its paging
/// (`limit`, `offset`) is declared by each route, whose bounds differ.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Exact event type, or a dotted family (`api_key` matches `api_key.created`).
    #[serde(rename = "type")]
    #[param(pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub event_type: Option<String>,
    #[param(pattern = "^(user|api_key|system|public|oauth_client)?$")]
    pub actor_kind: Option<String>,
    /// The resource the rows are about.
    #[param(schema_with = crate::json_schema::filter_uuid)]
    pub aggregate_id: Option<String>,
    /// Free-text match on the event type.
    #[param(pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    pub search: Option<String>,
    /// Inclusive lower bound on `occurred_at`.
    #[param(schema_with = crate::json_schema::filter_time)]
    pub after: Option<String>,
    /// Inclusive upper bound on `occurred_at`.
    #[param(schema_with = crate::json_schema::filter_time)]
    pub before: Option<String>,
    #[param(ignore)]
    pub limit: Option<i64>,
    #[param(ignore)]
    pub offset: Option<i64>,
}

pub struct AuditFilter {
    condition: Condition,
    pub page: Page,
}

impl AuditFilter {
    pub fn parse(query: AuditQuery, default_limit: u64, max_limit: u64) -> ApiResult<AuditFilter> {
        let page = Page::parse(query.limit, query.offset, default_limit, max_limit)?;
        let mut condition = Condition::all();
        if let Some(family) = non_empty(query.event_type) {
            let family = family.to_lowercase();
            condition = condition.add(
                Condition::any()
                    .add(audit_event::Column::EventType.eq(family.clone()))
                    .add(like(format!("{}.%", escape_like(&family)))),
            );
        }
        if let Some(kind) = non_empty(query.actor_kind) {
            let kind = ActorKind::parse(&kind).ok_or_else(|| {
                ApiError::invalid("actor_kind", "must be one of user, api_key, system, public, oauth_client")
            })?;
            condition = condition.add(audit_event::Column::ActorKind.eq(kind.as_str()));
        }
        if let Some(id) = non_empty(query.aggregate_id) {
            let id = Uuid::parse_str(&id).map_err(|_| ApiError::invalid("aggregate_id", "must be a UUID"))?;
            condition = condition.add(audit_event::Column::AggregateId.eq(id));
        }
        if let Some(text) = non_empty(query.search) {
            condition = condition.add(like(format!("%{}%", escape_like(&text.to_lowercase()))));
        }
        if let Some(after) = non_empty(query.after) {
            condition = condition.add(audit_event::Column::OccurredAt.gte(time_bound("after", &after)?));
        }
        if let Some(before) = non_empty(query.before) {
            // Rows carry microseconds: a bound of whole seconds includes that second's last microsecond.
            condition = condition.add(audit_event::Column::OccurredAt.lte(time_bound("before", &before)?));
        }
        Ok(AuditFilter { condition, page })
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

fn like(pattern: String) -> sea_orm::sea_query::SimpleExpr {
    Expr::col(audit_event::Column::EventType).like(LikeExpr::new(pattern).escape('\\'))
}

/// `%`, `_` and `\` in user text match themselves.
fn escape_like(text: &str) -> String {
    text.chars().fold(String::with_capacity(text.len()), |mut out, c| {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

fn time_bound(field: &str, value: &str) -> ApiResult<String> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| crate::clock::format(t.to_utc()))
        .map_err(|_| ApiError::invalid(field, "must be an RFC 3339 date-time"))
}

/// An audit row as the API answers it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditRow {
    pub id: Uuid,
    pub seq: i64,
    #[serde(rename = "type")]
    pub event_type: String,
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub aggregate_id: Option<Uuid>,
    pub occurred_at: String,
    /// As stored and hashed: personal data in it is sealed, under
    /// `personal` (see the row's `personal` for it opened).
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    pub prev_hash: String,
    pub hash: String,
    /// The personal data the row carries (an email, a device's name),
    /// opened; null when it carries none or its subject was erased.
    #[schema(value_type = Option<Object>)]
    pub personal: Option<serde_json::Map<String, serde_json::Value>>,
    /// The row carried personal data of a user who was erased since: it
    /// still verifies, and no longer says who.
    pub erased: bool,
}

impl AuditRow {
    /// The row as stored, with what [`personal::open_rows`] found in it.
    fn new(row: audit_event::Model, data: serde_json::Value, opened: Personal) -> Self {
        let (personal, erased) = match opened {
            Personal::None => (None, false),
            Personal::Opened(fields) => (Some(fields), false),
            Personal::Erased => (None, true),
        };
        AuditRow {
            data,
            personal,
            erased,
            id: row.id,
            seq: row.seq,
            event_type: row.event_type,
            actor_kind: row.actor_kind,
            actor_id: row.actor_id,
            aggregate_id: row.aggregate_id,
            occurred_at: row.occurred_at,
            prev_hash: row.prev_hash,
            hash: row.hash,
        }
    }
}

/// One page of rows in `seq` order, and whether more follow.
pub async fn list(db: &impl TenantConn, filter: AuditFilter) -> Result<(Vec<AuditRow>, bool), DbErr> {
    let query = db.find::<audit_event::Entity>().filter(filter.condition).order_by_asc(audit_event::Column::Seq);
    let (rows, has_more) = filter.page.fetch(query, db.conn()).await?;
    Ok((readable(db, rows).await?, has_more))
}

/// Rows as the API answers them, their personal data opened.
pub async fn readable(db: &impl TenantConn, rows: Vec<audit_event::Model>) -> Result<Vec<AuditRow>, DbErr> {
    let datas: Vec<serde_json::Value> =
        rows.iter().map(|row| serde_json::from_str(&row.data).unwrap_or(serde_json::Value::Null)).collect();
    let opened =
        personal::open_rows(db.conn(), db.master_key(), db.application_id(), &datas.iter().collect::<Vec<_>>()).await?;
    Ok(rows.into_iter().zip(datas).zip(opened).map(|((row, data), opened)| AuditRow::new(row, data, opened)).collect())
}

/// Recomputes an application's whole chain from the database. `Ok` carries
/// the number of rows verified; `Err` names the first row that does not hold.
/// The operator's command (`gatehouse audit verify`): it reads a chain by
/// id in every held region, with no principal, so its queries are raw.
#[allow(clippy::disallowed_methods)]
pub async fn verify(db: &impl ConnectionTrait, application_id: Uuid) -> Result<Result<i64, ChainBreak>, DbErr> {
    const PAGE: u64 = 1000;
    // The head first, then the rows up to it: rows are linked and the head
    // moved in one transaction, so a batch linked while this reads lies
    // beyond the head read, not between it and the rows.
    let head = audit_head::Entity::find_by_id(application_id).one(db).await?;
    let (seq, hash) = head.map(|h| (h.seq, h.hash)).unwrap_or((0, super::chain::GENESIS.to_string()));
    let mut verifier = Verifier::default();
    let mut after_seq = 0;
    loop {
        let rows = audit_event::Entity::find()
            .filter(audit_event::Column::ApplicationId.eq(application_id))
            .filter(audit_event::Column::Seq.gt(after_seq))
            .filter(audit_event::Column::Seq.lte(seq))
            .order_by_asc(audit_event::Column::Seq)
            .limit(PAGE)
            .all(db)
            .await?;
        for row in &rows {
            if let Err(broken) = verifier.check(row) {
                return Ok(Err(broken));
            }
        }
        match rows.last() {
            Some(last) if rows.len() as u64 == PAGE => after_seq = last.seq,
            _ => break,
        }
    }
    Ok(verifier.finish(seq, &hash))
}
