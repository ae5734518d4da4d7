//! The audit log: one hash chain per application. A change commits its
//! rows in its own transaction as pending rows
//! ([`crate::storage::TenantTxn::audit`]); [`link`] chains them in batches
//! right after, so one head update commits many rows (group commit).
//! [`chain`] is the hash and its verification, [`personal`] the personal
//! data rows carry sealed per person (erasable), [`query`] the filters of
//! the list and export operations.
pub mod chain;
pub mod link;
pub mod personal;
pub mod query;

use chrono::{DateTime, Utc};
use entity::{audit_event, audit_head, audit_pending};
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
    /// An OAuth client of the application's OpenID Provider.
    OAuthClient,
    /// An organization's SCIM directory (its identity provider provisioning).
    ScimDirectory,
}

impl ActorKind {
    pub const ALL: [ActorKind; 6] = [
        ActorKind::User,
        ActorKind::ApiKey,
        ActorKind::System,
        ActorKind::Public,
        ActorKind::OAuthClient,
        ActorKind::ScimDirectory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::User => "user",
            ActorKind::ApiKey => "api_key",
            ActorKind::System => "system",
            ActorKind::Public => "public",
            ActorKind::OAuthClient => "oauth_client",
            ActorKind::ScimDirectory => "scim_directory",
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

    pub fn oauth_client(client_id: Uuid) -> Actor {
        Actor { kind: ActorKind::OAuthClient, id: Some(client_id.to_string()) }
    }

    pub fn scim_directory(directory_id: Uuid) -> Actor {
        Actor { kind: ActorKind::ScimDirectory, id: Some(directory_id.to_string()) }
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
/// other write checks the fence before it commits ([`hold_unfenced`]).
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

/// Holds the application's chain head against a region move's copy until
/// the transaction ends, or fails when the application is fenced (or its
/// chain gone) here (`error::fenced`): the last check of every change
/// before its commit. On PostgreSQL a `FOR KEY SHARE` lock: writers do not
/// wait for each other (nor for the linker's head update), and the copy's
/// `FOR UPDATE` waits for every writer that holds one, so what they commit
/// is in the copy, and a writer after the copy finds the fence. (SQLite has
/// one writer: the copy holds the file's write lock.)
pub async fn hold_unfenced(db: &impl ConnectionTrait, application_id: Uuid) -> Result<(), DbErr> {
    lock_head(db, application_id, sea_orm::sea_query::LockType::KeyShare).await
}

/// Locks the application's unfenced chain head as `lock` says (on
/// PostgreSQL; SQLite's writer holds the file); `error::fenced` when it
/// is fenced or gone.
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
pub(crate) async fn lock_head(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    lock: sea_orm::sea_query::LockType,
) -> Result<(), DbErr> {
    use sea_orm::QuerySelect;
    let mut query = audit_head::Entity::find()
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .filter(audit_head::Column::FencedAt.is_null());
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        query = query.lock(lock);
    }
    query.one(db).await?.map(|_| ()).ok_or_else(crate::error::fenced)
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

impl Entry<'_> {
    /// The row as the chain will store it, timed now, not yet chained.
    pub fn unchained(self, application_id: Uuid) -> Result<audit_pending::Model, DbErr> {
        let data = chain::canonical(&self.data)
            .map_err(|e| DbErr::Custom(format!("audit data cannot be canonicalised: {e}")))?;
        Ok(audit_pending::Model {
            id: self.id.unwrap_or_else(Uuid::now_v7),
            application_id,
            event_type: self.event_type.to_string(),
            actor_kind: self.actor.kind.as_str().to_string(),
            actor_id: self.actor.id.clone(),
            aggregate_id: self.aggregate_id,
            occurred_at: crate::clock::format(crate::clock::now()),
            data,
        })
    }
}

/// Appends rows to the application's chain in the given order, and their
/// webhook messages to the outbox, within the caller's transaction: the
/// head stays locked until it ends. A transaction appending to several
/// chains must do so in order of application id, so two such transactions
/// cannot deadlock.
///
/// Changes record their rows through [`crate::storage::TenantTxn::audit`],
/// which commits them as pending rows that [`link`] chains in batches;
/// the callers of this are the group-committed refresh rotator, whose one
/// transaction spans applications, and the delivery worker (clippy's
/// `disallowed_methods` refuses any other).
#[allow(clippy::disallowed_methods)] // the one-shot form of the chain writer
pub async fn append(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    entries: Vec<Entry<'_>>,
) -> Result<Vec<audit_event::Model>, DbErr> {
    let rows = entries.into_iter().map(|e| e.unchained(application_id)).collect::<Result<Vec<_>, _>>()?;
    chain_rows(db, application_id, &rows).await
}

/// Rows per `INSERT` when many are appended (11 columns each, well under
/// SQLite's 32,766 parameters).
const ROWS_PER_INSERT: usize = 256;

/// Chains `rows` onto the application's head in order and writes them, their
/// webhook messages and the head. The head's update comes first and locks
/// it (concurrent writers on any node take turns, and the chain never
/// forks); a fenced head fails (`error::fenced`). A row whose id is already
/// in the chain fails, as a unique violation.
#[allow(clippy::disallowed_methods)] // the chain writer: every statement names the chain's application
pub async fn chain_rows(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    rows: &[audit_pending::Model],
) -> Result<Vec<audit_event::Model>, DbErr> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let count = rows.len() as i64;
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
    let mut prev_hash = head.hash;
    let mut models = Vec::with_capacity(rows.len());
    for (seq, row) in (head.seq - count + 1..).zip(rows) {
        let chained = chain::ChainedRow::of(row, seq, prev_hash);
        prev_hash = chained.hash.clone();
        models.push(audit_event::Model {
            id: chained.id,
            application_id,
            seq: chained.seq,
            event_type: row.event_type.clone(),
            actor_kind: row.actor_kind.clone(),
            actor_id: row.actor_id.clone(),
            aggregate_id: row.aggregate_id,
            occurred_at: chained.occurred_at,
            data: chained.data,
            prev_hash: chained.prev_hash,
            hash: chained.hash,
        });
    }
    for chunk in models.chunks(ROWS_PER_INSERT) {
        // The messages first: they read the rows the INSERT then takes.
        crate::events::outbox::enqueue(db, &endpoints, chunk).await?;
        audit_event::Entity::insert_many(chunk.iter().cloned().map(audit_event::ActiveModel::from))
            .exec_without_returning(db)
            .await?;
    }
    audit_head::Entity::update_many()
        .col_expr(audit_head::Column::Hash, Expr::value(prev_hash))
        .filter(audit_head::Column::ApplicationId.eq(application_id))
        .exec(db)
        .await?;
    Ok(models)
}
