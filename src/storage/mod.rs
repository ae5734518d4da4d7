//! Database connections: the catalog and the regional shards this node holds.
//! SQLite and PostgreSQL go through the same code; the one difference is that
//! SQLite allows a single writer, so write transactions on a SQLite file take
//! an in-process lock first instead of failing with `database is locked`.
use std::{collections::HashMap, ops::Deref, sync::Arc, time::Duration};

use std::future::Future;

use migration::MigratorTrait;
use sea_orm::{
    sqlx, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    RuntimeErr, SqlxPostgresConnector, TransactionTrait,
};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::{config::Settings, region::Region};

pub mod catalog;
pub mod delivery_queue;
mod limits;
pub mod move_journal;
mod page;
pub mod pools;
mod revocation;
mod tenant;
mod tenant_rows;
pub mod tenant_tables;

pub use limits::{Limit, LimitReached, ReserveError};
pub use page::Page;
pub use revocation::Revocable;
pub use tenant::{TenantConn, TenantScope, TenantTxn, Unaudited};
pub use tenant_tables::{tenant_tables, TenantEntity};

#[derive(Clone)]
pub struct Db {
    pub conn: DatabaseConnection,
    pub label: &'static str,
    write_lock: Option<Arc<Mutex<()>>>,
}

/// A write transaction; on SQLite it also holds the database's write lock.
/// Dropped without a commit (an error returned half-way), it is rolled back
/// *before* the lock is released: sea-orm only queues the rollback of a
/// dropped transaction, and a connection back in the pool with its
/// transaction still open would hold SQLite's file lock (or PostgreSQL's
/// row locks) while the next writer starts, which then fails as busy.
pub struct WriteTxn {
    txn: Option<DatabaseTransaction>,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Deref for WriteTxn {
    type Target = DatabaseTransaction;
    fn deref(&self) -> &DatabaseTransaction {
        self.txn.as_ref().expect("a write transaction is live until committed or dropped")
    }
}

impl WriteTxn {
    pub async fn commit(mut self) -> Result<(), DbErr> {
        let txn = self.txn.take().expect("a write transaction commits once");
        txn.commit().await
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        let Some(txn) = self.txn.take() else {
            return;
        };
        let guard = self.guard.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(err) = txn.rollback().await {
                        tracing::warn!(error = %err, "rolling back an abandoned write transaction failed");
                    }
                    drop(guard);
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
                            drop(guard);
                        });
                    }
                });
                let _ = dropped.join();
            }
        }
    }
}

impl Db {
    /// Connects; a failure names the database (`catalog`, `us`…) and where
    /// it was looked for, never the URL's password.
    pub async fn connect(url: &str, label: &'static str, max_connections: u32) -> Result<Db, DbErr> {
        let sqlite = url.starts_with("sqlite:");
        let connected = if sqlite {
            connect_sqlite(url, max_connections).await
        } else {
            connect_postgres(url, max_connections).await.map_err(|err| DbErr::Conn(RuntimeErr::SqlxError(err)))
        };
        let conn =
            connected.map_err(|err| DbErr::Custom(format!("the {label} database ({}): {err}", describe_url(url))))?;
        if !sqlite {
            warn_without_autovacuum(&conn, label).await;
        }
        if sqlite {
            // WAL lets readers run beside the writer; it is a property of the file.
            #[allow(clippy::disallowed_methods)] // a connection setting, no rows
            conn.execute_unprepared("PRAGMA journal_mode=WAL").await?;
        }
        Ok(Db { conn, label, write_lock: sqlite.then(|| Arc::new(Mutex::new(()))) })
    }

    pub fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    pub async fn begin_write(&self) -> Result<WriteTxn, DbErr> {
        let guard = match &self.write_lock {
            Some(lock) => Some(lock.clone().lock_owned().await),
            None => None,
        };
        Ok(WriteTxn { txn: Some(self.conn.begin().await?), guard })
    }
}

