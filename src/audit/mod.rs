//! The audit log: one hash chain per application, appended in the same
//! transaction as the change it records. [`Appender`] is the writer (used
//! through [`crate::storage::TenantTxn::audit`]),
//! [`chain`] the hash and its verification, [`query`] the filters of the
//! list and export operations.
pub mod chain;
pub mod query;

use chrono::{DateTime, Utc};
use entity::{audit_event, audit_head};
use sea_orm::{sea_query::Expr, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde::Serialize;
use uuid::Uuid;

use crate::storage::{TenantConn, TenantTxn};

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
pub async fn init_chain(txn: &mut TenantTxn) -> Result<(), DbErr> {
    txn.insert(audit_head::ActiveModel {
        application_id: Set(txn.application_id()),
        seq: Set(0),
        hash: Set(chain::GENESIS.to_string()),
        fenced_at: Set(None),
    })
    .await
}

/// Fences the application in this database, in the transaction of a
/// region move's copy that holds its chain head: from the commit on, no
/// write of it commits here. An audited write fails its head update; any
/// other write checks the fence before it commits ([`check_unfenced`]).
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
pub async fn fence(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    fenced: Option<DateTime<Utc>>,
) -> Result<(), DbErr> {
    audit_head::Entity::update_many()
        .col_expr(audit_head::Column::FencedAt, Expr::value(fenced))
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .exec(db)
        .await?;
    Ok(())
}

/// The applications fenced in this database ([`fence`]), with when.
#[allow(clippy::disallowed_methods)] // the chain writer: reads every chain's head
pub async fn fenced_applications(db: &impl ConnectionTrait) -> Result<Vec<(Uuid, DateTime<Utc>)>, DbErr> {
    let heads = audit_head::Entity::find().filter(audit_head::Column::FencedAt.is_not_null()).all(db).await?;
    Ok(heads.into_iter().filter_map(|head| Some((head.application_id, head.fenced_at?))).collect())
}

/// Marks the application's rows in a database it does not live in (its
/// chain copied ahead of a move there) with a fenced head: no write of it
/// commits there, and if the move does not follow, the stalled-move scan
/// finds and removes them. The move's copy replaces the head.
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
pub async fn mark_copied_ahead(db: &impl ConnectionTrait, application_id: Uuid) -> Result<(), DbErr> {
    use sea_orm::sea_query::OnConflict;
    let head = audit_head::ActiveModel {
        application_id: Set(application_id),
        seq: Set(0),
        hash: Set(chain::GENESIS.to_string()),
        fenced_at: Set(Some(crate::clock::now())),
    };
    let fence_again =
        OnConflict::column(audit_head::Column::ApplicationId).update_column(audit_head::Column::FencedAt).to_owned();
    audit_head::Entity::insert(head).on_conflict(fence_again).exec_without_returning(db).await?;
    Ok(())
}

/// Fails when the application is fenced (or its chain gone) here
/// (`error::fenced`): the check of a change that appends no audit row. A
/// plain read, not a lock: such changes (key last-use, sign-in steps,
/// queued mail) must not queue behind every audited write of their
/// application, so one that commits while a move's copy runs (not after
/// it) can still be missed by that copy.
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
pub async fn check_unfenced(db: &impl ConnectionTrait, application_id: Uuid) -> Result<(), DbErr> {
    let head = audit_head::Entity::find()
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .filter(audit_head::Column::FencedAt.is_null())
        .one(db)
        .await?;
    head.map(|_| ()).ok_or_else(crate::error::fenced)
}

/// One row to append.
pub struct Entry<'a> {
    /// Set by a writer that must be able to tell later whether it already
    /// appended this row (a relay retried after a crash); otherwise new.
    pub id: Option<Uuid>,
    pub actor: &'a Actor,
    pub event_type: &'a str,
    pub aggregate_id: Option<Uuid>,
    pub data: serde_json::Value,
}

/// Appends rows to the application's chain in the given order, and their
/// webhook messages to the outbox, with a fixed number of statements
/// however many rows: an [`Appender`] used once.
///
/// A transaction appending to several chains must do so in order of
/// application id, so two such transactions cannot deadlock.
///
/// Changes record their rows through [`crate::storage::TenantTxn::audit`],
/// which holds an [`Appender`] for its transaction; the other callers are
/// the group-committed refresh rotator, whose one transaction spans
/// applications, and the delivery worker (clippy's `disallowed_methods`
/// refuses any other).
#[allow(clippy::disallowed_methods)] // the one-shot form of the chain writer
pub async fn append(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    entries: Vec<Entry<'_>>,
) -> Result<Vec<audit_event::Model>, DbErr> {
    let mut appender = Appender::new(application_id);
    let rows = appender.append(db, entries).await?;
    appender.finish(db).await?;
    Ok(rows)
}

