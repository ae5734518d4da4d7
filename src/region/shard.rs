//! A region's shards: the databases that hold its applications' data. A
//! region has one or more; its first is its configured `database_url` and
//! bears the region's name, and `gatehouse shards add` adds more. A node
//! that holds a region holds every shard of it.
use serde::{Deserialize, Serialize};

use super::{InvalidRegionName, Region};

/// A shard's name: a region name's rules, and unique in the deployment (a
/// region's first shard bears the region's name, so no added shard may).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ShardName(Region);

impl ShardName {
    pub fn new(name: &str) -> Result<ShardName, InvalidRegionName> {
        Region::new(name).map(ShardName)
    }

    pub fn as_str(self) -> &'static str {
        self.0.as_str()
    }
}

impl std::fmt::Display for ShardName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an application's rows are: one shard of its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    pub region: Region,
    pub name: ShardName,
}

impl Shard {
    /// The region's first shard: its configured database, named after it.
    pub fn first_of(region: Region) -> Shard {
        Shard { region, name: ShardName(region) }
    }

    /// The shard `name` of `region`; no name is the region's first.
    pub fn named(region: Region, name: Option<ShardName>) -> Shard {
        Shard { region, name: name.unwrap_or(ShardName(region)) }
    }

    /// From stored columns: no name is the region's first shard.
    pub fn stored(region: Region, name: Option<&str>) -> Result<Shard, InvalidRegionName> {
        Ok(Shard::named(region, name.map(ShardName::new).transpose()?))
    }

    /// The name to store: none for a region's first shard, so rows written
    /// before shards existed and rows written after read alike.
    pub fn stored_name(self) -> Option<String> {
        (self != Shard::first_of(self.region)).then(|| self.name.as_str().to_string())
    }
}

/// `eu`, or `us/us-2` for a shard other than the region's first.
impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.stored_name() {
            None => write!(f, "{}", self.region),
            Some(name) => write!(f, "{}/{name}", self.region),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regions_first_shard_is_stored_as_no_name_and_others_by_name() {
        let us = Region::new("us").unwrap();
        assert_eq!(Shard::first_of(us).stored_name(), None);
        assert_eq!(Shard::stored(us, None).unwrap(), Shard::first_of(us));
        let second = Shard::stored(us, Some("us-2")).unwrap();
        assert_eq!((second.stored_name().as_deref(), second.to_string().as_str()), (Some("us-2"), "us/us-2"));
        assert_eq!(Shard::stored(us, Some("us")).unwrap(), Shard::first_of(us), "named explicitly, still the first");
        assert!(Shard::stored(us, Some("US 2")).is_err());
    }
}
