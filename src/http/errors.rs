//! Envelopes for what the router answers itself: unknown routes (404) and
//! known routes called with another method (405, with the `Allow` header
//! RFC 9110 requires, read from the OpenAPI document: one table of routes
//! and methods). `HEAD` is `GET` without a body on every `GET` route.
use std::{collections::HashMap, sync::Arc};

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::{
        header::{HeaderValue, ALLOW},
        Method, StatusCode,
    },
    middleware::{ErrorHandlerResponse, ErrorHandlers, Next},
    ResponseError,
};
use serde_json::Value;

use crate::error::{ApiError, Code};

pub async fn unknown_route() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::new(Code::NotFound, "No such route."))
}

/// The `Allow` header of each route pattern (`/v1/api-keys/{key_id}`): the
/// methods the served document gives it, and `HEAD` beside `GET`.
pub struct AllowedMethods(HashMap<String, HeaderValue>);

impl AllowedMethods {
    pub fn of_document(document: &Value) -> AllowedMethods {
        let paths = document["paths"].as_object().into_iter().flatten();
        let table = paths.filter_map(|(path, item)| {
            let has = |method: &str| item.get(method).is_some();
            let methods = [
                ("GET", has("get")),
                ("HEAD", has("get") || has("head")),
                ("POST", has("post")),
                ("PUT", has("put")),
                ("PATCH", has("patch")),
                ("DELETE", has("delete")),
            ];
            let allow: Vec<&str> = methods.iter().filter(|(_, on)| *on).map(|(m, _)| *m).collect();
            Some((path.clone(), HeaderValue::from_str(&allow.join(", ")).ok()?))
        });
        AllowedMethods(table.collect())
    }
}

pub fn method_not_allowed<B: 'static>(allowed: Arc<AllowedMethods>) -> ErrorHandlers<B> {
    ErrorHandlers::new().handler(StatusCode::METHOD_NOT_ALLOWED, move |res: ServiceResponse<B>| {
        let (req, _) = res.into_parts();
        let mut body = ApiError::new(Code::MethodNotAllowed, "This route does not take that method.").error_response();
        if let Some(allow) = req.match_pattern().and_then(|pattern| allowed.0.get(&pattern)) {
            body.headers_mut().insert(ALLOW, allow.clone());
        }
        Ok(ErrorHandlerResponse::Response(ServiceResponse::new(req, body).map_into_right_body()))
    })
}

/// Routes a `HEAD` request as the `GET` of the same route. The response
/// carries no body: the connection's codec saw `HEAD` and leaves it out.
pub async fn head_as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if req.method() == Method::HEAD {
        req.head_mut().method = Method::GET;
    }
    next.call(req).await
}
