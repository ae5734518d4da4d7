//! What every hosted page does with the browser: the request's
//! parameters, the cookies (the sign-in and the CSRF token), the CSRF
//! check, and the pages that only say something.
use std::collections::BTreeMap;

use actix_web::{
    http::{header, StatusCode},
    HttpRequest, HttpResponse,
};
use url::Url;

use super::pages;
use crate::{
    areas::openid_provider::authorize::Checked,
    crypto::constant_time_eq,
    error::{ApiResult, Code},
    state::AppState,
    storage::TenantScope,
};

pub(super) const LOGIN_COOKIE: &str = "gh_login";
pub(super) const CSRF_COOKIE: &str = "gh_csrf";

/// The query or form's parameters, each once (RFC 6749 section 3.1).
pub(super) fn parameters(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let mut given = BTreeMap::new();
    for (name, value) in url::form_urlencoded::parse(bytes).into_owned() {
        if given.insert(name, value).is_some() {
            return None;
        }
    }
    Some(given)
}

/// The value of a cookie the browser sent.
pub(super) fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    let headers = req.headers().get_all(header::COOKIE).filter_map(|v| v.to_str().ok());
    headers.flat_map(|v| v.split(';')).find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then(|| value.to_string())
    })
}

/// A cookie for the application's OAuth pages only: http-only, and
/// `Secure` when the service is reached over https.
pub(super) fn set_cookie(
    state: &AppState,
    scope: &TenantScope,
    name: &str,
    value: &str,
    max_age: i64,
    same_site: &str,
) -> String {
    let secure = if state.settings.public_url().starts_with("https://") { "; Secure" } else { "" };
    let path = format!("/v1/applications/{}/oauth", scope.tenant().id);
    format!("{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}")
}

/// The origin a redirect URI's browser lands on, for `form-action`.
pub(super) fn origin_of(uri: &str) -> String {
    match Url::parse(uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.origin().ascii_serialization(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => "'none'".into(),
    }
}

/// A page of an authorization request's flow with a form: `body` gets the
/// CSRF token made here (set as the cookie its submission must carry
/// back), and the form may send the browser on to the client's redirect
/// origin only.
pub(super) fn form_page(
    state: &AppState,
    scope: &TenantScope,
    checked: &Checked,
    heading: (&str, StatusCode),
    body: impl FnOnce(&str) -> String,
) -> HttpResponse {
    form_page_with_script(state, scope, checked, heading, None, body)
}

/// [`form_page`], with one inline script under the page's nonce (the
/// passkey page's).
pub(super) fn form_page_with_script(
    state: &AppState,
    scope: &TenantScope,
    checked: &Checked,
    (title, status): (&str, StatusCode),
    script: Option<&str>,
    body: impl FnOnce(&str) -> String,
) -> HttpResponse {
    let csrf = pages::random_value();
    let page = pages::Page {
        status,
        title,
        body: body(&csrf),
        tenant: scope.tenant(),
        form_targets: &[origin_of(&checked.redirect_uri)],
    };
    let rendered = match script {
        Some(script) => page.render_with_script(script),
        None => page.render(),
    };
    with_cookie(rendered, &csrf_cookie(state, scope, &csrf))
}

/// A page with a form, and the CSRF cookie its submission must carry back.
pub(super) fn with_csrf(state: &AppState, scope: &TenantScope, csrf: String, page: pages::Page<'_>) -> HttpResponse {
    with_cookie(page.render(), &csrf_cookie(state, scope, &csrf))
}

fn csrf_cookie(state: &AppState, scope: &TenantScope, csrf: &str) -> String {
    set_cookie(state, scope, CSRF_COOKIE, csrf, 3600, "Strict")
}

/// `response` with one more `Set-Cookie`.
pub(super) fn with_cookie(mut response: HttpResponse, cookie: &str) -> HttpResponse {
    if let Ok(value) = header::HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Whether a form came from a page this browser was given: its `csrf`
/// field (taken out of the form) equals the `gh_csrf` cookie.
pub(super) fn same_browser(req: &HttpRequest, form: &mut BTreeMap<String, String>) -> bool {
    let csrf = form.remove("csrf").unwrap_or_default();
    cookie(req, CSRF_COOKIE).is_some_and(|c| !csrf.is_empty() && constant_time_eq(c.as_bytes(), csrf.as_bytes()))
}

pub(super) fn shown(scope: &TenantScope, status: StatusCode, text: &str) -> HttpResponse {
    let page = pages::Page {
        status,
        title: "Sign-in",
        body: pages::message("This sign-in cannot go on", text),
        tenant: scope.tenant(),
        form_targets: &[],
    };
    page.render()
}

pub(super) fn too_many(scope: &TenantScope, err: crate::error::ApiError) -> ApiResult<HttpResponse> {
    if err.code != Code::RateLimited {
        return Err(err);
    }
    Ok(shown(scope, StatusCode::TOO_MANY_REQUESTS, "Too many attempts. Wait a minute, then try again."))
}
