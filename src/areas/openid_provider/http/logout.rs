//! RP-Initiated Logout 1.0: a relying party sends the browser here to end
//! the user's sign-in on the hosted pages, and is sent back to one of its
//! registered post-logout URIs (exactly) with its `state`. With a valid
//! `id_token_hint` (one of this issuer's ID tokens, expired or not) the
//! sign-in ends at once; without one the user is asked first, so a link
//! from anywhere cannot sign them out.
use std::collections::BTreeMap;

use actix_web::{
    http::{header, StatusCode},
    web, HttpRequest, HttpResponse,
};
use url::Url;
use utoipa::{IntoParams, ToSchema};

use super::{
    browser::{cookie, origin_of, parameters, same_browser, set_cookie, shown, with_cookie, with_csrf, LOGIN_COOKIE},
    pages, scope_in_path,
};
use crate::{
    areas::{oauth_clients, openid_provider::authorize},
    error::ApiResult,
    http::body::Body,
    state::AppState,
    storage::{TenantConn, TenantScope},
    tokens::jwt,
};

/// A logout request (RP-Initiated Logout 1.0 section 2): the query of a
/// `GET`, or with `csrf` the form of the confirmation.
#[derive(IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // the document's description; read by hand (`browser::parameters`)
pub struct LogoutRequest {
    /// An ID token this issuer gave the client; without one the user is asked.
    id_token_hint: Option<String>,
    /// The client, when no hint names it.
    client_id: Option<String>,
    /// One of the client's post-logout redirect URIs, exactly.
    post_logout_redirect_uri: Option<String>,
    /// Given back unchanged.
    state: Option<String>,
}

/// The confirmation page's form: the logout request and its CSRF token.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description; read by hand (`browser::parameters`)
pub struct LogoutConfirmation {
    #[serde(flatten)]
    request: LogoutRequest,
    /// The page's CSRF token (the browser's cookie must match it).
    csrf: Option<String>,
}

/// End the user's sign-in on the hosted pages (OpenID Connect RP-Initiated
/// Logout): `id_token_hint`, `client_id`, `post_logout_redirect_uri` (one
/// of the client's, exactly) and `state`.
#[utoipa::path(get, path = "/v1/applications/{application_id}/oauth/logout", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."), LogoutRequest),
    responses((status = 200, description = "The confirmation page, or the signed-out page (HTML)", content_type = "text/html"),
        (status = 303, description = "Signed out: back to the client's post-logout redirect URI"),
        (status = 400, description = "A client or post-logout URI that does not match (HTML)", content_type = "text/html"),
        (status = 404, description = "No such application")))]
pub async fn logout(state: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let Some(given) = parameters(req.query_string().as_bytes()) else {
        return Ok(shown(&scope, StatusCode::BAD_REQUEST, "A parameter of the request is repeated or unreadable."));
    };
    let hinted = match given.get("id_token_hint") {
        Some(hint) => hint_client(&state, &scope, hint).await?,
        None => None,
    };
    let target = match destination(&scope, &given, hinted).await? {
        Ok(target) => target,
        Err(text) => return Ok(shown(&scope, StatusCode::BAD_REQUEST, text)),
    };
    if hinted.is_some() {
        return end(&state, &req, &scope, target).await;
    }
    let csrf = pages::random_value();
    let body = pages::confirm_sign_out(&scope.tenant().name, req.path(), &given, &csrf);
    let title = format!("Sign out of {}?", scope.tenant().name);
    let page = pages::Page {
        status: StatusCode::OK,
        title: &title,
        body,
        tenant: scope.tenant(),
        form_targets: &target.iter().map(|t| origin_of(&t.0)).collect::<Vec<_>>(),
    };
    Ok(with_csrf(&state, &scope, csrf, page))
}

/// The confirmation's submission: the request's parameters and the CSRF token.
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/logout", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = LogoutConfirmation, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Signed out (HTML)", content_type = "text/html"),
        (status = 303, description = "Signed out: back to the client's post-logout redirect URI"),
        (status = 400, description = "An unreadable form, or a client or URI that does not match (HTML)", content_type = "text/html"),
        (status = 403, description = "The form is not this browser's (CSRF) (HTML)", content_type = "text/html"),
        (status = 404, description = "No such application")))]
