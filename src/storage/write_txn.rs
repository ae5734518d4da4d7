//! Write transactions, and SQLite's one writer, group-committed.
//!
//! SQLite takes one writer at a time, so write transactions on a SQLite
//! file take turns in the process (rather than fail `database is locked`).
//! Each turn's commit would flush the write-ahead log to disk on its own.
//! Instead, a turn that commits while others wait leaves its transaction
//! open. The next turn runs in a savepoint of it, and so on, until a turn
//! that finds no one waiting, or the [`MAX_MEMBERS`]th, commits them all
//! with one flush. PostgreSQL's commits share its WAL flushes in the same
//! way.
//!
//! No member's commit returns before that flush: nothing is acknowledged
//! that is not on disk. If the flush fails, every member is told so. A
//! member rolled back (or failing to begin) ends its group at once: those
//! before it commit, and no one runs after a savepoint that may be broken.
//!
//! The group's audit rows are chained once, by the flush: members commit
//! theirs pending and name their application ([`WriteTxn::link_before_flush`]),
//! and the flush's transaction links each named application's pending rows
//! just before it commits ([`crate::audit::link::before_flush`]), so one
//! head update chains a whole group's rows of one application.
use std::{
    collections::BTreeSet,
    ops::Deref,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};

use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr, TransactionTrait};
use tokio::sync::{watch, Mutex, OwnedMutexGuard};
use uuid::Uuid;

/// The most turns one flush commits. Each member's answer waits for the
/// flush, so this bounds what grouping adds to the first one's latency.
/// At 16, nearly every flush under 64 connections was full (1,944 of
/// 1,954 in code exchanges). At 64 they held 54 on average; membership
/// grants were 1.04 to 1.40× in three side-by-side pairs with p99 no
/// higher, and code exchanges moved within the noise (BENCHMARKS.md).
const MAX_MEMBERS: usize = 64;

/// A write transaction; on SQLite it is also the file's writing turn.
/// Dropped without a commit (an error returned half-way), it is rolled back
/// *before* the turn is given up: sea-orm only queues the rollback of a
/// dropped transaction, and a connection back in the pool with its
/// transaction still open would hold SQLite's file lock (or PostgreSQL's
/// row locks) while the next writer starts, which then fails as busy.
pub struct WriteTxn {
    txn: Option<DatabaseTransaction>,
    turn: Option<Turn>,
    /// The applications whose pending audit rows the flush links.
    to_link: BTreeSet<Uuid>,
}

impl Deref for WriteTxn {
    type Target = DatabaseTransaction;
    fn deref(&self) -> &DatabaseTransaction {
        self.txn.as_ref().expect("a write transaction is live until committed or dropped")
    }
}

impl WriteTxn {
    /// Begins one on `conn`: at once on PostgreSQL, in the file's next turn
    /// on SQLite (`writer`).
    pub(super) async fn begin(conn: &DatabaseConnection, writer: Option<&Arc<OneWriter>>) -> Result<WriteTxn, DbErr> {
        let Some(writer) = writer else {
            return Ok(WriteTxn { txn: Some(conn.begin().await?), turn: None, to_link: BTreeSet::new() });
        };
        let turn = writer.take_turn().await;
        let begun = match turn.group() {
            Some(group) => group.txn.begin().await, // a savepoint of the open group's transaction
            None => conn.begin().await,
        };
        match begun {
            Ok(txn) => Ok(WriteTxn { txn: Some(txn), turn: Some(turn), to_link: BTreeSet::new() }),
            Err(err) => {
                turn.end().await.ok();
                Err(err)
            }
        }
    }

    /// On SQLite: the flush that commits this transaction first links the
    /// application's pending audit rows into its chain, in the same
    /// transaction. (PostgreSQL's changes link theirs after their commit.)
    pub fn link_before_flush(&mut self, application_id: Uuid) {
        debug_assert!(self.turn.is_some(), "only SQLite's one writer links in its flush");
        self.to_link.insert(application_id);
    }

