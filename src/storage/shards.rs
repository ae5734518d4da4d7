//! The shards added to regions (catalog `shards`) and where a new
//! application goes. A region's first shard is its configured
//! `database_url`; `gatehouse shards add` adds more: it migrates the new
//! database and records it here with its URL sealed, and every node opens
//! it at its next refresh (every [`REFRESH`]), with no restart.
#![allow(clippy::disallowed_methods)] // catalog rows, not tenant rows (see catalog.rs)

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use entity::{application, shard};
use sea_orm::{ColumnTrait, DbErr, EntityTrait, IntoActiveModel, QueryFilter, QuerySelect};

use super::Db;
use crate::{
    crypto::{master_key::MasterKey, seal},
    region::{Region, Shard},
};

/// How often a node reads the catalog for added shards.
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(2);
/// How long after it is added a shard takes new applications: by then every
/// node has read it (several refreshes) and can serve what is placed there.
pub const PLACED_AFTER: chrono::Duration = chrono::Duration::seconds(10);

pub const URL_CONTEXT: &str = "shard database url";

/// A shard recorded in the catalog, its URL opened.
pub struct Added {
    pub shard: Shard,
    pub url: String,
    pub created_at: DateTime<Utc>,
}

/// Every added shard whose row reads: a row this code did not write (a
/// region name edited in, a URL sealed under another key) is reported and
/// left out.
pub async fn added(catalog: &Db, key: &MasterKey) -> Result<Vec<Added>, DbErr> {
    let rows = shard::Entity::find().all(&catalog.conn).await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let opened = seal::open(key, URL_CONTEXT, &row.database_url_sealed).ok();
            let url = opened.and_then(|bytes| String::from_utf8(bytes).ok());
            let shard = Region::new(&row.region).ok().and_then(|r| Shard::stored(r, Some(&row.name)).ok());
            match (shard, url) {
                (Some(shard), Some(url)) => Some(Added { shard, url, created_at: row.created_at }),
                _ => {
                    tracing::warn!(
                        shard = row.name,
                        "an added shard's row does not read (its region, or its URL under this master key)"
                    );
                    None
                }
            }
        })
        .collect())
}

/// Records an added shard; a name already taken is a unique violation.
pub async fn record(catalog: &Db, key: &MasterKey, shard: Shard, url: &str) -> Result<shard::Model, DbErr> {
    let row = shard::Model {
        name: shard.name.as_str().to_string(),
        region: shard.region.as_str().to_string(),
        database_url_sealed: seal::seal(key, URL_CONTEXT, url.as_bytes()),
        created_at: crate::clock::now(),
    };
    shard::Entity::insert(row.clone().into_active_model()).exec_without_returning(&catalog.conn).await?;
    Ok(row)
}

/// How many applications each shard of `region` holds (moving ones count
/// where they are).
pub async fn applications_per_shard(catalog: &Db, region: Region) -> Result<BTreeMap<Shard, u64>, DbErr> {
    let counts: Vec<(Option<String>, i64)> = application::Entity::find()
        .select_only()
        .column(application::Column::Shard)
        .column_as(application::Column::Id.count(), "applications")
        .filter(application::Column::Region.eq(region.as_str()))
        .group_by(application::Column::Shard)
        .into_tuple()
        .all(&catalog.conn)
        .await?;
    let mut per_shard = BTreeMap::new();
    for (name, count) in counts {
        if let Ok(shard) = Shard::stored(region, name.as_deref()) {
            *per_shard.entry(shard).or_default() += count as u64;
        }
    }
    Ok(per_shard)
}

/// The placement policy: of the shards a new application may go to, the
/// one holding the fewest applications; of equals, the region's first,
/// then by name. A shard just added fills up first.
pub fn least_loaded(candidates: &[Shard], per_shard: &BTreeMap<Shard, u64>) -> Option<Shard> {
    candidates.iter().copied().min_by_key(|s| (per_shard.get(s).copied().unwrap_or(0), s.stored_name()))
}

/// Where a new application of `region` goes ([`least_loaded`] of the
/// shards it may be placed on).
pub async fn place(storage: &super::Storage, region: Region) -> Result<Shard, DbErr> {
    let per_shard = applications_per_shard(&storage.catalog, region).await?;
    Ok(least_loaded(&storage.placeable(region), &per_shard).unwrap_or(Shard::first_of(region)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_loaded_shard_takes_the_next_application_and_the_first_wins_ties() {
        let us = Region::new("us").unwrap();
        let (first, second) = (Shard::first_of(us), Shard::stored(us, Some("us-2")).unwrap());
        let third = Shard::stored(us, Some("a-third")).unwrap();
        let counts = |pairs: &[(Shard, u64)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
        assert_eq!(least_loaded(&[first, second], &counts(&[])), Some(first));
        assert_eq!(least_loaded(&[first, second], &counts(&[(first, 3), (second, 2)])), Some(second));
        assert_eq!(least_loaded(&[second, third, first], &counts(&[(first, 1)])), Some(third), "by name of equals");
        assert_eq!(least_loaded(&[first, second], &counts(&[(first, 1), (second, 1)])), Some(first));
        assert_eq!(least_loaded(&[], &counts(&[])), None);
    }
}
