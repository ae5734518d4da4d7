//! The response envelope: `{success, data, error, meta}` (contract §2).
use actix_web::{http::StatusCode, HttpResponse};
use serde::Serialize;
use serde_json::{json, Value};

use super::request_id;
use crate::error::ApiError;

pub fn timestamp_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn meta(extra: Option<(bool, Option<u64>)>) -> Value {
    let mut meta = json!({"timestamp": timestamp_now(), "request_id": request_id::current()});
    if let Some((has_more, total)) = extra {
        meta["has_more"] = json!(has_more);
        if let Some(total) = total {
            meta["total"] = json!(total);
        }
    }
    meta
}

pub fn failure(err: &ApiError) -> Value {
    let mut error = json!({"code": err.code.as_str(), "message": err.message});
    if !err.details.is_empty() {
        error["details"] = json!(err.details);
    }
    json!({"success": false, "data": null, "error": error, "meta": meta(None)})
}

fn respond(status: StatusCode, data: impl Serialize, extra: Option<(bool, Option<u64>)>) -> HttpResponse {
    HttpResponse::build(status).json(json!({"success": true, "data": data, "error": null, "meta": meta(extra)}))
}

pub fn ok(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::OK, data, None)
}

pub fn created(data: impl Serialize) -> HttpResponse {
    respond(StatusCode::CREATED, data, None)
}

/// A page of a list: `data` is the array, `meta` says whether more follow.
pub fn page<T: Serialize>(items: Vec<T>, has_more: bool, total: Option<u64>) -> HttpResponse {
    respond(StatusCode::OK, items, Some((has_more, total)))
}
