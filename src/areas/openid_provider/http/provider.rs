//! Sign-in with an identity provider from the hosted pages: a button per
//! provider the application has enabled. The button's form sends the
//! browser to the provider through the API's own provider sign-in, which
//! brings it back to this endpoint (`from_provider` in the query) with its
//! one-time code. That code is exchanged with the PKCE verifier this
//! browser was given in a cookie when it left, so a code another browser
//! started (a login CSRF) is refused. Then on as after a password.
use actix_web::{
    http::{header, StatusCode},
    HttpRequest, HttpResponse,
};
use std::collections::BTreeMap;

use super::{
    browser::{cookie, set_cookie, shown},
    next::Next,
};
use crate::{
    areas::{
        auth::SignedIn,
        openid_provider::authorize::{self, Checked},
        provider_sign_in::{self, exchange::exchange, start::start_from_hosted_pages, ProviderSignInError},
    },
    auth::public::{client_ip, limit, session_ttl},
    error::ApiResult,
    oauth,
    state::AppState,
    storage::TenantScope,
};

/// The cookie that keeps the PKCE verifier while the browser is at the provider.
const PROVIDER_COOKIE: &str = "gh_provider";
/// The parameter that marks the browser's return, naming the provider.
const RETURN_MARK: &str = "from_provider";

/// The providers a user can sign in with, and where each one's button
/// sends the browser (for the page's `form-action`).
pub(super) async fn enabled(state: &AppState, scope: &TenantScope) -> ApiResult<Vec<(&'static str, String)>> {
    let tenant = state.tenants.state(scope).await?;
    Ok(provider_sign_in::enabled(&tenant, &state.provider_sign_in()))
}

/// A button was pressed: to the provider, the verifier in a cookie.
pub(super) async fn leave(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    provider: &str,
) -> ApiResult<HttpResponse> {
    let per_ip = state.settings.rate_limits.sign_in_per_ip_per_minute;
    if let Err(err) =
        limit(state, req, format!("oauth_start:ip:{}:{}", scope.tenant().id, client_ip(req)), per_ip).await
    {
        return super::browser::too_many(scope, err);
    }
    let verifier = oauth::random_token(32);
    let mut return_to =
        url::Url::parse(&format!("{}{}", state.settings.public_url().trim_end_matches('/'), req.path()))
            .expect("the public URL and a request path make a URL");
    return_to.query_pairs_mut().extend_pairs(&checked.parameters).append_pair(RETURN_MARK, provider);
    let deps = state.provider_sign_in();
    let challenge = oauth::pkce_challenge(&verifier);
    let location = match start_from_hosted_pages(scope, &deps, provider, return_to.into(), challenge).await {
        Ok(location) => location,
        Err(ProviderSignInError::NotEnabled(_)) => {
            return Ok(shown(scope, StatusCode::NOT_FOUND, "This sign-in method is not available."))
        }
        Err(err) => return Err(err.into()),
    };
    let ttl = provider_sign_in::STATE_TTL_SECONDS;
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::SET_COOKIE, set_cookie(state, scope, PROVIDER_COOKIE, &verifier, ttl, "Lax")))
        .finish())
}

/// Whether the request is the browser's return from a provider.
pub(super) fn is_return(given: &BTreeMap<String, String>) -> bool {
    given.contains_key(RETURN_MARK)
}

/// Back from the provider: its one-time code exchanged with this
/// browser's verifier, or the sign-in page saying it did not work.
pub(super) async fn returned(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    given: &BTreeMap<String, String>,
) -> ApiResult<Next> {
    let checked = match authorize::check(scope, given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Next::Refused(refused)),
    };
    let login_hint = checked.login_hint.clone().unwrap_or_default();
    let failed = |checked| Ok(Next::SignIn(Box::new(checked), login_hint.clone(), NOT_SIGNED_IN));
    let (Some(code), Some(verifier)) = (given.get("code"), cookie(req, PROVIDER_COOKIE)) else {
        return failed(checked);
    };
    match exchange(scope, &state.issuer(), code, Some(&verifier), session_ttl(state)).await {
        Ok(signed_in) => {
            // Back from an organization's SSO connection, or a provider: as
            // the session says (an SSO sign-in's carries its `amr`), never
            // as the returning URL does, which the browser can change.
            let sso = matches!(&signed_in, SignedIn::Session(_, _, opened) if opened.session.amr.is_some());
            let method = if sso { "sso" } else { "oauth" };
            Ok(Next::FirstFactor(Box::new(checked), Box::new(signed_in), method))
        }
        Err(ProviderSignInError::InvalidGrant) => failed(checked),
        Err(err) => Err(err.into()),
    }
}

const NOT_SIGNED_IN: &str =
    "The sign-in with your identity provider did not complete, or was started in another browser. Try again.";
