//! How many connections each database pool of a node may hold, so that
//! every node's pools fit the PostgreSQL server they share. The inputs are
//! stated, not guessed: the server's `max_connections` and
//! `superuser_reserved_connections` (read from it at start, or
//! `storage.server_connections` when a pooler stands in front and the
//! server's own figure is not the limit), how many nodes connect
//! (`deployment.nodes`), and how many pools this node opens on that server
//! (the catalog, the held regions, and the regions a move may write into:
//! one each, even where two share a URL). Unset, `storage.max_connections` is the even share, at
//! most [`DEFAULT_POOL`]; set, it must fit, or start-up refuses.
use std::collections::BTreeMap;

use sea_orm::sqlx::{self, Connection, Row};

/// A pool's size when the server has room for more.
pub const DEFAULT_POOL: u32 = 16;
/// Connections left to operators and tools (psql, monitoring, backups, a
/// node starting while an old one still holds its pools).
pub const HEADROOM: u32 = 5;
/// The smallest pool: start-up holds one connection for its lock while
/// another migrates (`Db::exclusively`).
pub const MIN_POOL: u32 = 2;

/// What one server offers and how many pools share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Connections the server (or its pooler) takes in all.
    pub server_connections: u32,
    /// Of those, the ones kept for superusers.
    pub reserved: u32,
    pub nodes: u32,
    /// This node's pools on the server (one per database handle).
    pub databases: u32,
}

impl Budget {
    fn usable(&self) -> u32 {
        self.server_connections.saturating_sub(self.reserved + HEADROOM)
    }

    fn pools(&self) -> u32 {
        self.nodes.max(1) * self.databases.max(1)
    }

    /// Each pool's size: `configured` if every node's pools fit with it,
    /// else the even share (at most [`DEFAULT_POOL`]); an error naming the
    /// figures when they cannot fit.
    pub fn pool_size(&self, configured: Option<u32>) -> Result<u32, String> {
        let (usable, pools) = (self.usable(), self.pools());
        let size = match configured {
            Some(size) if size * pools > usable => {
                return Err(format!(
                    "storage.max_connections = {size} does not fit: {} nodes × {} databases × {size} = {} connections, \
                     and the server takes {} ({} max_connections − {} reserved − {HEADROOM} headroom); lower it, \
                     or leave it unset to share the server evenly",
                    self.nodes,
                    self.databases,
                    size * pools,
                    usable,
                    self.server_connections,
                    self.reserved
                ))
            }
            Some(size) => size,
            None => (usable / pools).min(DEFAULT_POOL),
        };
        if size < MIN_POOL {
            return Err(format!(
                "{} nodes × {} databases cannot each have {MIN_POOL} connections of the {usable} the server takes \
                 ({} max_connections − {} reserved − {HEADROOM} headroom): raise max_connections, put a pooler in \
                 front (and set storage.server_connections to its pool), or run fewer nodes",
                self.nodes, self.databases, self.server_connections, self.reserved
            ));
        }
        Ok(size)
    }
}

/// The server a PostgreSQL URL names (`host:port`); `None` for SQLite.
pub fn server_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok().filter(|u| u.scheme().starts_with("postgres"))?;
    Some(format!("{}:{}", parsed.host_str().unwrap_or("localhost"), parsed.port().unwrap_or(5432)))
}

/// Each URL's pool size, given one entry per pool the node opens (a URL
/// twice: two pools): SQLite files get `configured` or [`DEFAULT_POOL`];
/// PostgreSQL databases a share of their server, read from it unless
/// `server_connections` says what it takes.
pub async fn sizes(
    urls: &[String],
    configured: Option<u32>,
    nodes: u32,
    server_connections: Option<u32>,
) -> Result<BTreeMap<String, u32>, String> {
    let mut by_server: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    let mut sizes = BTreeMap::new();
    for url in urls {
        match server_of(url) {
            Some(server) => by_server.entry(server).or_default().push(url),
            None => {
                sizes.insert(url.clone(), configured.unwrap_or(DEFAULT_POOL));
            }
        }
    }
    for (server, databases) in by_server {
        let (total, reserved) = match server_connections {
            Some(total) => (total, 0),
            None => read_limits(databases[0]).await.map_err(|err| format!("reading {server}'s limits: {err}"))?,
        };
        let budget = Budget { server_connections: total, reserved, nodes, databases: databases.len() as u32 };
        let size = budget.pool_size(configured).map_err(|err| format!("the databases on {server}: {err}"))?;
        tracing::info!(%server, max_connections = total, reserved, nodes, databases = databases.len(), pool = size,
            "database pools sized");
        sizes.extend(databases.into_iter().map(|url| (url.clone(), size)));
    }
    Ok(sizes)
}

/// The server's `max_connections` and `superuser_reserved_connections`, on
/// one connection of its own.
async fn read_limits(url: &str) -> Result<(u32, u32), sqlx::Error> {
    let mut conn = sqlx::PgConnection::connect(url).await?;
    let row = sqlx::query(
        "SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int",
    )
    .fetch_one(&mut conn)
    .await?;
    let (max, reserved): (i32, i32) = (row.try_get(0)?, row.try_get(1)?);
    conn.close().await?;
    Ok((max.max(0) as u32, reserved.max(0) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(nodes: u32, databases: u32) -> Budget {
        Budget { server_connections: 100, reserved: 3, nodes, databases }
    }

    #[test]
    fn pools_share_the_server_evenly_up_to_the_default() {
        assert_eq!(budget(1, 5).pool_size(None), Ok(16), "one node: the default");
        // Issue 37's cluster: four nodes, four databases each, on one server of 100.
        assert_eq!(budget(4, 4).pool_size(None), Ok(5));
        assert_eq!(budget(4, 4).pool_size(Some(5)), Ok(5));
        let too_many = budget(4, 4).pool_size(Some(16)).unwrap_err();
        assert!(too_many.contains("4 nodes × 4 databases × 16 = 256 connections"), "{too_many}");
        let cannot = budget(20, 4).pool_size(None).unwrap_err();
        assert!(cannot.contains("cannot each have 2 connections"), "{cannot}");
    }

    #[tokio::test]
    async fn two_pools_on_one_url_count_twice() {
        let urls = ["postgres://u@db/shared".to_string(), "postgres://u@db/shared".to_string()];
        let sizes = sizes(&urls, None, 4, Some(100)).await.unwrap();
        assert_eq!(sizes["postgres://u@db/shared"], (100 - HEADROOM) / 8);
    }

    #[test]
    fn servers_are_told_apart_by_host_and_port() {
        assert_eq!(server_of("postgres://u@db.internal/us").as_deref(), Some("db.internal:5432"));
        assert_eq!(server_of("postgresql://u@10.0.0.1:6432/eu").as_deref(), Some("10.0.0.1:6432"));
        assert_eq!(server_of("sqlite://./data/us.db"), None);
    }
}
