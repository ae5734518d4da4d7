//! Regions and the routing of requests to them. The [`router::RegionRouter`]
//! actor owns the application directory (catalog) and publishes a cache that
//! handlers read without a mailbox hop; [`forward`] sends requests for
//! applications of regions this node does not hold to a peer node;
//! [`moves`] moves an application's data to another region.
pub mod forward;
pub mod moves;
pub mod router;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Region {
    Us,
    Eu,
    Ap,
}

impl Region {
    pub const ALL: [Region; 3] = [Region::Us, Region::Eu, Region::Ap];

    pub fn as_str(self) -> &'static str {
        match self {
            Region::Us => "us",
            Region::Eu => "eu",
            Region::Ap => "ap",
        }
    }

    pub fn parse(value: &str) -> Option<Region> {
        Region::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

impl std::fmt::Display for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
