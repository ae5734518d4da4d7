//! The tenant-scoped handles. [`TenantScope`] (reads) and [`TenantTxn`]
//! (writes) carry an application's id, its shard and the audit actor
//! together, and add the `application_id` filter to every query themselves,
//! updates and deletes by primary key included. They are built from an
//! authenticated principal (a secret key, an end user's token, the public
//! caller of an application's sign-up) or by a background worker from a row
//! it claimed, never from a loose id.
//!
//! A [`TenantTxn`] that changed rows refuses to commit unless it recorded an
//! audit row ([`TenantTxn::audit`]) or was declared [`Unaudited`] by name:
//! the audit chain holds every change by construction, not by convention.
use sea_orm::{
    sea_query::IntoCondition, ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    DbErr, DeleteMany, EntityTrait, IntoActiveModel, JoinType, QueryFilter, QuerySelect, Select, SelectTwo, UpdateMany,
};
use serde_json::Value;
use uuid::Uuid;

use super::{Db, TenantEntity, WriteTxn};
use crate::{
    application::Tenant,
    audit::{self, personal::Subject, Actor, Entry},
    crypto::master_key::MasterKey,
    events::catalog::EventType,
};

/// The writes through a tenant handle that record no audit row, each with
/// its reason. A write not listed here must be audited. (Webhook delivery
/// bookkeeping, the other unaudited writes, is the delivery worker's,
/// outside the handles: see `events/delivery.rs`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unaudited {
    /// `last_used_at` of a secret, personal or service-account key: bookkeeping written at
    /// most once a minute, off the request path.
    KeyLastUsed,
    /// A message the messaging outbox keeps instead of sending it: what
    /// sent it (a test send, an invitation) has its own audit row, and the
    /// message's text is no change of the application.
    MessagingOutbox,
    /// A sign-in with an identity provider in progress (its `state`, its
    /// one-time code, an identity's last sign-in): its outcome is audited,
    /// `sign_in.succeeded` at the exchange or `sign_in.failed`.
    ProviderSignInStep,
    /// A passkey ceremony's server-side state: its outcome is audited
    /// (`passkey.registered`, `sign_in.succeeded`, a failure).
    PasskeyCeremony,
    /// An email queued or prepared (`areas::mail_queue`): what it reports
    /// has its own audit row (`user.email_verification_sent`,
    /// `user.password_reset_requested`, `team_invitation.created`), written
    /// when its code, token or invitation is made.
    MailQueue,
    /// A step of the OpenID Provider's authorization-code flow (a code
    /// issued or used, the hosted pages' sign-in cookie): the sign-in is
    /// audited (`sign_in.succeeded`), and so is the session the code's
    /// exchange opens for the client (`session.created`).
    AuthorizationStep,
    /// A user import's progress through lines that changed nothing (each
    /// skipped or refused): the import itself is audited
    /// (`user_import.queued`, `.completed`), and so is every user it makes.
    ImportProgress,
}

/// Read access to one application's rows, through a handle or a transaction.
pub trait TenantConn {
    type Conn: ConnectionTrait;

    fn application_id(&self) -> Uuid;

    fn conn(&self) -> &Self::Conn;

    /// The key that seals values in the application's database.
    fn master_key(&self) -> &MasterKey;

    /// `SELECT … WHERE application_id = ?`: every read of a tenant table starts here.
    fn find<E: TenantEntity>(&self) -> Select<E> {
        #[allow(clippy::disallowed_methods)] // the one place that adds the filter
        E::find().filter(E::application_id_column().eq(self.application_id()))
    }

    /// One row by primary key, within the application.
    fn find_by_id<E: TenantEntity>(&self, id: Uuid) -> Select<E>
    where
        E::PrimaryKey: sea_orm::PrimaryKeyTrait<ValueType = Uuid>,
    {
        #[allow(clippy::disallowed_methods)] // the one place that adds the filter
        E::find_by_id(id).filter(E::application_id_column().eq(self.application_id()))
    }
}