/// How long a pooled PostgreSQL connection may sit idle before it is
/// pinged on its way out of the pool (HikariCP's rule). sqlx pings every
/// connection given back to it, so one that waited less than this was alive
/// a moment ago; pinging it again, sqlx's default, adds a round trip to
/// every query (BENCHMARKS.md: machine tokens, one query each). One that
/// waited longer (the database restarted meanwhile, a proxy dropped it) is
/// pinged, and a dead one is replaced before any query is sent on it.
const PING_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);
/// How long a query waits for a connection (pooled or new) before it is
/// answered 503.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

async fn connect_postgres(url: &str, max_connections: u32) -> Result<DatabaseConnection, sqlx::Error> {
    use sqlx::ConnectOptions as _;
    let options = url.parse::<sqlx::postgres::PgConnectOptions>()?.disable_statement_logging();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_WHEN_IDLE_FOR {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await?;
    Ok(SqlxPostgresConnector::from_sqlx_postgres_pool(pool))
}

/// SQLite's connections are the file's: none dies while idle, so none is
/// pinged before use (a ping is a round trip to the connection's thread).
async fn connect_sqlite(url: &str, max_connections: u32) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(prepare_sqlite(url)?);
    options
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .sqlx_logging(false);
    Database::connect(options).await
}

/// PostgreSQL without autovacuum never refreshes its statistics: as an
/// application's rows grow, the planner keeps the estimates of an empty
/// table and lists and limit checks read every row of the application
/// (measured in BENCHMARKS.md, "Sustained load"). Said once at start.
#[allow(clippy::disallowed_methods)] // reads a server setting, no rows
async fn warn_without_autovacuum(conn: &DatabaseConnection, label: &str) {
    let setting = conn.query_one(sea_orm::Statement::from_string(DbBackend::Postgres, "SHOW autovacuum")).await;
    if let Ok(Some(row)) = setting {
        if row.try_get::<String>("", "autovacuum").is_ok_and(|on| on == "off") {
            tracing::warn!(
                database = label,
                "autovacuum is off: statistics go stale and plans degrade as tables grow; turn it on (PostgreSQL's default)"
            );
        }
    }
}

/// A database URL for an operator's eyes: scheme, host, port and path, no
/// user info or parameters.
fn describe_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => format!(
            "{}://{}{}{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or_default(),
            parsed.port().map(|p| format!(":{p}")).unwrap_or_default(),
            parsed.path()
        ),
        _ => url.split('?').next().unwrap_or_default().to_string(),
    }
}

/// Creates the directory of a SQLite file and asks for the file to be created.
fn prepare_sqlite(url: &str) -> Result<String, DbErr> {
    let path = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    let file = path.split('?').next().unwrap_or_default();
    if let Some(parent) = std::path::Path::new(file).parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .map_err(|e| DbErr::Custom(format!("cannot create {}: {e}", parent.display())))?;
        }
    }
    Ok(if url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    })
}

/// The advisory lock nodes take for work only one of them may do at a
/// time (advisory locks are per database: one key serves every database).
const DEPLOYMENT_LOCK: i64 = 0x6761_7465_686f_7573; // "gatehous"

impl Db {
    /// Runs `work` while this node holds the database's deployment-wide
    /// lock: on PostgreSQL a transaction-scoped advisory lock, so nodes that
    /// start together take turns (the lock's transaction holds one pooled
    /// connection while `work` uses another: `storage.max_connections` is
    /// at least 2). A SQLite file has one node: nothing to hold.
    pub async fn exclusively<T, E: From<DbErr>>(&self, work: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        if self.backend() != DbBackend::Postgres {
            return work.await;
        }
        let lock = self.conn.begin().await?;
        #[allow(clippy::disallowed_methods)] // an advisory lock, no rows
        lock.execute_unprepared(&format!("SELECT pg_advisory_xact_lock({DEPLOYMENT_LOCK})")).await?;
        let done = work.await?;
        lock.commit().await?;
        Ok(done)
    }
}

