//! Sending a request to a node of the region that holds its application
//! ([`to_peer`]), and answering what that node answered. The dispatch
//! middleware (`region::dispatch`) forwards a request whose application is
//! held elsewhere; inbound processor events carry no header, so their route
//! finds the application from the body and forwards with [`to_peer`] itself.
use actix_web::{
    dev::ServiceRequest,
    http::{header, Method, StatusCode},
    web, HttpMessage, HttpResponse,
};

use crate::{error::ApiError, region::Region, state::AppState};

/// Marks a request already forwarded once, so two misconfigured nodes cannot
/// bounce it between them.
const FORWARDED_HEADER: &str = "x-gatehouse-forwarded";
/// Tells the caller which region's node answered a forwarded request.
pub const SERVED_BY_HEADER: &str = "x-gatehouse-region";

/// Reads the request's body (with the body deadline of a request answered
/// here) and sends the request to `region`'s node.
pub async fn forward(state: &AppState, req: &mut ServiceRequest, region: Region) -> Result<HttpResponse, ApiError> {
    // The same limit and deadline as a body read here: a trickling client
    // holds no connection open through the router either.
    let deadline = std::time::Duration::from_secs(state.settings.server.body_timeout_seconds);
    let body = crate::http::body::read_within(req.take_payload(), deadline).await?;
    to_peer(state, req.request(), body.freeze(), region).await
}

/// Sends a request, with the body already read, to a node of `region` and
/// answers what it answered. Also for routes that learn the region only
/// from the body (processor events name an account, not an application).
///
/// The region's nodes are tried in the route table's order. A node that
/// refuses the connection never saw the request, so the next one is tried
/// whatever the method; a node that fails after the request was sent is
/// passed over only for a request that is safe to repeat (GET, HEAD,
/// OPTIONS). Either way the client sees one answer.
pub async fn to_peer(
    state: &AppState,
    req: &actix_web::HttpRequest,
    body: web::Bytes,
    region: Region,
) -> Result<HttpResponse, ApiError> {
    let unavailable = || ApiError::unavailable(format!("Region `{region}` is not reachable from this node."));
    if req.headers().contains_key(FORWARDED_HEADER) {
        return Err(unavailable());
    }
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).map_err(|_| unavailable())?;
    let routes = state.directory.routes();
    let repeatable = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    for node in routes.targets(region) {
        let answer = match send(state, req, method.clone(), body.clone(), &node).await {
            Ok(answer) => answer,
            Err(err) if err.is_connect() || (repeatable && !err.is_timeout()) => {
                tracing::warn!(error = %err, %node, %region, "a peer failed before answering; trying the next");
                metrics::counter!("gatehouse_forward_retries_total", "region" => region.as_str()).increment(1);
                routes.unreachable(&node);
                continue;
            }
            Err(err) => {
                tracing::warn!(error = %err, %node, %region, "forwarding to a peer failed");
                return Err(unavailable());
            }
        };
        return relay(answer, region).await.ok_or_else(unavailable);
    }
    Err(unavailable())
}

async fn send(
    state: &AppState,
    req: &actix_web::HttpRequest,
    method: reqwest::Method,
    body: web::Bytes,
    node: &str,
) -> reqwest::Result<reqwest::Response> {
    let path = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut outgoing = state.http.request(method, format!("{node}{path}"));
    for (name, value) in req.headers() {
        if !is_hop_by_hop(name.as_str()) {
            outgoing = outgoing.header(name.as_str(), value.as_bytes());
        }
    }
    outgoing.header(FORWARDED_HEADER, "1").body(body).send().await
}

/// The peer's answer as this node's; `None` if its body did not arrive.
async fn relay(answer: reqwest::Response, region: Region) -> Option<HttpResponse> {
    let mut response = HttpResponse::build(StatusCode::from_u16(answer.status().as_u16()).ok()?);
    for (name, value) in answer.headers() {
        if !is_hop_by_hop(name.as_str()) && name.as_str() != "content-length" {
            response.append_header((name.as_str(), value.as_bytes()));
        }
    }
    response.insert_header((SERVED_BY_HEADER, region.as_str()));
    let bytes = answer.bytes().await.ok()?;
    Some(response.body(bytes))
}

fn is_hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection" | "keep-alive" | "proxy-connection" | "te" | "trailer" | "transfer-encoding" | "upgrade" | "host"
    ) || name == header::CONTENT_LENGTH.as_str()
}
