//! Operations routes: liveness, readiness, metrics. No credentials, no envelope.
use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde_json::{json, Map, Value};

use crate::{state::AppState, telemetry};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/healthz").route(web::get().to(healthz)))
        .service(web::resource("/readyz").route(web::get().to(readyz)))
        .service(web::resource("/metrics").route(web::get().to(metrics)));
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Every database this node holds answers: 200 `ready`. A held database
/// down: 503 naming it. Redis down alone (it does not answer, or the
/// invalidation bus lost its subscription): 200 `degraded` naming `redis`,
/// since the node still serves correctly on its own caches' TTLs. A node
/// stopping (it left the route table on SIGTERM): 503 `leaving`, so a load
/// balancer takes it out too while it finishes what it holds.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses((status = 200), (status = 503)))]
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    const WAIT: Duration = Duration::from_secs(2);
    if state.directory.is_leaving() {
        let body = json!({"status": "leaving", "checks": {}, "failing": ["node"], "degraded": []});
        return HttpResponse::ServiceUnavailable().insert_header(("Retry-After", "1")).json(body);
    }
    let mut checks = Map::new();
    for db in state.storage.all() {
        let ok = matches!(tokio::time::timeout(WAIT, db.conn.ping()).await, Ok(Ok(())));
        checks.insert(format!("database:{}", db.label), json!(if ok { "ok" } else { "unavailable" }));
    }
    let failing: Vec<String> = checks.iter().filter(|(_, v)| *v != "ok").map(|(k, _)| k.clone()).collect();
    let mut degraded = Vec::new();
    if let Some(redis) = &state.redis {
        let ping = async {
            let mut conn = redis.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await
        };
        let ok = matches!(tokio::time::timeout(WAIT, ping).await, Ok(Ok(_))) && state.bus.connected() != Some(false);
        checks.insert("redis".to_string(), json!(if ok { "ok" } else { "unavailable" }));
        if !ok {
            degraded.push("redis".to_string());
        }
    }
    let status = match (failing.is_empty(), degraded.is_empty()) {
        (false, _) => "unavailable",
        (true, false) => "degraded",
        (true, true) => "ready",
    };
    let body = json!({"status": status, "checks": Value::Object(checks), "failing": failing, "degraded": degraded});
    if failing.is_empty() {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().insert_header(("Retry-After", "1")).json(body)
    }
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, content_type = "text/plain")))]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let mut text = state.metrics.render();
    text.push_str(&telemetry::process::exposition());
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(text)
}