/// Applies one database's pending migrations, one node at a time: the next
/// finds nothing pending. Racing, two nodes' `CREATE TABLE IF NOT EXISTS`
/// fail on PostgreSQL's own catalog (`pg_type_typname_nsp_index`).
///
/// On PostgreSQL they run in one transaction with `client_min_messages =
/// warning`: sea-orm creates its bookkeeping table `IF NOT EXISTS` before
/// each of its steps (seven times a database), and each time the table
/// exists PostgreSQL sends a NOTICE ("relation … already exists,
/// skipping") that sqlx logs at INFO: without this, every start logged
/// them by the dozen. Warnings and errors still arrive.
async fn migrate_one<M: MigratorTrait>(db: &Db) -> Result<(), DbErr> {
    let pending = db
        .exclusively(async {
            if db.backend() != DbBackend::Postgres {
                let pending = M::get_pending_migrations(&db.conn).await?.len();
                M::up(&db.conn, None).await?;
                return Ok::<_, DbErr>(pending);
            }
            let txn = db.conn.begin().await?;
            #[allow(clippy::disallowed_methods)] // a session setting, no rows
            txn.execute_unprepared("SET LOCAL client_min_messages = warning").await?;
            let pending = M::get_pending_migrations(&txn).await?.len();
            if pending > 0 {
                M::up(&txn, None).await?;
            }
            txn.commit().await?;
            Ok(pending)
        })
        .await?;
    if pending > 0 {
        tracing::info!(database = db.label, "applied {pending} migrations");
    }
    Ok(())
}

/// The catalog and the regional databases of the regions this node holds.
pub struct Storage {
    pub catalog: Db,
    /// The regions this node holds, in the deployment's order.
    held: Vec<Region>,
    shards: HashMap<Region, Db>,
    /// Every reachable region's database URL: the held ones, and the
    /// others with a configured `database_url` (a default would name a
    /// file of this node, not the region's database), which a region move
    /// may write into.
    urls: HashMap<Region, String>,
    /// The databases of regions not held, opened on first use by a move.
    opened_elsewhere: Mutex<HashMap<Region, Db>>,
    /// Each database URL's pool size (`pools`).
    pool_sizes: std::collections::BTreeMap<String, u32>,
}

impl Storage {
    pub async fn open(settings: &Settings) -> Result<Storage, DbErr> {
        // Start-up holds one connection for its lock while another migrates
        // (`Db::exclusively`): with one, it would wait for itself.
        if let Some(max) = settings.storage.max_connections.filter(|max| *max < pools::MIN_POOL) {
            return Err(DbErr::Custom(format!("storage.max_connections is {max}: it must be at least 2")));
        }
        let held = settings.node.regions.clone();
        let urls: HashMap<Region, String> = settings
            .deployment
            .regions
            .iter()
            .copied()
            .filter_map(|r| match held.contains(&r) {
                true => Some((r, settings.region_url(r))),
                false => settings.configured_region_url(r).map(|url| (r, url.to_string())),
            })
            .collect();
        // One pool per database handle this node may open (the catalog, each
        // held region, each region a move may write into), even where two
        // share a URL: each is a pool of its own.
        let mut every_pool: Vec<String> = urls.values().cloned().collect();
        every_pool.push(settings.catalog_url());
        let (configured, nodes) = (settings.storage.max_connections, settings.deployment.nodes);
        let pool_sizes = pools::sizes(&every_pool, configured, nodes, settings.storage.server_connections)
            .await
            .map_err(DbErr::Custom)?;
        let size_of = |url: &str| pool_sizes.get(url).copied().unwrap_or(pools::DEFAULT_POOL);
        let catalog_url = settings.catalog_url();
        let catalog = Db::connect(&catalog_url, "catalog", size_of(&catalog_url)).await?;
        let mut shards = HashMap::new();
        for region in &held {
            let url = settings.region_url(*region);
            shards.insert(*region, Db::connect(&url, region.as_str(), size_of(&url)).await?);
        }
        Ok(Storage { catalog, held, shards, urls, opened_elsewhere: Mutex::default(), pool_sizes })
    }

    /// Applies what is pending and says so in one line per database
    /// (sea-orm's own per-migration lines are at `debug`).
    pub async fn migrate(&self) -> Result<(), DbErr> {
        migrate_one::<migration::CatalogMigrator>(&self.catalog).await?;
        for shard in self.shards.values() {
            migrate_one::<migration::RegionMigrator>(shard).await?;
        }
        Ok(())
    }

