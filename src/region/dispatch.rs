//! Region dispatch at the edge: a request carrying `x-application-id` is
//! resolved to its application; if this node holds the application's region
//! the tenant is attached to the request, otherwise the request is sent
//! unchanged to `node.peers.<region>` and the peer's answer returned. While
//! the application moves to another region its requests are answered 503
//! `region_migration_in_progress` here, on every node. The JWKS of an
//! application held here is answered here too, before routing
//! ([`signing_keys::answer_jwks`]). Sending to the peer is `region::forward`.
use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    web, Error, HttpMessage, ResponseError,
};
use uuid::Uuid;

use super::forward::forward;
use crate::{routes::signing_keys, state::AppState};

pub const APPLICATION_HEADER: &str = "x-application-id";

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
        _ => crate::areas::provider_sign_in::application_of_state(&value),
    }
}
