//! The response envelope: `{success, data, error, meta}` (contract §2).
use actix_web::{
    http::{
        header::{HeaderValue, CONTENT_TYPE},
        StatusCode,
    },
    HttpResponse, ResponseError,
};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::request_id;
use crate::error::{ApiError, Code, FieldIssue};

#[derive(Serialize)]
struct Envelope<'a, D> {
    success: bool,
    data: &'a D,
    error: Option<&'a ErrorBody<'a>>,
    meta: Meta<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "<[FieldIssue]>::is_empty")]
    details: &'a [FieldIssue],
}

/// `meta`: when the answer was written and which request it answers.
#[derive(Serialize)]
struct Meta<'a> {
    #[serde(serialize_with = "crate::clock::serialize")]
    timestamp: DateTime<Utc>,
    request_id: &'a str,
    /// Whether a page has more after it; absent for a single object.
    #[serde(skip_serializing_if = "Option::is_none")]
    has_more: Option<bool>,
}

fn respond(
    status: StatusCode,
    data: &impl Serialize,
    error: Option<&ErrorBody<'_>>,
    has_more: Option<bool>,
) -> HttpResponse {
    let timestamp = crate::clock::now();
    let written = request_id::with_current(|request_id| {
        let meta = Meta { timestamp, request_id, has_more };
        serde_json::to_vec(&Envelope { success: error.is_none(), data, error, meta })
    });
    match written {
        Ok(body) => HttpResponse::build(status).insert_header((CONTENT_TYPE, JSON)).body(body),
        // Only data can fail (a map with keys that are not strings); an error
        // body is text.
        Err(err) => ApiError::internal_error(&err).error_response(),
    }
}

/// The JSON content type, static: set without copying it per response.
pub const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The answer to a request that failed.
pub fn failure(err: &ApiError) -> HttpResponse {
    let error = ErrorBody { code: err.code.as_str(), message: &err.message, details: &err.details };
    respond(err.status_code(), &(), Some(&error), None)
}

pub fn ok(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::OK, &data, None, None)
}

pub fn created(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::CREATED, &data, None, None)
}

pub fn accepted(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::ACCEPTED, &data, None, None)
}

/// A page of a list: `data` is the array, `meta` says whether more follow.
pub fn page<T: Serialize>(items: Vec<T>, has_more: bool) -> HttpResponse {
    respond(StatusCode::OK, &items, None, Some(has_more))
}

/// An `ApiError` is answered in the envelope, with its code's status.
impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code.status()).expect("every code's status is a valid status")
    }

    fn error_response(&self) -> HttpResponse {
        use actix_web::http::header::{HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
        let mut answer = failure(self);
        if self.code == Code::Unauthenticated {
            answer.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            answer.headers_mut().insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn written(data: &impl Serialize, error: Option<&ErrorBody<'_>>, has_more: Option<bool>, id: &str) -> Value {
        let timestamp = "2026-11-26T14:05:06.123456Z".parse().unwrap();
        let meta = Meta { timestamp, request_id: id, has_more };
        let out = serde_json::to_vec(&Envelope { success: error.is_none(), data, error, meta }).unwrap();
        serde_json::from_slice(&out).expect("the envelope is JSON")
    }

    #[test]
    fn the_frame_parses_as_the_contracts_envelope_for_an_object_a_page_and_an_error() {
        let meta = json!({"timestamp": "2026-11-26T14:05:06.123456Z", "request_id": "r-1"});
        assert_eq!(
            written(&json!({"id": 7}), None, None, "r-1"),
            json!({"success": true, "data": {"id": 7}, "error": null, "meta": meta})
        );
        let mut paged = meta.clone();
        paged["has_more"] = json!(false);
        assert_eq!(
            written(&[1, 2], None, Some(false), "r-1"),
            json!({"success": true, "data": [1, 2], "error": null, "meta": paged})
        );
        let details = [FieldIssue { field: "name".into(), issue: "required".into() }];
        let error = ErrorBody { code: "validation_failed", message: "Check \"name\".", details: &details };
        assert_eq!(
            written(&(), Some(&error), None, "r-1"),
            json!({"success": false, "data": null, "meta": meta, "error": {
                "code": "validation_failed", "message": "Check \"name\".",
                "details": [{"field": "name", "issue": "required"}]}})
        );
    }

    #[test]
    fn a_callers_request_id_with_quotes_and_backslashes_stays_one_json_string() {
        let id = r#"a"b\c"#;
        assert_eq!(written(&(), None, None, id)["meta"]["request_id"], json!(id));
    }
}
