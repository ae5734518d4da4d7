//! The routes of SCIM: the directories, managed with a secret key under
//! their organization ([`directories`]), and the protocol a directory
//! speaks under its base URL ([`protocol`]).
use actix_web::{http::StatusCode, HttpResponse, ResponseError};

use super::ScimError;

pub mod directories;
pub mod protocol;

/// SCIM's media type (RFC 7644 section 3.1).
pub const SCIM_JSON: &str = "application/scim+json";

/// A SCIM error as an answer: its status, `application/scim+json`, and
/// the headers its status calls for.
impl ResponseError for ScimError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut answer = HttpResponse::build(self.status_code());
        answer.content_type(SCIM_JSON);
        if self.status == 401 {
            answer.insert_header(("WWW-Authenticate", "Bearer"));
        }
        if self.status == 503 {
            answer.insert_header(("Retry-After", "1"));
        }
        answer.body(self.body().to_string())
    }
}