/// One transaction's writer of an application's chain.
///
/// Its first append bumps the chain's head and reads the previous hash;
/// that row then stays locked until the transaction ends, so concurrent
/// writers (on any node) take turns and the chain never forks. Holding the
/// locked head, later appends in the same transaction chain on from it
/// without reading it again. [`Appender::finish`], before the commit,
/// writes every row the transaction appended (a sign-in's two in one
/// statement), their messages to the endpoints the first append read, and
/// the head.
pub struct Appender {
    application_id: Uuid,
    held: Option<Held>,
}

/// What the first append read: the head as this transaction has moved it,
/// and the active webhook endpoints; and the rows appended since, written
/// by [`Appender::finish`].
struct Held {
    seq: i64,
    hash: String,
    endpoints: Vec<crate::events::outbox::Endpoint>,
    rows: Vec<audit_event::Model>,
}

/// Rows per `INSERT` when a transaction appended many (11 columns each,
/// well under SQLite's 32,766 parameters).
const ROWS_PER_INSERT: usize = 256;

impl Appender {
    pub fn new(application_id: Uuid) -> Appender {
        Appender { application_id, held: None }
    }

    /// Appends rows in order (see the type's comment).
    #[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
    pub async fn append(
        &mut self,
        db: &impl ConnectionTrait,
        entries: Vec<Entry<'_>>,
    ) -> Result<Vec<audit_event::Model>, DbErr> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let application_id = self.application_id;
        let count = entries.len() as i64;
        let held = match &mut self.held {
            Some(held) => held,
            None => {
                let head = audit_head::Entity::update_many()
                    .col_expr(audit_head::Column::Seq, Expr::col(audit_head::Column::Seq).add(count))
                    .filter(audit_head::Column::ApplicationId.eq(application_id))
                    .filter(audit_head::Column::FencedAt.is_null())
                    .exec_with_returning(db)
                    .await?
                    .into_iter()
                    .next()
                    .ok_or_else(crate::error::fenced)?;
                let endpoints = crate::events::outbox::active_endpoints(db, application_id).await?;
                // As if nothing were appended yet: the loop below counts these rows.
                self.held.insert(Held { seq: head.seq - count, hash: head.hash, endpoints, rows: Vec::new() })
            }
        };
        let mut prev_hash = held.hash.clone();
        let mut models = Vec::with_capacity(entries.len());
        for (seq, entry) in (held.seq + 1..).zip(entries) {
            let row = chain::ChainedRow::new(
                entry.id.unwrap_or_else(Uuid::now_v7),
                seq,
                prev_hash,
                entry.event_type,
                entry.actor,
                entry.aggregate_id,
                &entry.data,
            )
            .map_err(|e| DbErr::Custom(format!("audit data cannot be canonicalised: {e}")))?;
            prev_hash = row.hash.clone();
            models.push(audit_event::Model {
                id: row.id,
                application_id,
                seq: row.seq,
                event_type: entry.event_type.to_string(),
                actor_kind: entry.actor.kind.as_str().to_string(),
                actor_id: entry.actor.id.clone(),
                aggregate_id: entry.aggregate_id,
                occurred_at: row.occurred_at,
                data: row.data,
                prev_hash: row.prev_hash,
                hash: row.hash,
            });
        }
        held.rows.extend(models.iter().cloned());
        held.seq += count;
        held.hash = prev_hash;
        Ok(models)
    }

    /// Writes the rows this transaction appended, their webhook messages
    /// and the head it moved (nothing if it appended nothing); the
    /// transaction must commit after this, not before. A row whose id is
    /// already in the chain fails here, as a unique violation.
    #[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
    pub async fn finish(self, db: &impl ConnectionTrait) -> Result<(), DbErr> {
        let Some(Held { seq, hash, endpoints, mut rows }) = self.held else {
            return Ok(());
        };
        while !rows.is_empty() {
            let later = rows.split_off(rows.len().min(ROWS_PER_INSERT));
            // The messages first: they read the rows the INSERT then takes.
            crate::events::outbox::enqueue(db, &endpoints, &rows).await?;
            audit_event::Entity::insert_many(rows.into_iter().map(audit_event::ActiveModel::from))
                .exec_without_returning(db)
                .await?;
            rows = later;
        }
        audit_head::Entity::update_many()
            .col_expr(audit_head::Column::Seq, Expr::value(seq))
            .col_expr(audit_head::Column::Hash, Expr::value(hash))
            .filter(audit_head::Column::ApplicationId.eq(self.application_id))
            .exec(db)
            .await?;
        Ok(())
    }
}