    /// Commits; on SQLite, returns once the commit is on disk (with the
    /// group's), or fails if the group's does.
    pub async fn commit(mut self) -> Result<(), DbErr> {
        let txn = self.txn.take().expect("a write transaction commits once");
        match self.turn.take() {
            None => txn.commit().await,
            Some(turn) => turn.commit(txn, std::mem::take(&mut self.to_link)).await,
        }
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        let Some(txn) = self.txn.take() else {
            return;
        };
        let turn = self.turn.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(err) = txn.rollback().await {
                        tracing::warn!(error = %err, "rolling back an abandoned write transaction failed");
                    }
                    if let Some(turn) = turn {
                        turn.end().await.ok();
                    }
                });
            }
            // The runtime itself is going away, cancelling a task in the
            // middle of a transaction (a background worker when a test's
            // runtime ends): sqlx hands a dropped connection back through a
            // task, which panics outside a runtime, so the transaction is
            // dropped inside a throwaway one on a thread of its own (this
            // thread may still count as driving the old one), and its
            // connection closes.
            Err(_) => {
                let dropped = std::thread::spawn(move || {
                    if let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() {
                        runtime.block_on(async move {
                            drop(txn);
                            drop(turn);
                        });
                    }
                });
                let _ = dropped.join();
            }
        }
    }
}

/// A SQLite file's writing turns, and the group its last turn left open.
#[derive(Default)]
pub struct OneWriter {
    turn: Arc<Mutex<Option<Group>>>,
    /// Writers queued for a turn: while there are some, a commit leaves
    /// its group open for them.
    waiting: AtomicUsize,
}

/// Transactions committed in their turns, waiting for one flush.
struct Group {
    /// The first member's transaction; later members ran in savepoints of it.
    txn: DatabaseTransaction,
    members: usize,
    /// The members' applications whose pending audit rows the flush links.
    to_link: BTreeSet<Uuid>,
    /// The flush's outcome, for the members waiting for it.
    flushed: watch::Sender<Option<Result<(), String>>>,
}

impl OneWriter {
    async fn take_turn(self: &Arc<Self>) -> Turn {
        let queued = Queued::join(self);
        let guard = self.turn.clone().lock_owned().await;
        queued.served();
        Turn { guard: Some(guard), writer: self.clone() }
    }
}

/// A writer in the queue. Cancelled before its turn, it may have been the
/// one a commit left its group open for; then it ends the group itself.
struct Queued<'a> {
    writer: &'a Arc<OneWriter>,
    served: bool,
}

impl<'a> Queued<'a> {
    fn join(writer: &'a Arc<OneWriter>) -> Self {
        writer.waiting.fetch_add(1, Ordering::SeqCst);
        Queued { writer, served: false }
    }

    fn served(mut self) {
        self.served = true;
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.writer.waiting.fetch_sub(1, Ordering::SeqCst);
        if !self.served {
            let writer = self.writer.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let turn = writer.take_turn().await;
                    if writer.waiting.load(Ordering::SeqCst) == 0 {
                        turn.end().await.ok();
                    } else {
                        turn.hand_over();
                    }
                });
            }
        }
    }
}

/// The writing turn. Given up (dropped) with a group open and no handover,
/// as when its task is cancelled mid-commit, it ends the group first.
struct Turn {
    guard: Option<OwnedMutexGuard<Option<Group>>>,
    writer: Arc<OneWriter>,
}

impl Turn {
    fn group(&self) -> Option<&Group> {
        self.guard.as_ref().and_then(|guard| guard.as_ref())
    }

    /// Commits `txn`, this turn's transaction: alone, or as the first
    /// member of a group it leaves open, or with the group it joined.
    async fn commit(mut self, txn: DatabaseTransaction, to_link: BTreeSet<Uuid>) -> Result<(), DbErr> {
        let guard = self.guard.as_mut().expect("a turn is held until it ends");
        let Some(group) = guard.as_mut() else {
            if self.writer.waiting.load(Ordering::SeqCst) == 0 {
                record_flush(1);
                crate::audit::link::before_flush(&txn, &to_link).await;
                return txn.commit().await;
            }
            let (flushed, outcome) = watch::channel(None);
            **guard = Some(Group { txn, members: 1, to_link, flushed });
            self.hand_over();
            return wait_for_flush(outcome).await;
        };
        let released = txn.commit().await; // the savepoint's release
        group.members += 1;
        // Released or not, what of its rows is pending in the group is linked.
        group.to_link.extend(to_link);
        let outcome = group.flushed.subscribe();
        let full = group.members >= MAX_MEMBERS;
        if let Err(err) = released {
            // Its changes may be in the group or not: the group ends, and
            // this member failed.
            self.end().await.ok();
            return Err(err);
        }
        if full || self.writer.waiting.load(Ordering::SeqCst) == 0 {
            return self.end().await;
        }
        self.hand_over();
        wait_for_flush(outcome).await
    }