/// `query`'s rows of one application, each with the row of `P` it
/// belongs to (`child_key` = `parent_key`), in one query (an inner join):
/// the parents are found by their key. (A second query, `id IN (…)` beside
/// the application's filter, makes SQLite's planner, which has no
/// statistics, walk the application's rows by its index from four ids on.)
pub fn with_parent<C: EntityTrait, P: EntityTrait>(
    query: Select<C>,
    child_key: C::Column,
    parent_key: P::Column,
) -> SelectTwo<C, P> {
    let relation = C::belongs_to(P::default()).from(child_key).to(parent_key).into();
    query.select_also(P::default()).join(JoinType::InnerJoin, relation)
}

/// Reads of one application, on its shard.
#[derive(Clone)]
pub struct TenantScope {
    tenant: Tenant,
    db: Db,
    actor: Actor,
}

impl TenantScope {
    /// For principals only (see the module comment).
    pub(crate) fn new(tenant: Tenant, db: Db, actor: Actor) -> TenantScope {
        TenantScope { tenant, db, actor }
    }

    pub fn tenant(&self) -> &Tenant {
        &self.tenant
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The same application, acting as someone else (the user a public
    /// sign-in just proved, for instance).
    pub fn acting_as(&self, actor: Actor) -> TenantScope {
        TenantScope { actor, ..self.clone() }
    }

    /// After an erasure: moves what SQLite's write-ahead log holds into
    /// the database file (whose deleted rows are overwritten) and empties
    /// the log, so the erased bytes are in neither. PostgreSQL: nothing
    /// (see docs/guides/data-rights.md). A failure is reported, not
    /// returned: the erasure has committed, and the next checkpoint does it.
    pub async fn checkpoint(&self) {
        if let Err(err) = self.db.checkpoint().await {
            tracing::warn!(database = self.db.label, error = %err, "checkpointing after an erasure failed");
        }
    }

    /// A write transaction on the application's shard.
    pub async fn begin(&self) -> Result<TenantTxn, DbErr> {
        Ok(TenantTxn {
            txn: self.db.begin_write().await?,
            db: self.db.clone(),
            application_id: self.tenant.id,
            actor: self.actor.clone(),
            audit_rows: Vec::new(),
            changed: false,
            unaudited: None,
        })
    }
}

impl TenantConn for TenantScope {
    type Conn = DatabaseConnection;

    fn application_id(&self) -> Uuid {
        self.tenant.id
    }

    fn conn(&self) -> &DatabaseConnection {
        &self.db.conn
    }

    fn master_key(&self) -> &MasterKey {
        self.db.master_key()
    }
}

/// Pending audit rows per `INSERT` (8 columns each, well under SQLite's
/// 32,766 parameters).
const PENDING_PER_INSERT: usize = 256;

/// A write transaction of one application. See the module comment.
pub struct TenantTxn {
    txn: WriteTxn,
    /// The shard's database, where the audit rows are linked after the
    /// commit (on PostgreSQL).
    db: Db,
    application_id: Uuid,
    actor: Actor,
    /// The audit rows of the change, committed pending and linked into the
    /// chain right after ([`audit::link`]).
    audit_rows: Vec<entity::audit_pending::Model>,
    changed: bool,
    unaudited: Option<Unaudited>,
}

impl TenantConn for TenantTxn {
    type Conn = DatabaseTransaction;

    fn application_id(&self) -> Uuid {
        self.application_id
    }

    fn conn(&self) -> &DatabaseTransaction {
        &self.txn
    }

    fn master_key(&self) -> &MasterKey {
        self.db.master_key()
    }
}

impl TenantTxn {
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// Inserts a row of this application (its `application_id` is set here).
    pub async fn insert<A>(&mut self, row: A) -> Result<(), DbErr>
    where
        A: ActiveModelTrait + Send,
        A::Entity: TenantEntity,
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
    {
        self.insert_many(std::iter::once(row)).await
    }

    /// Inserts rows of this application in one statement.
    pub async fn insert_many<A>(&mut self, rows: impl IntoIterator<Item = A>) -> Result<(), DbErr>
    where
        A: ActiveModelTrait + Send,
        A::Entity: TenantEntity,
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
    {
        let column = <A::Entity as TenantEntity>::application_id_column();
        let rows: Vec<A> = rows
            .into_iter()
            .map(|mut row| {
                row.set(column, self.application_id.into());
                row
            })
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        #[allow(clippy::disallowed_methods)] // the handle sets application_id above
        A::Entity::insert_many(rows).exec_without_returning(&*self.txn).await?;
        self.changed = true;
        Ok(())
    }

    /// Updates one row by its primary key, within the application; a row of
    /// another application is not found.
    pub async fn update<A>(&mut self, row: A) -> Result<<A::Entity as EntityTrait>::Model, DbErr>
    where
        A: ActiveModelTrait + Send,
        A::Entity: TenantEntity,
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
    {
        let column = <A::Entity as TenantEntity>::application_id_column();
        #[allow(clippy::disallowed_methods)] // the filter is added here
        let updated = A::Entity::update(row).filter(column.eq(self.application_id)).exec(&*self.txn).await?;
        self.changed = true;
        Ok(updated)
    }

    /// `UPDATE … WHERE application_id = ? AND <what the caller adds>`;
    /// answers how many rows changed.
    pub async fn update_many<E: TenantEntity>(
        &mut self,
        build: impl FnOnce(UpdateMany<E>) -> UpdateMany<E>,
    ) -> Result<u64, DbErr> {
        let query = build(self.update_query());
        let rows = query.exec(&*self.txn).await?.rows_affected;
        self.changed |= rows > 0;
        Ok(rows)
    }

    /// [`Self::update_many`], answering the changed rows.
    pub async fn update_many_returning<E: TenantEntity>(
        &mut self,
        build: impl FnOnce(UpdateMany<E>) -> UpdateMany<E>,
    ) -> Result<Vec<E::Model>, DbErr> {
        let query = build(self.update_query());
        let rows = query.exec_with_returning(&*self.txn).await?;
        self.changed |= !rows.is_empty();
        Ok(rows)
    }

    /// `DELETE … WHERE application_id = ? AND <condition>`; answers how many rows went.
    pub async fn delete<E: TenantEntity>(&mut self, condition: impl IntoCondition) -> Result<u64, DbErr> {
        let query: DeleteMany<E> = self.delete_query().filter(condition);
        let rows = query.exec(&*self.txn).await?.rows_affected;
        self.changed |= rows > 0;
        Ok(rows)
    }

    fn update_query<E: TenantEntity>(&self) -> UpdateMany<E> {
        #[allow(clippy::disallowed_methods)] // the filter is added here
        E::update_many().filter(E::application_id_column().eq(self.application_id))
    }

    fn delete_query<E: TenantEntity>(&self) -> DeleteMany<E> {
        #[allow(clippy::disallowed_methods)] // the filter is added here
        E::delete_many().filter(E::application_id_column().eq(self.application_id))
    }

    /// Records an audit row by the transaction's actor: it commits with
    /// the change and is chained (and its webhook messages queued) right
    /// after ([`Self::commit`]).
    pub async fn audit(&mut self, event_type: EventType, aggregate_id: Option<Uuid>, data: Value) -> Result<(), DbErr> {
        let actor = self.actor.clone();
        self.audit_as(&actor, event_type, aggregate_id, data).await
    }

    /// [`Self::audit`] by another actor (a hook's call is `public` in a
    /// sign-up by the same caller, for instance).
    pub async fn audit_as(
        &mut self,
        actor: &Actor,
        event_type: EventType,
        aggregate_id: Option<Uuid>,
        data: Value,
    ) -> Result<(), DbErr> {
        let entry = Entry { id: None, actor, event_type: event_type.as_str(), aggregate_id, data };
        self.audit_many(vec![entry]).await
    }

    /// [`Self::audit`] of a row that also says something about a person:
    /// `personal` is sealed under the subject's key into `data.personal`
    /// ([`audit::personal`]), so that erasing them leaves the row verifiable
    /// and mute about them.
    pub async fn audit_personal(
        &mut self,
        event_type: EventType,
        aggregate_id: Option<Uuid>,
        mut data: Value,
        subject: Subject<'_>,
        personal: serde_json::Map<String, Value>,
    ) -> Result<(), DbErr> {
        let sealed =
            audit::personal::seal(&*self.txn, self.db.master_key(), self.application_id, subject, personal).await?;
        if let Value::Object(map) = &mut data {
            map.insert(audit::personal::FIELD.to_string(), sealed);
        }
        self.audit(event_type, aggregate_id, data).await
    }

    /// Several audit rows, in order (chained in this order).
    pub async fn audit_many(&mut self, entries: Vec<Entry<'_>>) -> Result<(), DbErr> {
        for entry in entries {
            self.audit_rows.push(entry.unchained(self.application_id)?);
        }
        Ok(())
    }

    /// Destroys the keys that sealed these subjects' personal data in
    /// audit rows ([`audit::personal::erase`]); answers how many existed.
    pub async fn erase_personal_data(&mut self, subjects: &[Subject<'_>]) -> Result<u64, DbErr> {
        let destroyed = audit::personal::erase(&*self.txn, self.db.master_key(), self.application_id, subjects).await?;
        self.changed |= destroyed > 0;
        Ok(destroyed)
    }

    /// Declares the transaction's writes as bookkeeping that needs no audit row.
    pub fn unaudited(&mut self, why: Unaudited) {
        self.unaudited = Some(why);
    }

    /// Locks the application's audit-chain head until the transaction
    /// ends, so tenant-wide changes of one application take turns (on every
    /// backend and node) before they read what they change.
    pub async fn lock_tenant(&mut self) -> Result<(), DbErr> {
        use sea_orm::QuerySelect;
        self.find::<entity::audit_head::Entity>().lock_exclusive().one(&*self.txn).await?;
        Ok(())
    }

    /// Commits; a transaction that changed rows without an audit row (and
    /// was not declared [`Unaudited`]) is rolled back and refused.
    ///
    /// A change checks the application's fence last ([`audit::hold_unfenced`]:
    /// a region move's copy either waits for it or it is refused), writes its
    /// audit rows as pending, commits, then links them into the chain. On
    /// SQLite the commit's flush links them, in its transaction.
    pub async fn commit(mut self) -> Result<(), DbErr> {
        let audited = !self.audit_rows.is_empty();
        if self.changed && !audited && self.unaudited.is_none() {
            return Err(DbErr::Custom(format!(
                "a change of application {} has no audit row and was rolled back",
                self.application_id
            )));
        }
        if self.changed || audited {
            audit::hold_unfenced(&*self.txn, self.application_id).await?;
        }
        for chunk in self.audit_rows.chunks(PENDING_PER_INSERT) {
            let rows = chunk.iter().cloned().map(entity::audit_pending::ActiveModel::from);
            #[allow(clippy::disallowed_methods)] // the rows carry this application's id
            entity::audit_pending::Entity::insert_many(rows).exec_without_returning(&*self.txn).await?;
        }
        if !audited {
            return self.txn.commit().await;
        }
        if self.db.has_one_writer() {
            self.txn.link_before_flush(self.application_id);
            return self.txn.commit().await;
        }
        self.txn.commit().await?;
        audit::link::after_commit(&self.db, self.application_id).await;
        Ok(())
    }
}
