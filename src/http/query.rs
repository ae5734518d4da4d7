//! Query strings: ill-typed or unknown parameters are 422 `validation_failed`.
use std::future::{ready, Ready};

use actix_web::{dev::Payload, FromRequest, HttpRequest};
use serde::de::DeserializeOwned;

use crate::{
    error::{ApiError, ApiResult},
    storage::Page,
};

/// A query string, parsed when the handler asks ([`Query::parsed`]), after
/// its principal has been authenticated: a caller with a bad credential
/// learns nothing about parameters (actix resolves extractors together, so
/// an eager parse could answer 422 before the key was checked).
pub struct Query<T>(ApiResult<T>);

impl<T> Query<T> {
    pub fn parsed(self) -> ApiResult<T> {
        self.0
    }
}

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(Query(parse(req.query_string()))))
    }
}

/// Decodes a query string. A value with control characters (a `%00`, say)
/// is refused here, once for every route, before it can reach a database.
fn parse<T: DeserializeOwned>(query: &str) -> ApiResult<T> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| ApiError::invalid("query", e.to_string()))?;
    if let Some((name, _)) = pairs.iter().find(|(_, value)| value.chars().any(char::is_control)) {
        return Err(ApiError::invalid(name, "must not contain control characters"));
    }
    serde_urlencoded::from_str::<T>(query).map_err(|e| ApiError::invalid("query", e.to_string()))
}

/// The query string of a plain list route.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// How many rows, 1 to 100; default 50.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// How many rows to skip; default 0.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    pub offset: Option<i64>,
}

impl ListQuery {
    pub fn page(&self) -> ApiResult<Page> {
        Page::parse(self.limit, self.offset, 50, 100)
    }
}
