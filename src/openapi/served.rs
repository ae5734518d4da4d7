//! Serving the document: it is built once at start (with the deployment's
//! regions, [`super::for_deployment`]) and answered as the same bytes.
use actix_web::{web, web::Bytes, HttpResponse};

pub struct Served(Bytes);

impl Served {
    pub fn new(document: &serde_json::Value) -> Served {
        Served(Bytes::from(document.to_string()))
    }
}

/// This document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "operations", responses((status = 200, content_type = "application/json")))]
pub async fn document(served: web::Data<Served>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(served.0.clone())
}
