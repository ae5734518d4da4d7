//! Database connections: the catalog and the regional shards this node holds.
//! SQLite and PostgreSQL go through the same code; the one difference is that
//! SQLite allows a single writer, so write transactions on a SQLite file take
//! turns in the process instead of failing with `database is locked`, and
//! turns that queue are committed together ([`write_txn`]).
use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, RwLock},
    time::Duration,
};

use std::future::Future;

use migration::MigratorTrait;
use sea_orm::{
    sqlx, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, RuntimeErr,
    SqlxPostgresConnector, TransactionTrait,
};
use tokio::sync::Mutex;

use crate::{
    config::Settings,
    crypto::master_key::MasterKey,
    region::{Region, Shard},
};

pub mod backup;
pub mod catalog;
pub mod delivery_queue;
pub mod keyed_hash_secret;
mod limits;
pub mod move_journal;
mod page;
pub mod per_shard;
pub mod pools;
mod revocation;
pub mod shards;
mod tenant;
mod tenant_rows;
pub mod tenant_tables;
mod write_txn;

pub use limits::{Limit, LimitReached, ReserveError};
pub use page::Page;
pub use revocation::Revocable;
pub use tenant::{with_parent, TenantConn, TenantScope, TenantTxn, Unaudited};
pub use tenant_tables::{tenant_tables, TenantEntity};
use write_txn::OneWriter;
pub use write_txn::WriteTxn;

#[derive(Clone)]
pub struct Db {
    pub conn: DatabaseConnection,
    pub label: &'static str,
    /// SQLite's: its writes take turns, group-committed.
    one_writer: Option<Arc<OneWriter>>,
    /// Seals what is written here under the master key (the personal data
    /// in audit rows, [`crate::audit::personal`]).
    master_key: MasterKey,
}

impl Db {
    /// Connects; a failure names the database (`catalog`, `us`…) and where
    /// it was looked for, never the URL's password.
    pub async fn connect(
        url: &str,
        label: &'static str,
        max_connections: u32,
        master_key: &MasterKey,
    ) -> Result<Db, DbErr> {
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
        Ok(Db { conn, label, one_writer: sqlite.then(Arc::default), master_key: master_key.clone() })
    }

    /// The key that seals values written here.
    pub fn master_key(&self) -> &MasterKey {
        &self.master_key
    }

    /// SQLite: copies the write-ahead log into the file and truncates it
    /// (`wal_checkpoint(TRUNCATE)`); with `secure_delete`, deleted rows are
    /// then in neither. PostgreSQL: nothing to do.
    pub async fn checkpoint(&self) -> Result<(), DbErr> {
        if self.backend() == DbBackend::Sqlite {
            #[allow(clippy::disallowed_methods)] // a checkpoint, no rows
            self.conn.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        }
        Ok(())
    }

    /// Whether the database takes one writer at a time (SQLite).
    pub fn has_one_writer(&self) -> bool {
        self.one_writer.is_some()
    }

