//! A page of a list: a domain type the services take, parsed at the edge.
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QuerySelect, Select};

use crate::error::{ApiError, ApiResult};

/// `limit` and `offset` of a list, checked against the route's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    pub limit: u64,
    pub offset: u64,
}

impl Page {
    /// The largest `offset` (the OpenAPI document declares it beside each list).
    pub const MAX_OFFSET: i64 = 1_000_000_000;

    pub fn parse(limit: Option<i64>, offset: Option<i64>, default: u64, max: u64) -> ApiResult<Page> {
        let limit = match limit {
            None => default,
            Some(n) if n >= 1 && (n as u64) <= max => n as u64,
            Some(_) => return Err(ApiError::invalid("limit", format!("must be between 1 and {max}"))),
        };
        let offset = match offset {
            None => 0,
            Some(n) if (0..=Self::MAX_OFFSET).contains(&n) => n as u64,
            Some(_) => return Err(ApiError::invalid("offset", format!("must be between 0 and {}", Self::MAX_OFFSET))),
        };
        Ok(Page { limit, offset })
    }

    /// This page of an ordered query, and whether more rows follow (one
    /// extra row is read to know).
    pub async fn fetch<E: EntityTrait>(
        self,
        query: Select<E>,
        db: &impl ConnectionTrait,
    ) -> Result<(Vec<E::Model>, bool), DbErr> {
        let mut rows = query.offset(self.offset).limit(self.limit + 1).all(db).await?;
        let has_more = rows.len() as u64 > self.limit;
        rows.truncate(self.limit as usize);
        Ok((rows, has_more))
    }
}