    pub fn shard(&self, region: Region) -> Option<&Db> {
        self.shards.get(&region)
    }

    /// A region's database for a region move: the shard this node holds,
    /// else the configured one, connected (and migrated) on first use.
    /// `None`: this node has no way to reach it.
    pub async fn database(&self, region: Region) -> Result<Option<Db>, DbErr> {
        if let Some(shard) = self.shards.get(&region) {
            return Ok(Some(shard.clone()));
        }
        let Some(url) = self.urls.get(&region) else {
            return Ok(None);
        };
        let mut opened = self.opened_elsewhere.lock().await;
        if let Some(db) = opened.get(&region) {
            return Ok(Some(db.clone()));
        }
        let size = self.pool_sizes.get(url.as_str()).copied().unwrap_or(pools::DEFAULT_POOL);
        let db = Db::connect(url, region.as_str(), size).await?;
        migrate_one::<migration::RegionMigrator>(&db).await?;
        opened.insert(region, db.clone());
        Ok(Some(db))
    }

    /// Whether two regions are configured with one database (a move
    /// between them would copy rows onto themselves, then delete them).
    pub fn share_a_database(&self, a: Region, b: Region) -> bool {
        self.urls.get(&a).is_some_and(|url| self.urls.get(&b) == Some(url))
    }

    /// Whether two regions' rows are in one database (one region, or two
    /// configured with one URL).
    pub fn same_database(&self, a: Region, b: Region) -> bool {
        a == b || self.share_a_database(a, b)
    }

    pub fn holds(&self, region: Region) -> bool {
        self.shards.contains_key(&region)
    }

    /// The regions this node holds with their databases, in the deployment's order.
    pub fn held(&self) -> impl Iterator<Item = (Region, &Db)> {
        self.held.iter().map(|r| (*r, &self.shards[r]))
    }

    /// Every database this node holds, the catalog first.
    pub fn all(&self) -> impl Iterator<Item = &Db> {
        std::iter::once(&self.catalog).chain(self.held().map(|(_, db)| db))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_database_is_named_with_its_host_and_never_its_password() {
        let err = Db::connect("postgres://gatehouse:s3cret@127.0.0.1:1/gatehouse_eu", "eu", 1).await.err().unwrap();
        let text = err.to_string();
        assert!(text.contains("the eu database (postgres://127.0.0.1:1/gatehouse_eu)"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }

    /// PostgreSQL only (no background worker here to use the dead
    /// connections up first): every connection of a pool is dropped by the
    /// server while idle, and the next queries, as many as the pool holds,
    /// all succeed on connections that replaced them.
    #[tokio::test]
    #[cfg_attr(
        not(gatehouse_test_postgres),
        ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
    )]
    #[allow(clippy::disallowed_methods)] // the test's own databases and sessions
    async fn connections_the_server_dropped_while_idle_are_replaced_before_a_query_uses_them() {
        let Ok(admin_url) = std::env::var("GATEHOUSE_TEST_POSTGRES_URL") else {
            return; // SQLite's connections cannot be dropped.
        };
        let admin = Database::connect(&admin_url).await.unwrap();
        let name = format!("gh_test_idle_{}", uuid::Uuid::new_v4().simple());
        admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
        let url = format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0);
        let db = Db::connect(&url, "us", 4).await.unwrap();
        // Four at once: the pool opens all four of its connections.
        let four_at_once =
            || futures_util::future::join_all((0..4).map(|_| db.conn.execute_unprepared("SELECT pg_sleep(0.05)")));
        assert!(four_at_once().await.iter().all(Result::is_ok));
        let terminate = format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'");
        admin.execute_unprepared(&terminate).await.unwrap();
        tokio::time::sleep(PING_WHEN_IDLE_FOR + Duration::from_millis(200)).await;

        let after = four_at_once().await;

        db.conn.close().await.unwrap();
        admin.execute_unprepared(&format!("DROP DATABASE {name} WITH (FORCE)")).await.unwrap();
        assert!(after.iter().all(Result::is_ok), "{after:?}");
    }
}
