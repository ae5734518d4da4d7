//! Query strings: ill-typed or unknown parameters are 422 `validation_failed`.
use std::future::{ready, Ready};

use actix_web::{dev::Payload, FromRequest, HttpRequest};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QuerySelect, Select};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ApiResult};

pub struct Query<T>(pub T);

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(parse(req.query_string()))
    }
}

/// Decodes a query string. A value with control characters (a `%00`, say)
/// is refused here, once for every route, before it can reach a database.
fn parse<T: DeserializeOwned>(query: &str) -> ApiResult<Query<T>> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| ApiError::invalid("query", e.to_string()))?;
    if let Some((name, _)) = pairs.iter().find(|(_, value)| value.chars().any(char::is_control)) {
        return Err(ApiError::invalid(name, "must not contain control characters"));
    }
    serde_urlencoded::from_str::<T>(query).map(Query).map_err(|e| ApiError::invalid("query", e.to_string()))
}

/// The query string of a plain list route.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// 1 to 100, default 50.
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

impl ListQuery {
    pub fn page(&self) -> ApiResult<Page> {
        Page::parse(self.limit, self.offset, 50, 100)
    }
}

/// `limit` and `offset` of a list, checked against the route's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    pub limit: u64,
    pub offset: u64,
}

impl Page {
    pub fn parse(limit: Option<i64>, offset: Option<i64>, default: u64, max: u64) -> ApiResult<Page> {
        let limit = match limit {
            None => default,
            Some(n) if n >= 1 && (n as u64) <= max => n as u64,
            Some(_) => return Err(ApiError::invalid("limit", format!("must be between 1 and {max}"))),
        };
        let offset = match offset {
            None => 0,
            Some(n) if (0..=i64::MAX / 2).contains(&n) => n as u64,
            Some(_) => return Err(ApiError::invalid("offset", "must be zero or more")),
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
