//! Region routing at the edge: a request carrying `x-application-id` is
//! resolved to its application; if this node holds the application's region
//! the tenant is attached to the request, otherwise the request is sent
//! unchanged to `node.peers.<region>` and the peer's answer returned. While
//! the application moves to another region its requests are answered 503
//! `region_migration_in_progress` here, on every node. The JWKS of an
//! application held here is answered here too, before routing
//! ([`signing_keys::answer_jwks`]).
//! Inbound processor events carry no header: their route finds the
//! application from the body and forwards with [`to_peer`] itself.
use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{header, StatusCode},
    middleware::Next,
    web, Error, HttpMessage, HttpResponse, ResponseError,
};
use uuid::Uuid;

use crate::{error::ApiError, region::Region, routes::signing_keys, state::AppState};

pub const APPLICATION_HEADER: &str = "x-application-id";
/// Marks a request already forwarded once, so two misconfigured nodes cannot
/// bounce it between them.
const FORWARDED_HEADER: &str = "x-gatehouse-forwarded";
/// Tells the caller which region's node answered a forwarded request.
pub const SERVED_BY_HEADER: &str = "x-gatehouse-region";

/// The application id of a request: exactly one header holding a UUID, or,
/// for the public documents that carry no header, the id in their path.
pub fn application_id(req: &actix_web::HttpRequest) -> Option<Uuid> {
    let mut values = req.headers().get_all(APPLICATION_HEADER);
    let Some(value) = values.next() else {
        return application_in_path(req.path()).or_else(|| provider_sign_in_application(req));
    };
    if values.next().is_some() {
        return None;
    }
    Uuid::parse_str(value.to_str().ok()?).ok()
}

pub async fn middleware<B: MessageBody + 'static>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
    let Some(id) = application_id(req.request()) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let state = req.app_data::<web::Data<AppState>>().expect("AppState is registered").clone();
    let tenant = match state.directory.resolve(id).await {
        Ok(Some(tenant)) => tenant,
        // Unknown application: authentication answers 401 further in.
        Ok(None) => return Ok(next.call(req).await?.map_into_left_body()),
        Err(err) => return Ok(req.into_response(err.error_response()).map_into_right_body()),
    };
    if tenant.moving_to.is_some() {
        let held = super::moves::in_progress().error_response();
        return Ok(req.into_response(held).map_into_right_body());
    }
    if state.storage.holds(tenant.region) {
        if let Some(document) = signing_keys::answer_jwks(&state, req.request(), &tenant).await {
            return Ok(req.into_response(document).map_into_right_body());
        }
        req.extensions_mut().insert(tenant);
        return Ok(next.call(req).await?.map_into_left_body());
    }
    // Boxed: inline, the proxy's state would make every request's future kilobytes larger.
    let response = match Box::pin(forward(&state, &mut req, tenant.region)).await {
        Ok(response) => response,
        Err(err) => err.error_response(),
    };
    Ok(req.into_response(response).map_into_right_body())
}

/// `/v1/applications/{id}/.well-known/…` and the issuer's token endpoint
/// `/v1/applications/{id}/oauth/token`: standard documents and clients
/// that send no header.
fn application_in_path(path: &str) -> Option<Uuid> {
    let (id, rest) = path.strip_prefix("/v1/applications/")?.split_once('/')?;
    (rest.starts_with(".well-known/") || rest == "oauth/token").then(|| Uuid::parse_str(id).ok()).flatten()
}

/// A browser's sign-in with a provider carries no header: its start names
/// the application in the query (`application_id`), its callback in the
/// `state` the start made.
fn provider_sign_in_application(req: &actix_web::HttpRequest) -> Option<Uuid> {
    let step = req.path().strip_prefix("/v1/auth/oauth/")?.split_once('/')?.1;
    let wanted = match step {
        "start" => "application_id",
        "callback" => "state",
        _ => return None,
    };
    let value = url::form_urlencoded::parse(req.query_string().as_bytes()).find(|(name, _)| name == wanted)?.1;
    match step {
        "start" => Uuid::try_parse(&value).ok(),
        _ => crate::service::provider_sign_in::application_of_state(&value),
    }
}

async fn forward(state: &AppState, req: &mut ServiceRequest, region: Region) -> Result<HttpResponse, ApiError> {
    // The same limit and deadline as a body read here: a trickling client
    // holds no connection open through the router either.
    let deadline = std::time::Duration::from_secs(state.settings.server.body_timeout_seconds);
    let body = crate::http::body::read_within(req.take_payload(), deadline).await?;
    to_peer(state, req.request(), body.freeze(), region).await
}

/// Sends a request, with the body already read, to the node of `region`
/// and answers what it answered. Also for routes that learn the region only
/// from the body (processor events name an account, not an application).
pub async fn to_peer(
    state: &AppState,
    req: &actix_web::HttpRequest,
    body: web::Bytes,
    region: Region,
) -> Result<HttpResponse, ApiError> {
    let unavailable = || ApiError::unavailable(format!("Region `{region}` is not reachable from this node."));
    let peer = state.settings.peer(region).ok_or_else(unavailable)?;
    if req.headers().contains_key(FORWARDED_HEADER) {
        return Err(unavailable());
    }
    let path = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).map_err(|_| unavailable())?;
    let mut outgoing = state.http.request(method, format!("{}{path}", peer.trim_end_matches('/')));
    for (name, value) in req.headers() {
        if !is_hop_by_hop(name.as_str()) {
            outgoing = outgoing.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = outgoing.header(FORWARDED_HEADER, "1").body(body).send().await.map_err(|e| {
        tracing::warn!(error = %e, %region, "forwarding to peer failed");
        unavailable()
    })?;
    let mut response = HttpResponse::build(StatusCode::from_u16(answer.status().as_u16()).map_err(|_| unavailable())?);
    for (name, value) in answer.headers() {
        if !is_hop_by_hop(name.as_str()) && name.as_str() != "content-length" {
            response.append_header((name.as_str(), value.as_bytes()));
        }
    }
    response.insert_header((SERVED_BY_HEADER, region.as_str()));
    let bytes = answer.bytes().await.map_err(|_| unavailable())?;
    Ok(response.body(bytes))
}

fn is_hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection" | "keep-alive" | "proxy-connection" | "te" | "trailer" | "transfer-encoding" | "upgrade" | "host"
    ) || name == header::CONTENT_LENGTH.as_str()
}
