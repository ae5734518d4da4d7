//! The audit log: list and export (operation 10). Both need `audit:read`.
use actix_web::{web, HttpResponse};

use crate::{
    area::Area,
    audit::query::{self, AuditFilter, AuditQuery, AuditRow},
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        envelope,
        query::{ListQuery, Query},
    },
};

pub const AREA: Area = Area {
    segments: &["audit-logs"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(list_audit_logs, export_audit_logs))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/audit-logs").route(web::get().to(list_audit_logs)))
        .service(web::resource("/audit-logs/export").route(web::get().to(export_audit_logs)));
}

/// List audit rows in `seq` order (limit 1 to 100, default 50).
#[utoipa::path(get, path = "/v1/audit-logs", tag = "audit", params(AuditQuery, ListQuery),
    responses((status = 200, body = [AuditRow]), (status = 422)), security(("secret_key" = ["audit:read"])))]
pub async fn list_audit_logs(key: SecretKey, query: Query<AuditQuery>) -> ApiResult<HttpResponse> {
    answer(&key, AuditFilter::parse(query.parsed()?, 50, 100)?).await
}

/// Export audit rows with their chain hashes for external ingestion
/// (limit 1 to 1000, default 100). Verifiable without database access.
#[utoipa::path(get, path = "/v1/audit-logs/export", tag = "audit", params(AuditQuery,
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 1000, description = "How many rows, 1 to 1000; default 100."),
        ("offset" = Option<i64>, Query, minimum = 0, maximum = 1_000_000_000, description = "How many rows to skip; default 0.")),
    responses((status = 200, body = [AuditRow]), (status = 422)), security(("secret_key" = ["audit:read"])))]
pub async fn export_audit_logs(key: SecretKey, query: Query<AuditQuery>) -> ApiResult<HttpResponse> {
    answer(&key, AuditFilter::parse(query.parsed()?, 100, 1000)?).await
}

async fn answer(key: &SecretKey, filter: AuditFilter) -> ApiResult<HttpResponse> {
    let (rows, has_more) = query::list(&key.scope, filter).await?;
    Ok(envelope::page(rows, has_more))
}
