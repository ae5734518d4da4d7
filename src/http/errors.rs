//! Envelopes for what the router answers itself: unknown routes (404) and
//! known routes called with another method (405, with the `Allow` header
//! RFC 9110 requires, read from the OpenAPI document: one table of routes
//! and methods). `HEAD` is `GET` without a body on every `GET` route.
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

use crate::error::{ApiError, Code};

pub async fn unknown_route() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::new(Code::NotFound, "No such route."))
}

pub fn method_not_allowed<B: 'static>() -> ErrorHandlers<B> {
    ErrorHandlers::new().handler(StatusCode::METHOD_NOT_ALLOWED, |res: ServiceResponse<B>| {
        let (req, _) = res.into_parts();
        let mut body = ApiError::new(Code::MethodNotAllowed, "This route does not take that method.").error_response();
        let allow = req.match_pattern().and_then(|pattern| crate::openapi::allowed_methods(&pattern));
        if let Some(allow) = allow {
            body.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
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
