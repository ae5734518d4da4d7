//! A forgotten password on the hosted pages. The sign-in page's "Forgot
//! your password?" asks for the email (`forgot_password=ask`); the API's
//! own reset request emails a code (`send`: the same page whether or not
//! the email is a user's, under the API's rate limits); the code and a new
//! password set it (`reset`), which ends every session of the user as the
//! API's reset does, and the sign-in page follows.
use std::collections::BTreeMap;

use actix_web::{http::StatusCode, HttpRequest, HttpResponse};

use super::{
    browser::{form_page, too_many},
    next::Next,
    pages,
};
use crate::{
    areas::{
        openid_provider::authorize::{self, Checked},
        password_resets::{self, PasswordResetError},
        users,
        validate::Issues,
    },
    auth::public::{client_ip, limit},
    error::ApiResult,
    state::AppState,
    storage::TenantScope,
};

/// A step of the reset: `ask` (the email form), `send` (with `email`) or
/// `reset` (with `reset_code` and `password`).
pub(super) async fn submitted(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    step: &str,
    mut given: BTreeMap<String, String>,
) -> ApiResult<Next> {
    let email = given.remove("email").unwrap_or_default();
    let code = given.remove("reset_code").unwrap_or_default();
    let password = given.remove("password").unwrap_or_default();
    let checked = match authorize::check(scope, &given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Next::Refused(refused)),
    };
    let page = Form { state, scope, req, checked: &checked };
    match step {
        "send" => send(&page, &email).await,
        "reset" => reset(&page, code.trim(), password).await,
        _ => Ok(Next::Shown(page.email(checked.login_hint.as_deref().unwrap_or_default(), None))),
    }
}

/// Emails a code when the email is a user's; answers the code's page either way.
async fn send(page: &Form<'_>, email: &str) -> ApiResult<Next> {
    let (state, req, application_id) = (page.state, page.req, page.scope.tenant().id);
    let limits = &state.settings.rate_limits;
    let per_ip = format!("password_forgot:ip:{application_id}:{}", client_ip(req));
    if let Err(err) = limit(state, req, per_ip, limits.sign_in_per_ip_per_minute).await {
        return too_many(page.scope, err).map(Next::Shown);
    }
    let mut issues = Issues::default();
    let normalized = users::email(&mut issues, email);
    if issues.finish().is_err() {
        let error = (StatusCode::UNPROCESSABLE_ENTITY, "Enter the email address of your account.");
        return Ok(Next::Shown(page.email(email, Some(error))));
    }
    let per_email = format!("password_forgot:email:{application_id}:{normalized}");
    if let Err(err) = limit(state, req, per_email, limits.sign_in_per_email_per_minute).await {
        return too_many(page.scope, err).map(Next::Shown);
    }
    password_resets::request(page.scope, &state.master_key, normalized.clone(), None).await?;
    Ok(Next::Shown(page.code(&normalized, None)))
}

/// Sets the new password with the emailed code; then the sign-in page.
async fn reset(page: &Form<'_>, code: &str, password: String) -> ApiResult<Next> {
    let (state, req, scope) = (page.state, page.req, page.scope);
    let per_ip = format!("password_reset:ip:{}:{}", scope.tenant().id, client_ip(req));
    if let Err(err) = limit(state, req, per_ip, state.settings.rate_limits.sign_in_per_ip_per_minute).await {
        return too_many(scope, err).map(Next::Shown);
    }
    match password_resets::reset(scope, &state.passwords, code, password).await {
        Ok((user, _)) => {
            let said = "Your password is changed. Sign in with it.";
            Ok(Next::SignIn(Box::new(page.checked.clone()), user.email, said))
        }
        Err(PasswordResetError::InvalidToken) => {
            let error = (StatusCode::UNAUTHORIZED, "The code is wrong, was used already or has expired.");
            Ok(Next::Shown(page.code("", Some(error))))
        }
        Err(PasswordResetError::Invalid(invalid)) => {
            let said: Vec<String> = invalid.0.iter().map(|i| format!("The new password {}.", i.issue)).collect();
            let error = (StatusCode::UNPROCESSABLE_ENTITY, said.join(" "));
            Ok(Next::Shown(page.code("", Some((error.0, &error.1)))))
        }
        Err(err) => Err(err.into()),
    }
}

/// What the reset's pages are drawn for.
struct Form<'a> {
    state: &'a AppState,
    scope: &'a TenantScope,
    req: &'a HttpRequest,
    checked: &'a Checked,
}

impl Form<'_> {
    fn email(&self, email: &str, error: Option<(StatusCode, &str)>) -> HttpResponse {
        self.render("Reset your password", error, |csrf| {
            pages::forgot_password(
                &self.scope.tenant().name,
                self.req.path(),
                &self.checked.parameters,
                csrf,
                email,
                error.map(|e| e.1),
            )
        })
    }

    /// The code's page; `email` is where it went (empty: said before).
    fn code(&self, email: &str, error: Option<(StatusCode, &str)>) -> HttpResponse {
        self.render("Choose a new password", error, |csrf| {
            pages::reset_password(
                &self.scope.tenant().name,
                self.req.path(),
                &self.checked.parameters,
                csrf,
                email,
                error.map(|e| e.1),
            )
        })
    }

    fn render(
        &self,
        title: &str,
        error: Option<(StatusCode, &str)>,
        body: impl FnOnce(&str) -> String,
    ) -> HttpResponse {
        let status = error.map(|(status, _)| status).unwrap_or(StatusCode::OK);
        form_page(self.state, self.scope, self.checked, (title, status), body)
    }
}
