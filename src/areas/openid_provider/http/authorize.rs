//! The authorization endpoint (RFC 6749 section 4.1, OIDC Core section
//! 3.1.2) and its hosted pages. A browser arrives with the client's
//! request; a user signed in here before (the `gh_login` cookie, while its
//! session lives) goes straight back with a code, anyone else gets the
//! sign-in form. Its submission signs in through the API's own sign-in (the
//! same rate limits, the same answer for a wrong password and an unknown
//! email), then asks for the user's second factor if they have one, then
//! for consent if the client is a third party's, and goes back with a code.
//! Every form posts to this same endpoint, with the request's parameters
//! and a CSRF token riding along.
//!
//! Every answer to the client carries RFC 9207's `iss`. An unknown client
//! or redirect URI is shown, never redirected to.
use std::collections::BTreeMap;

use actix_web::{
    http::{header, StatusCode},
    web, HttpRequest, HttpResponse,
};
use entity::{membership, organization, session};
use url::Url;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    browser::{
        cookie, form_page, origin_of, parameters, same_browser, set_cookie, shown, too_many, with_cookie, with_csrf,
        LOGIN_COOKIE,
    },
    next::Next,
    pages, passkey, password_reset, provider, scope_in_path, sign_up,
};
use crate::{
    areas::{
        auth::{self, AuthError, SignedIn},
        oauth_clients::consents,
        openid_provider::authorize::{self, Checked, Login, OrganizationChoice, Redirect, Refused},
        second_factors::{self, challenges, Proof, SecondFactorError},
        sso_connections, users,
    },
    audit::Actor,
    auth::public::{limit, limit_sign_ins_per_ip, session_ttl},
    error::ApiResult,
    http::body::Body,
    state::AppState,
    storage::{TenantScope, Unaudited},
};

/// An authorization request (RFC 6749 section 4.1.1, OIDC Core section
/// 3.1.2.1): the query of a `GET`, or the form of a `POST`, where it rides
/// along on every hosted page's form.
#[derive(IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // the document's description; read by hand (`browser::parameters`)
pub struct AuthorizationRequest {
    /// `code`
    response_type: Option<String>,
    /// The OAuth client's id.
    client_id: Option<String>,
    /// One of the client's redirect URIs, exactly.
    redirect_uri: Option<String>,
    /// Space-separated; each one of the client's.
    scope: Option<String>,
    /// Given back unchanged.
    state: Option<String>,
    /// Put in the ID token.
    nonce: Option<String>,
    /// PKCE S256 challenge; required of public clients.
    code_challenge: Option<String>,
    /// `S256`
    code_challenge_method: Option<String>,
    /// `none`, `login`, `consent`, `select_account`, `create` (the sign-up form)
    prompt: Option<String>,
    /// Seconds since the user last signed in here, at most.
    max_age: Option<String>,
    /// The email to fill in.
    login_hint: Option<String>,
    /// `aal2`: a sign-in that proved a second factor, when the user has one.
    acr_values: Option<String>,
    /// With the `organization` scope: the id of the user's organization to
    /// carry (else the user chooses when in several).
    organization: Option<String>,
}

/// A hosted page's form: the authorization request again, the CSRF token,
/// and the fields of the step it submits. A sign-up's profile fields are
/// `profile.<key>`.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's description; read by hand (`browser::parameters`)
pub struct AuthorizePageForm {
    #[serde(flatten)]
    request: AuthorizationRequest,
    /// The page's CSRF token (the browser's cookie must match it).
    csrf: Option<String>,
    /// Sign-in, sign-up, or a password reset's `send`.
    email: Option<String>,
    /// Sign-in, sign-up, or a password reset's `reset`.
    password: Option<String>,
    /// Present: the sign-up form's submission.
    sign_up: Option<String>,
    /// Present, with `email_code`: the emailed code after a sign-up.
    verify_email: Option<String>,
    /// The code a verification email carries.
    email_code: Option<String>,
    /// `ask`, `send` (with `email`) or `reset` (with `reset_code` and `password`).
    forgot_password: Option<String>,
    /// The code a password-reset email carries.
    reset_code: Option<String>,
    /// The sign-in's second-factor challenge, with `code` (or a passkey).
    mfa_challenge: Option<String>,
    /// A TOTP code or a recovery code.
    code: Option<String>,
    /// `sign_in`, `second_step` or `assert` (with `passkey_ceremony` and `passkey_credential`).
    passkey: Option<String>,
    /// The ceremony an options call answered.
    passkey_ceremony: Option<String>,
    /// The authenticator's credential (JSON).
    passkey_credential: Option<String>,
    /// An identity provider to sign in with.
    sign_in_with: Option<String>,
    /// Present, with `organization`: the organization chosen.
    choose_organization: Option<String>,
    /// `allow` or `deny`.
    consent: Option<String>,
}

