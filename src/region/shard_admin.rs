//! What `gatehouse shards` does: list a deployment's shards, add one to a
//! region (no node restarts: each opens it within seconds), and move an
//! application between two shards of its region, to rebalance, through
//! the same journaled, crash-safe move as a region change.
use serde_json::{json, Value};
use uuid::Uuid;

use super::{Region, Shard, ShardName};
use crate::{
    audit::Actor,
    config::Settings,
    storage::{
        catalog,
        move_journal::{self, Begun, Step},
        shards, Storage,
    },
};

#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

fn refused(why: impl Into<String>) -> ShardError {
    ShardError::Refused(why.into())
}

/// Every shard this node knows of, each with how many applications it holds.
pub async fn list(storage: &Storage, settings: &Settings) -> Result<Vec<Value>, ShardError> {
    let added: std::collections::BTreeMap<Shard, _> = shards::added(&storage.catalog, storage.master_key())
        .await?
        .into_iter()
        .map(|a| (a.shard, a.created_at))
        .collect();
    let mut listed = Vec::new();
    for region in &settings.deployment.regions {
        let per_shard = shards::applications_per_shard(&storage.catalog, *region).await?;
        let mut of_region: Vec<Shard> = vec![Shard::first_of(*region)];
        of_region.extend(added.keys().filter(|s| s.region == *region));
        for shard in of_region {
            listed.push(json!({
                "region": region,
                "shard": shard.name,
                "applications": per_shard.get(&shard).copied().unwrap_or(0),
                "added_at": added.get(&shard),
                "first": shard == Shard::first_of(*region),
            }));
        }
    }
    Ok(listed)
}

/// Adds shard `name` to `region`: checks the name and the database (one no
/// other shard uses), migrates it, records it with its URL sealed. Nodes
/// of the region open it within [`shards::REFRESH`]; new applications are
/// placed on it from [`shards::PLACED_AFTER`] on.
pub async fn add(
    storage: &Storage,
    settings: &Settings,
    region: &str,
    name: &str,
    url: &str,
) -> Result<Value, ShardError> {
    let region = settings.region_named(region).ok_or_else(|| {
        refused(format!("`{region}` is not a region of this deployment ({})", settings.region_names()))
    })?;
    let name = ShardName::new(name).map_err(|err| refused(format!("the shard's name: {err}")))?;
    if settings.region_named(name.as_str()).is_some() {
        return Err(refused(format!("`{name}` is a region's name, which its first shard bears")));
    }
    let added = shards::added(&storage.catalog, storage.master_key()).await?;
    if added.iter().any(|a| a.shard.name == name) {
        return Err(refused(format!("a shard named `{name}` exists")));
    }
    let configured = settings.deployment.regions.iter().filter_map(|r| settings.configured_region_url(*r));
    if configured.chain(added.iter().map(|a| a.url.as_str())).any(|known| known == url) {
        return Err(refused("another shard uses that database: each shard is a database of its own"));
    }
    storage.prepare_shard(url, name).await?;
    let shard = Shard { region, name };
    let row = shards::record(&storage.catalog, storage.master_key(), shard, url).await?;
    Ok(json!({
        "region": region,
        "shard": name,
        "added_at": row.created_at,
        "placed_from": row.created_at + shards::PLACED_AFTER,
    }))
}

/// Journals a move of `application` to shard `to` of its own region, with
/// a lease already lapsed so that a node of the region takes it at its next
/// scan of stalled moves (within seconds), then waits up to `wait` for it
/// to end. Answers the journal's row and whether it ended `cleaned`.
pub async fn move_application(
    storage: &Storage,
    application: Uuid,
    to: &str,
    wait: std::time::Duration,
) -> Result<(Value, bool), ShardError> {
    let row = catalog::find_application(&storage.catalog, application)
        .await?
        .ok_or_else(|| refused(format!("no application {application}")))?;
    let region = Region::new(&row.region).map_err(|err| refused(err.to_string()))?;
    let from = Shard::stored(region, row.shard.as_deref()).map_err(|err| refused(err.to_string()))?;
    let to = ShardName::new(to).map_err(|err| refused(format!("the shard's name: {err}")))?;
    let to = Shard { region, name: to };
    if !storage.knows(to) {
        return Err(refused(format!(
            "region `{region}` has no shard `{}` (`gatehouse shards list`); a move to another region is the application's own (`POST /v1/security/region`)",
            to.name
        )));
    }
    if from == to {
        return Err(refused(format!("application {application} is on `{to}` already")));
    }
    let lapsed = (Uuid::nil(), crate::clock::now() - chrono::Duration::seconds(1));
    match move_journal::begin(&storage.catalog, application, (from, to), &Actor::system(), lapsed).await? {
        Begun::Started(_) => {}
        Begun::Unfinished(running) => {
            return Err(refused(format!("the application's move is `{}`: wait for it to end", running.step)))
        }
        Begun::NotInRegion => return Err(refused("the application moved meanwhile; look again")),
    }
    let until = std::time::Instant::now() + wait;
    loop {
        let row = move_journal::find(&storage.catalog, application)
            .await?
            .ok_or_else(|| refused("the journal row is gone"))?;
        let ended = row.finished_at.is_some();
        if ended || std::time::Instant::now() >= until {
            let cleaned = row.step == Step::Cleaned.as_str();
            return Ok((serde_json::to_value(&row).unwrap_or_default(), cleaned));
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
