//! Sending a request to a node of the region that holds its application
//! ([`to_peer`]), and answering what that node answered. The dispatch
//! middleware (`region::dispatch`) forwards a request whose application is
//! held elsewhere; inbound processor events carry no header, so their route
//! finds the application from the body and forwards with [`to_peer`] itself.
//!
//! A request is forwarded at most once. The node it reaches may find the
//! application in another region than the sender thought (one of the two
//! had not yet heard of a move): it answers [`Answer::HeldElsewhere`]
//! instead, so the sender can read its entry afresh and send the request on
//! itself.
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
/// Between nodes only: on the answer of a node that was forwarded a request
/// whose application it finds in a region it does not hold (that region).
const HELD_ELSEWHERE_HEADER: &str = "x-gatehouse-held-elsewhere";

/// What a peer answered a forwarded request.
pub enum Answer {
    /// The answer to give the client.
    Reply(HttpResponse),
    /// The peer finds the application in a region it does not hold: this
    /// node's entry, or the peer's, is older than a move.
    HeldElsewhere,
}

/// Whether another node forwarded this request here.
pub fn was_forwarded(req: &actix_web::HttpRequest) -> bool {
    req.headers().contains_key(FORWARDED_HEADER)
}

/// Reads the request's body with the body deadline of a request answered
/// here: a trickling client holds no connection open through the router
/// either.
pub async fn read_body(state: &AppState, req: &mut ServiceRequest) -> Result<web::Bytes, ApiError> {
    let deadline = std::time::Duration::from_secs(state.settings.server.body_timeout_seconds);
    Ok(crate::http::body::read_within(req.take_payload(), deadline).await?.freeze())
}

/// Sends a request, with the body already read, to a node of `region` and
/// answers what it answered. Also for routes that learn the region only
/// from the body (processor events name an account, not an application).
pub async fn to_peer(
    state: &AppState,
    req: &actix_web::HttpRequest,
    body: web::Bytes,
    region: Region,
) -> Result<HttpResponse, ApiError> {
    match ask_peer(state, req, body, region).await? {
        Answer::Reply(response) => Ok(response),
        Answer::HeldElsewhere => Err(unreachable(region)),
    }
}

/// [`to_peer`], telling apart a peer that holds the application elsewhere.
///
/// A request that was itself forwarded here is not sent on: it is answered
/// with where this node finds the application (for its sender to follow).
/// The region's nodes are tried in the route table's order. A node that
/// refuses the connection never saw the request, so the next one is tried
/// whatever the method; a node that fails after the request was sent is
/// passed over only for a request that is safe to repeat (GET, HEAD,
/// OPTIONS). Either way the client sees one answer.
pub async fn ask_peer(
    state: &AppState,
    req: &actix_web::HttpRequest,
    body: web::Bytes,
    region: Region,
) -> Result<Answer, ApiError> {
    if was_forwarded(req) {
        let mut held_elsewhere = actix_web::ResponseError::error_response(&unreachable(region));
        let value = header::HeaderValue::from_static(region.as_str());
        held_elsewhere.headers_mut().insert(header::HeaderName::from_static(HELD_ELSEWHERE_HEADER), value);
        return Ok(Answer::Reply(held_elsewhere));
    }
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).map_err(|_| unreachable(region))?;
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
                return Err(unreachable(region));
            }
        };
        if answer.headers().contains_key(HELD_ELSEWHERE_HEADER) {
            return Ok(Answer::HeldElsewhere);
        }
        return relay(answer, region).await.map(Answer::Reply).ok_or_else(|| unreachable(region));
    }
    Err(unreachable(region))
}

pub fn unreachable(region: Region) -> ApiError {
    ApiError::unavailable(format!("Region `{region}` is not reachable from this node."))
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