pub async fn logout_confirm(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let bytes = body.raw().await?;
    let Some(mut given) = parameters(&bytes) else {
        return Ok(shown(&scope, StatusCode::BAD_REQUEST, "The form is repeated or unreadable."));
    };
    if !same_browser(&req, &mut given) {
        return Ok(shown(
            &scope,
            StatusCode::FORBIDDEN,
            "This form has expired. Go back to the application and start again.",
        ));
    }
    let target = match destination(&scope, &given, None).await? {
        Ok(target) => target,
        Err(text) => return Ok(shown(&scope, StatusCode::BAD_REQUEST, text)),
    };
    end(&state, &req, &scope, target).await
}

/// The client an `id_token_hint` was issued to, when it is one of this
/// issuer's ID tokens.
async fn hint_client(state: &AppState, scope: &TenantScope, hint: &str) -> ApiResult<Option<uuid::Uuid>> {
    let Ok(parsed) = jwt::parse_id_token(hint) else { return Ok(None) };
    let Some(key) = state.tenants.verifying_key(scope, parsed.kid).await? else { return Ok(None) };
    Ok(parsed.id_token_hint(&key, &state.tokens.issuer(scope.tenant().id)).ok().map(|claims| claims.aud))
}

/// Where the browser goes afterwards: a registered post-logout URI of the
/// client (named by the hint or `client_id`, which must agree) with the
/// client's `state`, or nowhere (the signed-out page).
async fn destination(
    scope: &TenantScope,
    given: &BTreeMap<String, String>,
    hinted: Option<uuid::Uuid>,
) -> ApiResult<Result<Option<(String, Option<String>)>, &'static str>> {
    let Some(uri) = given.get("post_logout_redirect_uri") else { return Ok(Ok(None)) };
    let named = given.get("client_id").map(|id| uuid::Uuid::parse_str(id).ok());
    let client_id = match (hinted, named) {
        (Some(hinted), Some(Some(named))) if hinted != named => {
            return Ok(Err("The hint and the client do not agree."))
        }
        (Some(id), _) | (None, Some(Some(id))) => id,
        _ => return Ok(Err("The application that sent you here did not say who it is.")),
    };
    let client = scope.find_by_id::<entity::oauth_client::Entity>(client_id).one(scope.conn()).await?;
    let registered = client.is_some_and(|c| oauth_clients::settings_of(&c).post_logout_redirect_uris.contains(uri));
    if !registered {
        return Ok(Err("The application that sent you here gave an address it has not registered."));
    }
    Ok(Ok(Some((uri.clone(), given.get("state").cloned()))))
}

/// Ends the sign-in, forgets the cookie, and goes on.
async fn end(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    target: Option<(String, Option<String>)>,
) -> ApiResult<HttpResponse> {
    if let Some(value) = cookie(req, LOGIN_COOKIE) {
        authorize::sign_out(scope, &value).await?;
    }
    let forget = set_cookie(state, scope, LOGIN_COOKIE, "", 0, "Lax");
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "logout", "outcome" => "signed_out")
        .increment(1);
    let Some((uri, client_state)) = target else {
        return Ok(with_cookie(shown_signed_out(scope), &forget));
    };
    let mut url = Url::parse(&uri).expect("registered URIs parse");
    if let Some(client_state) = client_state {
        url.query_pairs_mut().append_pair("state", &client_state);
    }
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, url.as_str()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::SET_COOKIE, forget))
        .finish())
}

fn shown_signed_out(scope: &TenantScope) -> HttpResponse {
    let page = pages::Page {
        status: StatusCode::OK,
        title: "Signed out",
        body: pages::message("You are signed out", &format!("You are no longer signed in to {}.", scope.tenant().name)),
        tenant: scope.tenant(),
        form_targets: &[],
    };
    page.render()
}