/// Sign in and authorize the client: answers the sign-in page, or sends
/// the browser back to the client with a code or an error.
#[utoipa::path(get, path = "/v1/applications/{application_id}/oauth/authorize", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id."), AuthorizationRequest),
    responses((status = 200, description = "The sign-in page (HTML)", content_type = "text/html"),
        (status = 303, description = "Back to the client's redirect URI with `code` or `error`, `state` and `iss`"),
        (status = 400, description = "An unknown client or redirect URI (HTML, never redirected)", content_type = "text/html"),
        (status = 404, description = "No such application")))]
pub async fn authorize(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let scope = scope_in_path(&state, &req, &path).await?;
    let Some(given) = parameters(req.query_string().as_bytes()) else {
        return Ok(shown(&scope, StatusCode::BAD_REQUEST, "A parameter of the request is repeated or unreadable."));
    };
    if provider::is_return(&given) {
        let next = provider::returned(&state, &req, &scope, &given).await?;
        return onward(&state, &req, &scope, next).await;
    }
    start(&state, &req, &scope, &given).await
}

/// An authorization request, by `GET` or (OIDC Core section 3.1.2.1) by a
/// `POST` of the same parameters: a code for a user signed in here, or the
/// sign-in page.
async fn start(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    given: &BTreeMap<String, String>,
) -> ApiResult<HttpResponse> {
    let checked = match authorize::check(scope, given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(refusal(state, scope, refused)),
    };
    if checked.prompt.create {
        let email = checked.login_hint.as_deref().unwrap_or_default();
        return sign_up::page(state, scope, req, &checked, (email, &BTreeMap::new()), None).await;
    }
    let login = match cookie(req, LOGIN_COOKIE).filter(|_| !checked.prompt.login) {
        Some(value) => authorize::signed_in(scope, &value, checked.max_age).await?,
        None => None,
    };
    // `acr_values=aal2` and a sign-in without a second factor: sign in again
    // (a user who has one proves it; one who has none gets `acr: aal1`, for
    // the client to judge).
    let login = login.filter(|login| !checked.wants_aal2 || login.session.aal == "aal2");
    match login {
        Some(login) => go_on(state, req, scope, &checked, &login, false).await,
        None if checked.prompt.none => {
            Ok(back_with_error(state, scope, checked.error("login_required", "the user is not signed in")))
        }
        None => {
            sign_in_page(state, scope, req, &checked, checked.login_hint.as_deref().unwrap_or_default(), None).await
        }
    }
}