    pub fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    pub async fn begin_write(&self) -> Result<WriteTxn, DbErr> {
        WriteTxn::begin(&self.conn, self.one_writer.as_ref()).await
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
        .sqlx_logging(false)
        // A deleted row's bytes are overwritten, not left in free space:
        // an erased user's email leaves the file (with the WAL's checkpoint).
        .map_sqlx_sqlite_opts(|options| options.pragma("secure_delete", "on"));
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

/// The catalog and the databases of the regions this node holds: every
/// shard of each (`region::shard`).
pub struct Storage {
    pub catalog: Db,
    /// The regions this node holds, in the deployment's order.
    held: Vec<Region>,
    /// The held regions' shards, open: each region's first from the start,
    /// the ones added since as [`Storage::refresh_shards`] finds them.
    open: RwLock<BTreeMap<Shard, Db>>,
    /// Every shard this node can reach, with its database URL: each held
    /// region's first, the first of every other region with a configured
    /// `database_url` (a default would name a file of this node, not the
    /// region's database), and every added shard in the catalog.
    urls: RwLock<BTreeMap<Shard, String>>,
    /// When each added shard was added: placement waits until every node
    /// has had time to open it ([`shards::PLACED_AFTER`]).
    added_at: RwLock<BTreeMap<Shard, chrono::DateTime<chrono::Utc>>>,
    /// The databases of shards of regions not held, opened on first use by a move.
    opened_elsewhere: Mutex<HashMap<Shard, Db>>,
    /// Each database URL's pool size (`pools`), and what sizes the next.
    pool_sizes: RwLock<BTreeMap<String, u32>>,
    pool_inputs: (Option<u32>, u32, Option<u32>),
    /// Seals the added shards' database URLs in the catalog.
    master_key: MasterKey,
    /// Counts the shards opened: the per-shard workers start on new ones.
    opened: tokio::sync::watch::Sender<usize>,
}

impl Storage {
    pub async fn open(settings: &Settings) -> Result<Storage, DbErr> {
        // Start-up holds one connection for its lock while another migrates
        // (`Db::exclusively`): with one, it would wait for itself.
        if let Some(max) = settings.storage.max_connections.filter(|max| *max < pools::MIN_POOL) {
            return Err(DbErr::Custom(format!("storage.max_connections is {max}: it must be at least 2")));
        }
        let master_key = MasterKey::load_or_generate(&settings.security, &settings.storage.data_dir)
            .map_err(|err| DbErr::Custom(format!("the master key: {err}")))?;
        let held = settings.node.regions.clone();
        let urls: BTreeMap<Shard, String> = settings
            .deployment
            .regions
            .iter()
            .copied()
            .filter_map(|r| match held.contains(&r) {
                true => Some((Shard::first_of(r), settings.region_url(r))),
                false => settings.configured_region_url(r).map(|url| (Shard::first_of(r), url.to_string())),
            })
            .collect();
        // One pool per database handle this node may open (the catalog, each
        // held region, each region a move may write into), even where two
        // share a URL: each is a pool of its own.
        let mut every_pool: Vec<String> = urls.values().cloned().collect();
        every_pool.push(settings.catalog_url());
        let pool_inputs =
            (settings.storage.max_connections, settings.deployment.nodes, settings.storage.server_connections);
        let pool_sizes =
            pools::sizes(&every_pool, pool_inputs.0, pool_inputs.1, pool_inputs.2).await.map_err(DbErr::Custom)?;
        let size_of = |url: &str| pool_sizes.get(url).copied().unwrap_or(pools::DEFAULT_POOL);
        let catalog_url = settings.catalog_url();
        let catalog = Db::connect(&catalog_url, "catalog", size_of(&catalog_url), &master_key).await?;
        let mut open = BTreeMap::new();
        for region in &held {
            let url = settings.region_url(*region);
            open.insert(
                Shard::first_of(*region),
                Db::connect(&url, region.as_str(), size_of(&url), &master_key).await?,
            );
        }
        Ok(Storage {
            catalog,
            held,
            open: RwLock::new(open),
            urls: RwLock::new(urls),
            added_at: RwLock::default(),
            opened_elsewhere: Mutex::default(),
            pool_sizes: RwLock::new(pool_sizes),
            pool_inputs,
            master_key,
            opened: tokio::sync::watch::Sender::new(0),
        })
    }

    /// Applies what is pending and says so in one line per database
    /// (sea-orm's own per-migration lines are at `debug`).
    pub async fn migrate(&self) -> Result<(), DbErr> {
        migrate_one::<migration::CatalogMigrator>(&self.catalog).await?;
        for (_, shard) in self.held() {
            migrate_one::<migration::RegionMigrator>(&shard).await?;
        }
        Ok(())
    }

    /// A SQLite file holding the catalog's schema and the regional one,
    /// migrated to this version: an application archive
    /// (`areas::application_archive`). One from a later version (a
    /// migration this one does not know) is refused.
    pub async fn open_archive(&self, path: &std::path::Path) -> Result<Db, DbErr> {
        let url = format!("sqlite://{}", path.display());
        let archive = Db::connect(&url, "archive", 2, &self.master_key).await?;
        let later = |err: DbErr| DbErr::Custom(format!("the archive is of a later version of Gatehouse: {err}"));
        migrate_one::<migration::CatalogMigrator>(&archive).await.map_err(later)?;
        migrate_one::<migration::RegionMigrator>(&archive).await.map_err(later)?;
        Ok(archive)
    }

    /// The open database of a shard of a held region.
    pub fn shard(&self, shard: Shard) -> Option<Db> {
        read(&self.open).get(&shard).cloned()
    }

    /// A shard's database for a move: the open one of a held region, else
    /// the one its URL names, connected (and migrated) on first use.
    /// `None`: this node has no way to reach it.
    pub async fn database(&self, shard: Shard) -> Result<Option<Db>, DbErr> {
        if let Some(db) = self.shard(shard) {
            return Ok(Some(db));
        }
        let Some(url) = read(&self.urls).get(&shard).cloned() else {
            return Ok(None);
        };
        let mut opened = self.opened_elsewhere.lock().await;
        if let Some(db) = opened.get(&shard) {
            return Ok(Some(db.clone()));
        }
        let db = Db::connect(&url, shard.name.as_str(), self.pool_size(&url).await?, &self.master_key).await?;
        migrate_one::<migration::RegionMigrator>(&db).await?;
        opened.insert(shard, db.clone());
        Ok(Some(db))
    }

    /// Whether two shards are configured with one database (a move between
    /// them would copy rows onto themselves, then delete them).
    pub fn share_a_database(&self, a: Shard, b: Shard) -> bool {
        let urls = read(&self.urls);
        urls.get(&a).is_some_and(|url| urls.get(&b) == Some(url))
    }

    /// Whether two shards' rows are in one database (one shard, or two
    /// configured with one URL).
    pub fn same_database(&self, a: Shard, b: Shard) -> bool {
        a == b || self.share_a_database(a, b)
    }

    pub fn holds(&self, region: Region) -> bool {
        self.held.contains(&region)
    }

    /// Every open shard of the held regions, in the deployment's order of
    /// regions, each region's first shard first.
    pub fn held(&self) -> Vec<(Shard, Db)> {
        let mut held: Vec<(Shard, Db)> = read(&self.open).iter().map(|(s, db)| (*s, db.clone())).collect();
        let rank = |s: &Shard| (self.held.iter().position(|r| *r == s.region), s.stored_name());
        held.sort_by_key(|(s, _)| rank(s));
        held
    }

    /// Every database this node holds open, the catalog first.
    pub fn all(&self) -> Vec<Db> {
        std::iter::once(self.catalog.clone()).chain(self.held().into_iter().map(|(_, db)| db)).collect()
    }

    /// The shards of `region` new applications may be placed on: its first,
    /// and every added one old enough that each node has opened it.
    pub fn placeable(&self, region: Region) -> Vec<Shard> {
        let added_at = read(&self.added_at);
        let settled = |s: &Shard| added_at.get(s).is_none_or(|at| crate::clock::now() - *at >= shards::PLACED_AFTER);
        read(&self.urls).keys().filter(|s| s.region == region && settled(s)).copied().collect()
    }

    /// A shard of each database this node knows of (configured or added):
    /// one for two configured with one URL.
    pub fn known_databases(&self) -> Vec<Shard> {
        let mut seen = std::collections::BTreeSet::new();
        read(&self.urls).iter().filter(|(_, url)| seen.insert((*url).clone())).map(|(shard, _)| *shard).collect()
    }

    /// Whether `shard` is one this node knows of (configured or added).
    pub fn knows(&self, shard: Shard) -> bool {
        read(&self.urls).contains_key(&shard)
    }

    /// Tells when shards open, for workers that run one task per shard.
    pub fn watch_opened(&self) -> tokio::sync::watch::Receiver<usize> {
        self.opened.subscribe()
    }

    /// Reads the shards added in the catalog; opens (and migrates) those of
    /// held regions not yet open, and notes the others' URLs. Returns the
    /// ones opened now. A shard that cannot be opened is reported and
    /// tried again at the next refresh.
    pub async fn refresh_shards(&self) -> Result<Vec<Shard>, DbErr> {
        let mut opened = Vec::new();
        for added in shards::added(&self.catalog, &self.master_key).await? {
            let shard = added.shard;
            write(&self.added_at).insert(shard, added.created_at);
            let known = read(&self.urls).get(&shard).cloned();
            if known.as_deref() != Some(added.url.as_str()) {
                write(&self.urls).insert(shard, added.url.clone());
            }
            if !self.holds(shard.region) || read(&self.open).contains_key(&shard) {
                continue;
            }
            let connected = async {
                let db =
                    Db::connect(&added.url, shard.name.as_str(), self.pool_size(&added.url).await?, &self.master_key)
                        .await?;
                migrate_one::<migration::RegionMigrator>(&db).await?;
                Ok::<_, DbErr>(db)
            };
            match connected.await {
                Ok(db) => {
                    write(&self.open).insert(shard, db);
                    tracing::info!(%shard, "shard opened");
                    opened.push(shard);
                }
                Err(err) => tracing::warn!(%shard, error = %err, "opening an added shard failed; tried again shortly"),
            }
        }
        if !opened.is_empty() {
            self.opened.send_modify(|count| *count += opened.len());
        }
        Ok(opened)
    }

    /// The pool size of a database opened after start: its share of its
    /// server with every pool this node holds counted.
    async fn pool_size(&self, url: &str) -> Result<u32, DbErr> {
        if let Some(size) = read(&self.pool_sizes).get(url) {
            return Ok(*size);
        }
        let mut every_pool: Vec<String> = read(&self.pool_sizes).keys().cloned().collect();
        every_pool.push(url.to_string());
        let (configured, nodes, server) = self.pool_inputs;
        let sizes = pools::sizes(&every_pool, configured, nodes, server).await.map_err(DbErr::Custom)?;
        let size = sizes.get(url).copied().unwrap_or(pools::DEFAULT_POOL);
        write(&self.pool_sizes).insert(url.to_string(), size);
        Ok(size)
    }

    /// Connects to a shard's database before it is added, and migrates it.
    pub async fn prepare_shard(&self, url: &str, name: crate::region::ShardName) -> Result<(), DbErr> {
        let db = Db::connect(url, name.as_str(), pools::MIN_POOL, &self.master_key).await?;
        migrate_one::<migration::RegionMigrator>(&db).await?;
        db.conn.close().await
    }

    pub fn master_key(&self) -> &MasterKey {
        &self.master_key
    }
}

/// A lock whose holder panicked still guards consistent maps (each
/// write is one insert).
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_key() -> MasterKey {
        MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap()
    }

    #[tokio::test]
    async fn an_unreachable_database_is_named_with_its_host_and_never_its_password() {
        let err = Db::connect("postgres://gatehouse:s3cret@127.0.0.1:1/gatehouse_eu", "eu", 1, &test_key())
            .await
            .err()
            .unwrap();
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
        let db = Db::connect(&url, "us", 4, &test_key()).await.unwrap();
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
