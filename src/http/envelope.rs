//! The response envelope: `{success, data, error, meta}` (contract §2),
//! serialised straight from typed values.
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
use crate::error::{ApiError, FieldIssue};

#[derive(Serialize)]
pub struct Envelope<'a, T: Serialize> {
    success: bool,
    data: Option<T>,
    error: Option<ErrorBody<'a>>,
    meta: Meta,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "<[FieldIssue]>::is_empty")]
    details: &'a [FieldIssue],
}

#[derive(Serialize)]
struct Meta {
    #[serde(serialize_with = "crate::clock::serialize")]
    timestamp: DateTime<Utc>,
    #[serde(serialize_with = "request_id::serialize")]
    request_id: HeaderValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    has_more: Option<bool>,
}

impl Meta {
    fn new(has_more: Option<bool>) -> Meta {
        Meta { timestamp: crate::clock::now(), request_id: request_id::current(), has_more }
    }
}

pub fn failure(err: &ApiError) -> Envelope<'_, ()> {
    Envelope {
        success: false,
        data: None,
        error: Some(ErrorBody { code: err.code.as_str(), message: &err.message, details: &err.details }),
        meta: Meta::new(None),
    }
}

fn respond(status: StatusCode, data: impl Serialize, meta: Meta) -> HttpResponse {
    json(status, &Envelope { success: true, data: Some(data), error: None, meta })
}

/// The JSON content type, static: set without copying it per response.
pub const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Serialises into a buffer sized for a typical answer, sparing the
/// reallocations of growing one from empty.
pub fn json(status: StatusCode, body: &impl Serialize) -> HttpResponse {
    let mut buffer = Vec::with_capacity(1024);
    match serde_json::to_writer(&mut buffer, body) {
        Ok(()) => HttpResponse::build(status).insert_header((CONTENT_TYPE, JSON)).body(buffer),
        Err(err) => crate::error::ApiError::internal_error(&err).error_response(),
    }
}

pub fn ok(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::OK, data, Meta::new(None))
}

pub fn created(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::CREATED, data, Meta::new(None))
}

pub fn accepted(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::ACCEPTED, data, Meta::new(None))
}

/// A page of a list: `data` is the array, `meta` says whether more follow.
pub fn page<T: Serialize>(items: Vec<T>, has_more: bool) -> HttpResponse {
    respond(StatusCode::OK, items, Meta::new(Some(has_more)))
}