/// A hosted page's form: the request's parameters again and the CSRF
/// token, with `email` and `password` (sign-in), `sign_up` with `email`,
/// `password` and `profile.<key>` (sign-up), `verify_email` and
/// `email_code` (the emailed code after a sign-up), `forgot_password`
/// (`ask`; `send` with `email`; `reset` with `reset_code` and `password`),
/// `mfa_challenge` and `code` (the second factor), `passkey` (`sign_in`;
/// `second_step` with `mfa_challenge`; `assert` with `passkey_ceremony`,
/// `passkey_credential` and maybe `mfa_challenge`), `sign_in_with` (an
/// identity provider), `choose_organization` with `organization`, or
/// `consent` (`allow` or `deny`).
#[utoipa::path(post, path = "/v1/applications/{application_id}/oauth/authorize", tag = "tokens",
    extensions(("x-gatehouse-caller" = json!("browser"))),
    params(("application_id" = uuid::Uuid, Path, description = "The application's id.")),
    request_body(content = AuthorizePageForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "The next page: the second factor, a passkey's prompt, the emailed code, a password reset's step, the organization's choice, consent, or sign-in after a verified email or a reset (HTML)", content_type = "text/html"),
        (status = 303, description = "Back to the client with a code, or `access_denied`; or on to the identity provider"),
        (status = 400, description = "An unknown client or redirect URI, or an unreadable form (HTML)", content_type = "text/html"),
        (status = 401, description = "The page again: the email and password, or the code, are wrong", content_type = "text/html"),
        (status = 403, description = "The form is not this browser's (CSRF), the email is not verified, or the sign-in expired (HTML)", content_type = "text/html"),
        (status = 404, description = "No such application, or a passkey or provider not available here"),
        (status = 409, description = "The sign-up form again: the email has an account (HTML)", content_type = "text/html"),
        (status = 422, description = "The sign-up or password-reset form again, saying what is wrong (HTML)", content_type = "text/html"),
        (status = 429, description = "Too many attempts (HTML)", content_type = "text/html")))]
pub async fn authorize_form(
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
    // No page's fields: the authorization request itself, sent by POST.
    let page_fields = [
        "csrf",
        "email",
        "password",
        "consent",
        "mfa_challenge",
        "code",
        "sign_up",
        "verify_email",
        "forgot_password",
        "choose_organization",
        "sign_in_with",
        "passkey",
    ];
    if !page_fields.iter().any(|f| given.contains_key(*f)) {
        return start(&state, &req, &scope, &given).await;
    }
    if !same_browser(&req, &mut given) {
        return Ok(shown(
            &scope,
            StatusCode::FORBIDDEN,
            "This form has expired. Go back to the application and start again.",
        ));
    }
    if given.remove("sign_up").is_some() {
        let next = sign_up::submitted(&state, &req, &scope, given).await?;
        return onward(&state, &req, &scope, next).await;
    }
    if given.contains_key("verify_email") {
        let next = sign_up::verified(&state, &req, &scope, given).await?;
        return onward(&state, &req, &scope, next).await;
    }
    if let Some(step) = given.remove("passkey") {
        let next = passkey::submitted(&state, &req, &scope, &step, given).await?;
        return onward(&state, &req, &scope, next).await;
    }
    if let Some(step) = given.remove("forgot_password") {
        let next = password_reset::submitted(&state, &req, &scope, &step, given).await?;
        return onward(&state, &req, &scope, next).await;
    }
    let email = given.remove("email").unwrap_or_default();
    let password = given.remove("password").unwrap_or_default();
    let decision = given.remove("consent");
    let choosing = given.remove("choose_organization").is_some();
    let with_provider = given.remove("sign_in_with");
    let find_sso = given.remove("sso").is_some();
    let second_factor = given.remove("mfa_challenge").zip(given.remove("code"));
    let checked = match authorize::check(&scope, &given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(refusal(&state, &scope, refused)),
    };
    if let Some(decision) = decision {
        return consented(&state, &req, &scope, &checked, &decision).await;
    }
    if choosing {
        return organization_chosen(&state, &req, &scope, &checked).await;
    }
    if let Some(provider) = with_provider {
        return provider::leave(&state, &req, &scope, &checked, &provider).await;
    }
    if let Some((challenge, code)) = second_factor {
        return second_step(&state, &req, &scope, &checked, &challenge, code).await;
    }
    if let Err(err) = limit_sign_ins_per_ip(&state, &req, &scope).await {
        return too_many(&scope, err);
    }
    let normalized = users::normalize_email(&email).unwrap_or_default();
    if find_sso {
        return sso_page(&state, &scope, &req, &checked, &email, &normalized, None).await;
    }
    if normalized.is_empty() || normalized.chars().count() > 254 || password.len() > 4 * users::MAX_PASSWORD {
        let wrong = "The email or password is wrong.";
        return sign_in_page(&state, &scope, &req, &checked, &email, Some((StatusCode::UNAUTHORIZED, wrong))).await;
    }
    let per_email = state.settings.rate_limits.sign_in_per_email_per_minute;
    if let Err(err) = limit(&state, &req, format!("sign_in:email:{}:{normalized}", scope.tenant().id), per_email).await
    {
        return too_many(&scope, err);
    }
    let outcome = auth::sign_in(
        &scope,
        &state.issuer(),
        &state.passwords,
        state.email_codes(),
        &normalized,
        password,
        session_ttl(&state),
    )
    .await;
    match outcome {
        Ok(proven) => first_factor_proven(&state, &req, &scope, &checked, proven, "password").await,
        Err(AuthError::InvalidCredentials) => {
            let wrong = "The email or password is wrong.";
            sign_in_page(&state, &scope, &req, &checked, &email, Some((StatusCode::UNAUTHORIZED, wrong))).await
        }
        Err(AuthError::EmailNotVerified) => {
            let text = "Verify your email first: we sent you a code.";
            Ok(shown(&scope, StatusCode::FORBIDDEN, text))
        }
        Err(AuthError::SsoRequired) => {
            let said = "Your organization signs you in through its identity provider.";
            sso_page(&state, &scope, &req, &checked, &email, &normalized, Some(said)).await
        }
        Err(err) => Err(err.into()),
    }
}

