//! Region dispatch at the edge: a request carrying `x-application-id` is
//! resolved to its application (a route without the header declares where
//! its requests name it: `routes::APPLICATION_ELSEWHERE`). If this node
//! holds the application's region the tenant is attached to the request;
//! otherwise the request is sent unchanged to a node of that region
//! (`region::forward`) and its answer returned; should that node find the
//! application elsewhere (this node's entry, or its own, older than a move)
//! both read their entries afresh from the catalog, and the request goes
//! where it says. While the application moves to another region its
//! requests are answered 503 `region_migration_in_progress` here, on every
//! node. The JWKS of an application held here is answered here too, before
//! routing ([`signing_keys::answer_jwks`]).
use std::sync::LazyLock;

use actix_web::{
    body::{EitherBody, MessageBody},
    dev::{Path, ResourceDef, ServiceRequest, ServiceResponse},
    middleware::Next,
    web, Error, HttpMessage, ResponseError,
};
use uuid::Uuid;

use super::forward::{self, Answer};
use crate::{application::Tenant, area::ApplicationFrom, routes::signing_keys, state::AppState};

pub const APPLICATION_HEADER: &str = "x-application-id";

/// The application id of a request: exactly one header holding a UUID, or,
/// for a route that carries no header, where the route declares it.
pub fn application_id(req: &actix_web::HttpRequest) -> Option<Uuid> {
    let mut values = req.headers().get_all(APPLICATION_HEADER);
    let Some(value) = values.next() else {
        return application_elsewhere(req);
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
    // A peer forwarded this here because its entry names a region this node
    // holds; if this node's entry says otherwise, one of the two is older
    // than a move, and the catalog decides.
    let tenant = match state.directory.resolve(id).await {
        Ok(Some(tenant)) if forward::was_forwarded(req.request()) && !state.storage.holds(tenant.region) => {
            state.directory.reload(id).await
        }
        resolved => resolved,
    };
    let tenant = match tenant {
        Ok(Some(tenant)) => tenant,
        // Unknown application: authentication answers 401 further in.
        Ok(None) => return Ok(next.call(req).await?.map_into_left_body()),
        Err(err) => return Ok(req.into_response(err.error_response()).map_into_right_body()),
    };
    if tenant.moving_to.is_some() || state.storage.holds(tenant.region) {
        return answer_here(&state, req, next, tenant).await;
    }
    let body = match forward::read_body(&state, &mut req).await {
        Ok(body) => body,
        Err(err) => return Ok(req.into_response(err.error_response()).map_into_right_body()),
    };
    // Boxed: inline, the proxy's state would make every request's future kilobytes larger.
    let response = match Box::pin(forward::ask_peer(&state, req.request(), body.clone(), tenant.region)).await {
        Ok(Answer::Reply(response)) => response,
        Err(err) => err.error_response(),
        // This node's entry is older than a move: read afresh, the request
        // goes where the catalog says.
        Ok(Answer::HeldElsewhere) => match state.directory.reload(id).await {
            Ok(Some(fresh)) if fresh.moving_to.is_some() || state.storage.holds(fresh.region) => {
                req.set_payload(body.into());
                return answer_here(&state, req, next, fresh).await;
            }
            Ok(Some(fresh)) if fresh.region != tenant.region => {
                let sent = Box::pin(forward::to_peer(&state, req.request(), body, fresh.region)).await;
                sent.unwrap_or_else(|err| err.error_response())
            }
            _ => forward::unreachable(tenant.region).error_response(),
        },
    };
    Ok(req.into_response(response).map_into_right_body())
}

/// Answers a request whose application this node holds, or that is moving
/// (503 `region_migration_in_progress` on every node).
async fn answer_here<B: MessageBody + 'static>(
    state: &AppState,
    req: ServiceRequest,
    next: Next<B>,
    tenant: Tenant,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
    if tenant.moving_to.is_some() {
        let held = super::moves::in_progress().error_response();
        return Ok(req.into_response(held).map_into_right_body());
    }
    if let Some(document) = signing_keys::answer_jwks(state, req.request(), &tenant).await {
        return Ok(req.into_response(document).map_into_right_body());
    }
    req.extensions_mut().insert(tenant);
    Ok(next.call(req).await?.map_into_left_body())
}

/// The application a header-less request names, where its route declares
/// it (`routes::APPLICATION_ELSEWHERE`).
fn application_elsewhere(req: &actix_web::HttpRequest) -> Option<Uuid> {
    static DECLARED: LazyLock<Vec<(ResourceDef, &ApplicationFrom)>> = LazyLock::new(|| {
        let declared = crate::routes::APPLICATION_ELSEWHERE.iter().flat_map(|routes| routes.iter());
        declared.map(|route| (ResourceDef::new(route.route), &route.from)).collect()
    });
    let mut path = Path::new(req.path());
    let (_, from) = DECLARED.iter().find(|(route, _)| route.capture_match_info(&mut path))?;
    let query = |name: &str| {
        url::form_urlencoded::parse(req.query_string().as_bytes()).find(|(key, _)| key == name).map(|(_, v)| v)
    };
    match from {
        ApplicationFrom::Path => Uuid::try_parse(path.get("application_id")?).ok(),
        ApplicationFrom::Query(name) => Uuid::try_parse(&query(name)?).ok(),
        ApplicationFrom::QueryRead(name, read) => read(&query(name)?),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn a_request_names_its_application_by_header_or_where_its_route_declares() {
        let id = Uuid::new_v4();
        let of = |req: TestRequest| application_id(&req.to_http_request());
        let header = TestRequest::get().uri("/v1/users").insert_header((APPLICATION_HEADER, id.to_string()));
        assert_eq!(of(header), Some(id));
        for path in [
            format!("/v1/applications/{id}/.well-known/jwks.json"),
            format!("/v1/applications/{id}/.well-known/openid-configuration"),
            format!("/v1/applications/{id}/oauth/token"),
            format!("/v1/auth/oauth/google/start?redirect_uri=x&application_id={id}"),
        ] {
            assert_eq!(of(TestRequest::get().uri(&path)), Some(id), "{path}");
        }
        for path in [
            format!("/v1/applications/{id}/signing-keys/rotate"),
            format!("/v1/applications/{id}/.well-known/other"),
            format!("/v1/users/{id}"),
            "/v1/applications/not-a-uuid/oauth/token".to_string(),
            "/v1/auth/oauth/google/start?application_id=nope".to_string(),
            "/v1/auth/oauth/google/callback?state=forged".to_string(),
        ] {
            assert_eq!(of(TestRequest::get().uri(&path)), None, "{path}");
        }
        let twice = TestRequest::get()
            .uri("/v1/users")
            .insert_header((APPLICATION_HEADER, id.to_string()))
            .append_header((APPLICATION_HEADER, id.to_string()));
        assert_eq!(of(twice), None, "two headers name no one application");
    }
}
