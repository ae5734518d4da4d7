//! CORS for end-user routes (`/v1/auth/…`, and `/v1/dashboard/…`: a
//! customer's team page). A preflight carries no
//! `x-application-id`, so it is answered from the union of every
//! application's `allowed_origins`; the actual request is then held to its
//! own application's list, and an `Origin` not in it is 403
//! `origin_not_allowed` before the handler runs. Requests without `Origin`
//! are not browser calls and pass. Secret-key routes send no CORS headers.
use std::{collections::HashSet, sync::Arc, time::Duration};

use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        header::{self, HeaderValue},
        Method,
    },
    middleware::Next,
    web, Error, HttpMessage, HttpResponse, ResponseError,
};
use moka::future::Cache;

use crate::{
    cache::bus::{Bus, Invalidation},
    error::{ApiError, Code},
    storage::Db,
    tenancy::Tenant,
};

const ALLOWED_METHODS: &str = "GET, POST, PATCH, DELETE";
const ALLOWED_HEADERS: &str = "authorization, content-type, x-application-id, x-request-id";
const EXPOSED_HEADERS: &str = "x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset";

/// Every application's allowed origins, read from the catalog at most
/// every few seconds (app data of the server, for preflight requests).
#[derive(Clone)]
pub struct OriginUnion {
    catalog: Db,
    cache: Cache<(), Arc<HashSet<String>>>,
}

impl OriginUnion {
    /// Read again after any application's settings change: at once on the
    /// node that made it, through the bus on the others (5 s without Redis).
    pub fn new(bus: &Bus, catalog: Db) -> Self {
        let union =
            Self { catalog, cache: Cache::builder().max_capacity(1).time_to_live(Duration::from_secs(5)).build() };
        let cache = union.cache.clone();
        bus.listen(move |invalidation| {
            if matches!(invalidation, Invalidation::Tenant { .. } | Invalidation::All) {
                cache.invalidate_all();
            }
        });
        union
    }
}

impl OriginUnion {
    async fn contains(&self, origin: &str) -> Result<bool, ApiError> {
        let load = async {
            let lists = crate::storage::catalog::origin_lists(&self.catalog).await?;
            let origins = lists.into_iter().filter_map(|l| serde_json::from_value::<Vec<String>>(l).ok()).flatten();
            Ok::<_, sea_orm::DbErr>(Arc::new(origins.collect::<HashSet<_>>()))
        };
        let union = self.cache.try_get_with((), load).await.map_err(|err| ApiError::from(&*err))?;
        Ok(union.contains(origin))
    }
}

fn is_end_user_route(path: &str) -> bool {
    path.starts_with("/v1/auth/") || path.starts_with("/v1/dashboard/")
}

fn refused() -> HttpResponse {
    ApiError::new(Code::OriginNotAllowed, "This origin is not allowed for the application.").error_response()
}

pub async fn middleware<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
    let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let Some(origin) = origin.filter(|_| is_end_user_route(req.path())) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    if req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        let union = req.app_data::<web::Data<OriginUnion>>().expect("the origin union is registered").clone();
        // Boxed: inline, the catalog read would make every request's future kilobytes larger.
        let answer = match Box::pin(union.contains(&origin)).await {
            Ok(true) => HttpResponse::NoContent()
                .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, origin))
                .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, ALLOWED_METHODS))
                .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOWED_HEADERS))
                .insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"))
                .insert_header((header::VARY, "Origin"))
                .finish(),
            Ok(false) => refused(),
            Err(err) => err.error_response(),
        };
        return Ok(req.into_response(answer).map_into_right_body());
    }
    let allowed = req.extensions().get::<Tenant>().map(|t| t.allowed_origins.contains(&origin));
    match allowed {
        Some(false) => Ok(req.into_response(refused()).map_into_right_body()),
        // No application: the request fails authentication, without CORS headers.
        None => Ok(next.call(req).await?.map_into_left_body()),
        Some(true) => {
            let mut response = next.call(req).await?;
            let headers = response.headers_mut();
            if let Ok(value) = HeaderValue::from_str(&origin) {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
            }
            headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED_HEADERS));
            headers.append(header::VARY, HeaderValue::from_static("Origin"));
            Ok(response.map_into_left_body())
        }
    }
}