/// The sign-in page again with the button of the address's organization's
/// SSO connection (home realm discovery), or saying there is none. Its
/// provider's origin joins the page's form targets, as each provider's does.
async fn sso_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    email: &str,
    normalized: &str,
    said: Option<&str>,
) -> ApiResult<HttpResponse> {
    let connection = match normalized.is_empty() {
        true => None,
        false => sso_connections::for_email(scope, normalized).await?,
    };
    let Some(connection) = connection else {
        let none = "No organization signs this address in through single sign-on. Sign in another way.";
        return sign_in_page(state, scope, req, checked, email, Some((StatusCode::NOT_FOUND, none))).await;
    };
    let said = said.map_or_else(|| format!("Continue with {} to sign in.", connection.name), str::to_string);
    let provider = sso_connections::provider_name(connection.id);
    let sso = Sso { provider: &provider, name: &connection.name, origin: origin_of(&connection.authorization_url) };
    sign_in_page_with(state, scope, req, checked, email, Some((StatusCode::OK, &said)), Some(sso)).await
}

/// An SSO connection's button on the sign-in page.
struct Sso<'a> {
    provider: &'a str,
    name: &'a str,
    origin: String,
}

/// A first factor proven (`method`: `password`, or `oauth` for a
/// provider's sign-in): signed in, or the second factor's page.
async fn first_factor_proven(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    proven: SignedIn,
    method: &str,
) -> ApiResult<HttpResponse> {
    match proven {
        SignedIn::Session(_, _, opened) => {
            let login = Login { session: opened.session, amr: authorize::amr_of(method, None) };
            signed_in(state, req, scope, checked, login).await
        }
        SignedIn::SecondFactorRequired(issued) => {
            Ok(second_factor_page(state, scope, req, checked, &issued.challenge, &issued.factors, None))
        }
    }
}

/// On from a sign-up or password-reset form: its own page, or this
/// endpoint's next step.
async fn onward(state: &AppState, req: &HttpRequest, scope: &TenantScope, next: Next) -> ApiResult<HttpResponse> {
    match next {
        Next::Shown(page) => Ok(page),
        Next::Refused(refused) => Ok(refusal(state, scope, refused)),
        Next::SignedIn(checked, login) => signed_in(state, req, scope, &checked, *login).await,
        Next::FirstFactor(checked, proven, method) => {
            first_factor_proven(state, req, scope, &checked, *proven, method).await
        }
        Next::SignIn(checked, email, said) => {
            sign_in_page(state, scope, req, &checked, &email, Some((StatusCode::OK, said))).await
        }
    }
}

