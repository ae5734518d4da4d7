//! Regions and the routing of requests to them. The [`router::RegionRouter`]
//! actor owns the application directory (catalog) and publishes a cache that
//! handlers read without a mailbox hop; [`forward`] sends requests for
//! applications of regions this node does not hold to a peer node;
//! [`moves`] moves an application's data to another region. Nodes find
//! each other through [`membership`] heartbeats; the router publishes them
//! as the [`route_table`].
//!
//! Which regions exist is configuration (`deployment.regions`, by default
//! `us`, `eu` and `ap`), not code: adding `ca` is a line of configuration
//! and a `gatehouse migrate`.
pub mod dispatch;
pub mod forward;
pub mod membership;
pub mod moves;
pub mod predecessor;
pub mod route_table;
pub mod router;
pub mod shard;
pub mod shard_admin;

pub use shard::{Shard, ShardName};

use std::{
    collections::BTreeSet,
    sync::{Mutex, OnceLock},
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;
use utoipa::openapi::{RefOr, Schema};

/// A region's name: a lower-case DNS label (`us`, `eu`, `ca-central`), so
/// that it fits a host name, a file name and an environment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Region(&'static str);

/// What a region's name must be.
pub const NAME_PATTERN: &str = "^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$";

impl Region {
    /// The region of this name, checked. Each name is kept once for the
    /// process's life: names come from configuration and from stored rows
    /// (written under a configuration that named them), never from a
    /// request, whose region is looked up among the configured ones
    /// ([`crate::config::Settings::region_named`]).
    pub fn new(name: &str) -> Result<Region, InvalidRegionName> {
        if !is_name(name) {
            return Err(InvalidRegionName(name.escape_debug().to_string()));
        }
        static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = names.get(name) {
            return Ok(Region(kept));
        }
        let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.insert(kept);
        Ok(Region(kept))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

/// 1 to 32 of `a-z`, `0-9` and `-`, starting with a letter and not ending
/// with `-` ([`NAME_PATTERN`]).
fn is_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
}

#[derive(Debug, thiserror::Error)]
#[error("region name `{0}` must be 1 to 32 of a-z, 0-9 and `-`, starting with a letter and not ending with `-`")]
pub struct InvalidRegionName(String);

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Region {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Region {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Region::new(&name).map_err(serde::de::Error::custom)
    }
}

/// In the document a region is a name; the served document lists the
/// deployment's regions as its `enum` (`openapi::for_deployment`).
impl utoipa::PartialSchema for Region {
    fn schema() -> RefOr<Schema> {
        let schema =
            json!({"type": "string", "pattern": NAME_PATTERN, "description": "A region this deployment configures."});
        serde_json::from_value(schema).expect("a literal schema is valid")
    }
}

impl utoipa::ToSchema for Region {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names_are_short_lower_case_dns_labels_kept_once() {
        for good in ["us", "eu", "ap", "ca", "ca-central", "in2", &"x".repeat(32)] {
            assert_eq!(Region::new(good).unwrap().as_str(), good);
        }
        for bad in ["", "US", "Eu", "2us", "-us", "us-", "us_east", "us.east", "ü", &"x".repeat(33)] {
            assert!(Region::new(bad).is_err(), "{bad:?} is refused");
        }
        assert!(std::ptr::eq(Region::new("eu").unwrap().as_str(), Region::new("eu").unwrap().as_str()));
    }
}
