//! The outbox: for an audit row just written, one message per active
//! endpoint of the application whose filter takes its type, in the same
//! transaction. A filter entry takes a type equal to it or starting with it
//! followed by a dot; no entries take every type.
//!
//! Part of the audit writer (`audit::chain_rows` calls it for the rows it
//! just chained, in their transaction), so its queries are raw and filter on
//! the rows' own `application_id`.
#![allow(clippy::disallowed_methods)]
use entity::{audit_event, webhook, webhook_message};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde_json::json;
use uuid::Uuid;

pub const ACTIVE: &str = "active";
pub const PENDING: &str = "pending";

pub fn filter_takes(filter: &[String], event_type: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| {
            event_type == f || (event_type.starts_with(f.as_str()) && event_type.as_bytes().get(f.len()) == Some(&b'.'))
        })
}

/// The body delivered for an audit row: `{type, timestamp, data}`.
pub fn payload(event: &audit_event::Model) -> String {
    let attributes: serde_json::Value = serde_json::from_str(&event.data).unwrap_or_default();
    json!({
        "type": event.event_type,
        "timestamp": event.occurred_at,
        "data": {
            "event_id": event.id,
            "seq": event.seq,
            "aggregate_id": event.aggregate_id,
            "actor_kind": event.actor_kind,
            "actor_id": event.actor_id,
            "attributes": attributes,
        },
    })
    .to_string()
}

/// An active endpoint of the application: where its messages go and which
/// types it takes.
pub struct Endpoint {
    id: Uuid,
    filter: Vec<String>,
}

/// The application's active endpoints, read in the caller's transaction.
pub async fn active_endpoints(db: &impl ConnectionTrait, application_id: Uuid) -> Result<Vec<Endpoint>, DbErr> {
    let endpoints = webhook::Entity::find()
        .filter(webhook::Column::ApplicationId.eq(application_id))
        .filter(webhook::Column::Status.eq(ACTIVE))
        .all(db)
        .await?;
    Ok(endpoints
        .into_iter()
        .map(|e| Endpoint { id: e.id, filter: serde_json::from_value(e.event_types).unwrap_or_default() })
        .collect())
}

/// Queues a message per event for every endpoint whose filter takes it;
/// `events` are rows of the endpoints' application, in the caller's
/// transaction.
pub async fn enqueue(
    db: &impl ConnectionTrait,
    endpoints: &[Endpoint],
    events: &[audit_event::Model],
) -> Result<(), DbErr> {
    if endpoints.is_empty() {
        return Ok(());
    }
    let now = crate::clock::now();
    let mut messages: Vec<webhook_message::ActiveModel> = Vec::new();
    for event in events {
        let payload = payload(event);
        for endpoint in endpoints.iter().filter(|e| filter_takes(&e.filter, &event.event_type)) {
            messages.push(
                webhook_message::Model {
                    id: Uuid::now_v7(),
                    application_id: event.application_id,
                    webhook_id: endpoint.id,
                    event_type: event.event_type.clone(),
                    payload: payload.clone(),
                    status: PENDING.to_string(),
                    attempts_made: 0,
                    next_attempt_at: Some(now),
                    lease_until: None,
                    created_at: now,
                }
                .into(),
            );
        }
    }
    if !messages.is_empty() {
        webhook_message::Entity::insert_many(messages).exec_without_returning(db).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_takes_exact_types_and_whole_dotted_families() {
        let filter = vec!["api_key".to_string(), "user.created".to_string()];
        assert!(filter_takes(&filter, "api_key.created"));
        assert!(filter_takes(&filter, "user.created"));
        assert!(!filter_takes(&filter, "user.deleted"));
        assert!(!filter_takes(&filter, "api_keys.created"));
        assert!(filter_takes(&[], "anything.at_all"));
    }
}