/// The second step: a TOTP or recovery code against the sign-in's
/// challenge, as `POST /v1/auth/sign-in/mfa` takes it (tries limited per
/// user, a code accepted once). A wrong code shows the step again.
async fn second_step(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    challenge: &str,
    code: String,
) -> ApiResult<HttpResponse> {
    let user_id = challenges::user_of(scope, challenge).await?;
    if let Some(user_id) = user_id {
        let per_minute = state.settings.rate_limits.sign_in_per_email_per_minute;
        if let Err(err) = limit(state, req, format!("mfa:user:{}:{user_id}", scope.tenant().id), per_minute).await {
            return too_many(scope, err);
        }
    }
    let proof = Proof::Code(code);
    match challenges::complete(scope, &state.master_key, challenge, &proof, session_ttl(state)).await {
        Ok(completed) => {
            let amr = authorize::amr_of(&completed.method, Some(completed.factor));
            signed_in(state, req, scope, checked, Login { session: completed.opened.session, amr }).await
        }
        Err(SecondFactorError::InvalidCode) => {
            let factors = match user_id {
                Some(user_id) => second_factors::factors_of(scope, user_id).await?,
                None => vec!["totp"],
            };
            let wrong = Some("The code is wrong or was used already.");
            Ok(second_factor_page(state, scope, req, checked, challenge, &factors, wrong))
        }
        Err(SecondFactorError::InvalidChallenge) => {
            let text = "This sign-in has expired or had too many tries. Go back to the application and start again.";
            Ok(shown(scope, StatusCode::FORBIDDEN, text))
        }
        Err(err) => Err(err.into()),
    }
}

/// A sign-in done on these pages: remembered by the cookie, then a code
/// for a first-party client, or the consent page for a third-party one.
async fn signed_in(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    login: Login,
) -> ApiResult<HttpResponse> {
    let step = next_step(scope, checked, &login.session, false).await?;
    let mut txn = scope.begin().await?;
    txn.unaudited(Unaudited::AuthorizationStep);
    let cookie = authorize::remember(&mut txn, &login, session_ttl(state)).await?;
    let code = match step {
        Step::Code(organization) => Ok(authorize::issue_code_in(&mut txn, checked, &login, organization).await?),
        Step::Ask(question) => Err(question),
    };
    txn.commit().await?;
    let max_age = session_ttl(state).num_seconds();
    let login_cookie = set_cookie(state, scope, LOGIN_COOKIE, &cookie, max_age, "Lax");
    match code {
        Ok(code) => {
            Ok(back_with_code(state, scope, checked, &code).insert_header((header::SET_COOKIE, login_cookie)).finish())
        }
        Err(question) => Ok(with_cookie(question_page(state, scope, req, checked, question), &login_cookie)),
    }
}

/// What follows a sign-in: the code, or a question for the user first.
enum Step {
    /// The code, with the organization chosen for it.
    Code(Option<Uuid>),
    Ask(Question),
}

/// What a signed-in user is asked before the client gets its code.
enum Question {
    /// Which of their organizations (for the `organization` scope).
    ChooseOrganization(Vec<(membership::Model, organization::Model)>),
    /// Consent, for a third party's client.
    Consent,
    /// The request names an organization the user is not in: the client
    /// hears `access_denied`.
    NotAMember,
}

/// The organization first, then consent for a third party's client
/// (unless the user has just `consented`, or allowed these scopes before
/// and the request does not say `prompt=consent`), then the code.
async fn next_step(scope: &TenantScope, checked: &Checked, login: &session::Model, consented: bool) -> ApiResult<Step> {
    let allowed = consented
        || checked.client.first_party
        || (!checked.prompt.consent
            && consents::covers(scope, login.user_id, checked.client.id, &checked.scopes).await?);
    Ok(match authorize::organization_for(scope, checked, login.user_id).await? {
        OrganizationChoice::NotAMember => Step::Ask(Question::NotAMember),
        OrganizationChoice::Ask(choices) => Step::Ask(Question::ChooseOrganization(choices)),
        OrganizationChoice::Settled(organization) if allowed => Step::Code(organization),
        OrganizationChoice::Settled(_) => Step::Ask(Question::Consent),
    })
}

