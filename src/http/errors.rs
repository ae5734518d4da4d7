//! Envelopes for what the router answers itself: unknown routes (404) and
//! known routes called with another method (405).
use actix_web::{
    dev::ServiceResponse,
    http::StatusCode,
    middleware::{ErrorHandlerResponse, ErrorHandlers},
    ResponseError,
};

use crate::error::{ApiError, Code};

pub async fn unknown_route() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::new(Code::NotFound, "No such route."))
}

pub fn method_not_allowed<B: 'static>() -> ErrorHandlers<B> {
    ErrorHandlers::new().handler(StatusCode::METHOD_NOT_ALLOWED, |res: ServiceResponse<B>| {
        let (req, _) = res.into_parts();
        let body = ApiError::new(Code::MethodNotAllowed, "This route does not take that method.").error_response();
        Ok(ErrorHandlerResponse::Response(ServiceResponse::new(req, body).map_into_right_body()))
    })
}