    /// Leaves the group open for the next turn.
    fn hand_over(mut self) {
        self.guard.take();
    }

    /// Commits the open group, if any, with one flush, tells its members,
    /// and gives up the turn.
    async fn end(mut self) -> Result<(), DbErr> {
        let mut guard = self.guard.take().expect("a turn is held until it ends");
        end_group(&mut guard).await
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else { return };
        if guard.is_none() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { end_group(&mut guard).await.ok() });
        }
    }
}

async fn end_group(guard: &mut OwnedMutexGuard<Option<Group>>) -> Result<(), DbErr> {
    let Some(group) = guard.take() else { return Ok(()) };
    crate::audit::link::before_flush(&group.txn, &group.to_link).await;
    let committed = group.txn.commit().await;
    record_flush(group.members);
    group.flushed.send_replace(Some(committed.as_ref().map(|_| ()).map_err(ToString::to_string)));
    committed
}

fn record_flush(members: usize) {
    metrics::histogram!("gatehouse_sqlite_group_commit_members").record(members as f64);
}

async fn wait_for_flush(mut outcome: watch::Receiver<Option<Result<(), String>>>) -> Result<(), DbErr> {
    match outcome.wait_for(Option::is_some).await {
        Ok(flushed) => flushed.clone().expect("waited for an outcome").map_err(DbErr::Custom),
        Err(_) => Err(DbErr::Custom("the group commit ended without a flush".into())),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the test's own table
mod tests {
    use std::time::Duration;

    use sea_orm::{ConnectOptions, ConnectionTrait, Database, Statement};

    use super::*;

    /// A SQLite file in WAL mode, with a table of numbers, and its writer.
    async fn file() -> (tempfile::TempDir, DatabaseConnection, Arc<OneWriter>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}?mode=rwc", dir.path().join("t.db").display());
        let mut options = ConnectOptions::new(url);
        options.max_connections(4).sqlx_logging(false);
        let conn = Database::connect(options).await.unwrap();
        conn.execute_unprepared("PRAGMA journal_mode=WAL").await.unwrap();
        conn.execute_unprepared("CREATE TABLE numbers (n INTEGER PRIMARY KEY)").await.unwrap();
        (dir, conn, Arc::default())
    }

    async fn insert(txn: &WriteTxn, n: i64) {
        txn.execute_unprepared(&format!("INSERT INTO numbers VALUES ({n})")).await.unwrap();
    }

    /// The numbers committed, as a reader on another connection sees them.
    async fn committed(conn: &DatabaseConnection) -> Vec<i64> {
        let rows = conn
            .query_all(Statement::from_string(conn.get_database_backend(), "SELECT n FROM numbers ORDER BY n"))
            .await
            .unwrap();
        rows.iter().map(|row| row.try_get::<i64>("", "n").unwrap()).collect()
    }

    async fn until_waiting(writer: &OneWriter, count: usize) {
        while writer.waiting.load(Ordering::SeqCst) != count {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn a_commit_while_another_writer_waits_returns_only_with_the_groups_flush() {
        let (_dir, conn, writer) = file().await;
        let first = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&first, 1).await;
        let (in_turn, mut second_in_turn) = tokio::sync::mpsc::channel(1);
        let (go, mut may_commit) = tokio::sync::mpsc::channel::<()>(1);
        let second = tokio::spawn({
            let (conn, writer) = (conn.clone(), writer.clone());
            async move {
                let txn = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
                insert(&txn, 2).await;
                in_turn.send(()).await.unwrap();
                may_commit.recv().await;
                txn.commit().await
            }
        });
        until_waiting(&writer, 1).await;

        let first_commit = tokio::spawn(first.commit());
        second_in_turn.recv().await.unwrap();
        // The second writer runs in the first one's transaction, still
        // open: the first commit has not returned, and no reader sees it.
        assert!(!first_commit.is_finished());
        assert_eq!(committed(&conn).await, Vec::<i64>::new());
        go.send(()).await.unwrap();

        assert!(second.await.unwrap().is_ok());
        assert!(first_commit.await.unwrap().is_ok());
        assert_eq!(committed(&conn).await, vec![1, 2]);
    }

    #[tokio::test]
    async fn a_group_whose_flush_fails_fails_every_member_and_the_next_writer_starts_clean() {
        let (_dir, conn, writer) = file().await;
        // A foreign key checked at the outermost commit only: a savepoint's
        // release passes it, the group's commit fails on it.
        conn.execute_unprepared("CREATE TABLE refs (n INTEGER REFERENCES numbers (n) DEFERRABLE INITIALLY DEFERRED)")
            .await
            .unwrap();
        let first = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&first, 1).await;
        let second = tokio::spawn({
            let (conn, writer) = (conn.clone(), writer.clone());
            async move {
                let txn = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
                txn.execute_unprepared("INSERT INTO refs VALUES (99)").await.unwrap();
                txn.commit().await
            }
        });
        until_waiting(&writer, 1).await;

        let first_committed = first.commit().await;

        assert!(second.await.unwrap().is_err());
        assert!(first_committed.is_err(), "the first member was in the failed flush");
        assert_eq!(committed(&conn).await, Vec::<i64>::new());
        let third = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&third, 3).await;
        assert!(third.commit().await.is_ok());
        assert_eq!(committed(&conn).await, vec![3]);
    }

    #[tokio::test]
    async fn a_member_rolled_back_ends_its_group_and_those_before_it_commit() {
        let (_dir, conn, writer) = file().await;
        let first = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&first, 1).await;
        let second = tokio::spawn({
            let (conn, writer) = (conn.clone(), writer.clone());
            async move {
                let txn = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
                insert(&txn, 2).await;
                drop(txn); // an error half-way
            }
        });
        until_waiting(&writer, 1).await;

        assert!(first.commit().await.is_ok());
        second.await.unwrap();
        assert_eq!(committed(&conn).await, vec![1]);
        // The turn was given back: the next writer commits at once.
        let third = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&third, 3).await;
        assert!(third.commit().await.is_ok());
        assert_eq!(committed(&conn).await, vec![1, 3]);
    }

    #[tokio::test]
    async fn a_writer_cancelled_in_the_queue_leaves_no_group_waiting() {
        let (_dir, conn, writer) = file().await;
        let first = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
        insert(&first, 1).await;
        let queued = tokio::spawn({
            let (conn, writer) = (conn.clone(), writer.clone());
            async move { WriteTxn::begin(&conn, Some(&writer)).await.map(|_| ()) }
        });
        until_waiting(&writer, 1).await;
        queued.abort();

        let committed_in_time = tokio::time::timeout(Duration::from_secs(5), first.commit()).await;

        assert!(committed_in_time.expect("the commit must not wait for a writer that left").is_ok());
        assert_eq!(committed(&conn).await, vec![1]);
    }

    #[tokio::test]
    async fn many_writers_at_once_all_commit_and_each_commit_is_visible_when_it_returns() {
        let (_dir, conn, writer) = file().await;
        let writers = (0..100).map(|n| {
            let (conn, writer) = (conn.clone(), writer.clone());
            tokio::spawn(async move {
                let txn = WriteTxn::begin(&conn, Some(&writer)).await.unwrap();
                insert(&txn, n).await;
                txn.commit().await.unwrap();
                committed(&conn).await.contains(&n)
            })
        });
        let visible = futures_util::future::join_all(writers).await;

        assert!(visible.into_iter().all(|seen| seen.unwrap()));
        assert_eq!(committed(&conn).await, (0..100).collect::<Vec<_>>());
    }
}