/// Signed in here: the next step's page, or back to the client with a code.
async fn go_on(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    login: &Login,
    consented: bool,
) -> ApiResult<HttpResponse> {
    match next_step(scope, checked, &login.session, consented).await? {
        Step::Code(organization) => {
            let code = authorize::issue_code(scope, checked, login, organization).await?;
            Ok(back_with_code(state, scope, checked, &code).finish())
        }
        Step::Ask(question) => Ok(question_page(state, scope, req, checked, question)),
    }
}

fn question_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    question: Question,
) -> HttpResponse {
    // `prompt=none`: the client asked that nothing be shown (OIDC Core
    // section 3.1.2.6).
    let silent = |error: &'static str, why: &'static str| back_with_error(state, scope, checked.error(error, why));
    match question {
        Question::Consent if checked.prompt.none => {
            silent("consent_required", "the user has not allowed this client these scopes")
        }
        Question::ChooseOrganization(_) if checked.prompt.none => {
            silent("interaction_required", "the user must choose one of their organizations")
        }
        Question::Consent => consent_page(state, scope, req, checked),
        Question::ChooseOrganization(choices) => organization_page(state, scope, req, checked, &choices),
        Question::NotAMember => back_with_error(
            state,
            scope,
            checked.error("access_denied", "the user is not a member of the organization the request names"),
        ),
    }
}

/// The hosted pages' sign-in, for a form that needs one (consent, an
/// organization's choice).
async fn login_of(req: &HttpRequest, scope: &TenantScope, checked: &Checked) -> ApiResult<Option<Login>> {
    Ok(match cookie(req, LOGIN_COOKIE) {
        Some(value) => authorize::signed_in(scope, &value, checked.max_age).await?,
        None => None,
    })
}

fn no_longer_signed_in(scope: &TenantScope) -> HttpResponse {
    shown(scope, StatusCode::FORBIDDEN, "You are no longer signed in. Go back to the application and start again.")
}

/// The user chose an organization (the form's `organization`): on to
/// consent or the code.
async fn organization_chosen(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
) -> ApiResult<HttpResponse> {
    let Some(login) = login_of(req, scope, checked).await? else { return Ok(no_longer_signed_in(scope)) };
    go_on(state, req, scope, checked, &login, false).await
}

/// The user's answer on the consent page, while signed in here: a code
/// (the allowance remembered, so these scopes are not asked again), or
/// `access_denied` for the client.
async fn consented(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    checked: &Checked,
    decision: &str,
) -> ApiResult<HttpResponse> {
    let Some(login) = login_of(req, scope, checked).await? else { return Ok(no_longer_signed_in(scope)) };
    if decision != "allow" {
        return Ok(back_with_error(state, scope, checked.error("access_denied", "the user denied the request")));
    }
    let user_id = login.session.user_id;
    consents::remember(&scope.acting_as(Actor::user(user_id)), user_id, checked.client.id, &checked.scopes).await?;
    go_on(state, req, scope, checked, &login, true).await
}

fn organization_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    choices: &[(membership::Model, organization::Model)],
) -> HttpResponse {
    let choices: Vec<(String, &str, &str)> =
        choices.iter().map(|(m, o)| (o.id.to_string(), o.name.as_str(), m.role.as_str())).collect();
    form_page(state, scope, checked, ("Choose an organization", StatusCode::OK), |csrf| {
        pages::choose_organization(&checked.client.name, req.path(), &checked.parameters, csrf, &choices)
    })
}

/// The second step, with the ways the user has (`factors`) that these
/// pages can take; a user whose only factor is a passkey the pages cannot
/// use here is told so.
fn second_factor_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    challenge: &str,
    factors: &[&str],
    error: Option<&str>,
) -> HttpResponse {
    let codes = factors.iter().any(|f| *f != "passkey");
    let passkey = factors.contains(&"passkey") && passkey::available(state, scope);
    if !codes && !passkey {
        let text = "This account's second factor is a passkey, which cannot be used at this address. \
                    Sign in through the application itself.";
        return shown(scope, StatusCode::FORBIDDEN, text);
    }
    let title = format!("Sign in to {}", scope.tenant().name);
    let status = if error.is_some() { StatusCode::UNAUTHORIZED } else { StatusCode::OK };
    form_page(state, scope, checked, (&title, status), |csrf| {
        let form = pages::SecondFactorForm {
            application: &scope.tenant().name,
            action: req.path(),
            parameters: &checked.parameters,
            csrf,
            challenge,
            codes,
            passkey,
            error,
        };
        form.render()
    })
}

