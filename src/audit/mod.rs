//! The audit log: one hash chain per application, appended in the same
//! transaction as the change it records. [`record`] is the writer,
//! [`chain`] the hash and its verification, [`query`] the filters of the
//! list and export operations.
pub mod chain;
pub mod query;

use entity::{audit_event, audit_head};
use sea_orm::{sea_query::Expr, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde::Serialize;
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    User,
    ApiKey,
    System,
    Public,
}

impl ActorKind {
    pub const ALL: [ActorKind; 4] = [ActorKind::User, ActorKind::ApiKey, ActorKind::System, ActorKind::Public];

    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::User => "user",
            ActorKind::ApiKey => "api_key",
            ActorKind::System => "system",
            ActorKind::Public => "public",
        }
    }

    pub fn parse(value: &str) -> Option<ActorKind> {
        ActorKind::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

/// Who made a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub kind: ActorKind,
    pub id: Option<String>,
}

impl Actor {
    pub fn api_key(key_id: Uuid) -> Actor {
        Actor { kind: ActorKind::ApiKey, id: Some(key_id.to_string()) }
    }

    pub fn user(user_id: Uuid) -> Actor {
        Actor { kind: ActorKind::User, id: Some(user_id.to_string()) }
    }

    pub fn public() -> Actor {
        Actor { kind: ActorKind::Public, id: None }
    }

    pub fn system() -> Actor {
        Actor { kind: ActorKind::System, id: None }
    }
}

/// Starts an application's chain; part of creating the application.
pub async fn init_chain(db: &impl ConnectionTrait, application_id: Uuid) -> Result<(), DbErr> {
    audit_head::Entity::insert(audit_head::ActiveModel {
        application_id: Set(application_id),
        seq: Set(0),
        hash: Set(chain::GENESIS.to_string()),
    })
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Appends one row to the application's chain, and its webhook messages to
/// the outbox. Call it inside the transaction of the change it records.
///
/// The first statement bumps the chain head and returns the new `seq` with
/// the previous hash; that row stays locked until the transaction ends, so
/// concurrent writers (on any node) take turns and the chain never forks.
pub async fn record(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    actor: &Actor,
    event_type: &str,
    aggregate_id: Option<Uuid>,
    data: serde_json::Value,
) -> Result<audit_event::Model, DbErr> {
    let head = audit_head::Entity::update_many()
        .col_expr(audit_head::Column::Seq, Expr::col(audit_head::Column::Seq).add(1))
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .exec_with_returning(db)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| DbErr::RecordNotFound(format!("audit chain of application {application_id}")))?;
    let row = chain::ChainedRow::new(head.seq, head.hash, event_type, actor, aggregate_id, &data)
        .map_err(|e| DbErr::Custom(format!("audit data cannot be canonicalised: {e}")))?;
    audit_head::Entity::update_many()
        .col_expr(audit_head::Column::Hash, Expr::value(row.hash.clone()))
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .exec(db)
        .await?;
    let model = audit_event::Model {
        id: row.id,
        application_id,
        seq: row.seq,
        event_type: event_type.to_string(),
        actor_kind: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        aggregate_id,
        occurred_at: row.occurred_at,
        data: row.data,
        prev_hash: row.prev_hash,
        hash: row.hash,
    };
    audit_event::Entity::insert(audit_event::ActiveModel::from(model.clone())).exec_without_returning(db).await?;
    crate::events::outbox::enqueue(db, &model).await?;
    Ok(model)
}