fn consent_page(state: &AppState, scope: &TenantScope, req: &HttpRequest, checked: &Checked) -> HttpResponse {
    let title = format!("Allow {}?", checked.client.name);
    form_page(state, scope, checked, (&title, StatusCode::OK), |csrf| {
        let (application, client) = (&scope.tenant().name, &checked.client.name);
        pages::consent(application, client, req.path(), &checked.parameters, csrf, &checked.scopes)
    })
}

async fn sign_in_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    email: &str,
    error: Option<(StatusCode, &str)>,
) -> ApiResult<HttpResponse> {
    sign_in_page_with(state, scope, req, checked, email, error, None).await
}

async fn sign_in_page_with(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    email: &str,
    error: Option<(StatusCode, &str)>,
    sso: Option<Sso<'_>>,
) -> ApiResult<HttpResponse> {
    let providers = provider::enabled(state, scope).await?;
    let csrf = pages::random_value();
    let form = pages::SignInForm {
        application: &scope.tenant().name,
        client: &checked.client.name,
        action: req.path(),
        parameters: &checked.parameters,
        csrf: &csrf,
        email,
        providers: providers.iter().map(|(name, _)| *name).collect(),
        passkeys: passkey::available(state, scope),
        sso_offered: sso_connections::any_enabled(scope).await?,
        sso: sso.as_ref().map(|s| (s.provider, s.name)),
        error: error.map(|(_, text)| text),
    };
    // A provider's button sends the browser on to the provider: its origin is a form target too.
    let mut targets = vec![origin_of(&checked.redirect_uri)];
    targets.extend(providers.into_iter().map(|(_, origin)| origin));
    targets.extend(sso.map(|s| s.origin));
    let title = format!("Sign in to {}", scope.tenant().name);
    let page = pages::Page {
        status: error.map(|(status, _)| status).unwrap_or(StatusCode::OK),
        title: &title,
        body: form.render(),
        tenant: scope.tenant(),
        form_targets: &targets,
    };
    Ok(with_csrf(state, scope, csrf, page))
}

fn refusal(state: &AppState, scope: &TenantScope, refused: Refused) -> HttpResponse {
    match refused {
        Refused::Shown(text) => shown(scope, StatusCode::BAD_REQUEST, text),
        Refused::Redirected(redirect) => back_with_error(state, scope, redirect),
    }
}

/// 303 to `redirect_uri` with `extra`, `state` and `iss` added to its query.
fn back(
    state: &AppState,
    scope: &TenantScope,
    redirect_uri: &str,
    extra: &[(&str, &str)],
    client_state: Option<&str>,
) -> actix_web::HttpResponseBuilder {
    let mut url = Url::parse(redirect_uri).expect("registered redirect URIs parse");
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in extra {
            query.append_pair(name, value);
        }
        if let Some(client_state) = client_state {
            query.append_pair("state", client_state);
        }
        query.append_pair("iss", &state.tokens.issuer(scope.tenant().id));
    }
    let mut builder = HttpResponse::SeeOther();
    builder.insert_header((header::LOCATION, url.as_str())).insert_header((header::CACHE_CONTROL, "no-store"));
    builder
}

fn back_with_code(
    state: &AppState,
    scope: &TenantScope,
    checked: &Checked,
    code: &str,
) -> actix_web::HttpResponseBuilder {
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "authorize", "outcome" => "code").increment(1);
    back(state, scope, &checked.redirect_uri, &[("code", code)], checked.state.as_deref())
}

fn back_with_error(state: &AppState, scope: &TenantScope, redirect: Redirect) -> HttpResponse {
    metrics::counter!("gatehouse_openid_provider_total", "endpoint" => "authorize", "outcome" => redirect.error)
        .increment(1);
    let extra = [("error", redirect.error), ("error_description", redirect.description)];
    back(state, scope, &redirect.redirect_uri, &extra, redirect.state.as_deref()).finish()
}
