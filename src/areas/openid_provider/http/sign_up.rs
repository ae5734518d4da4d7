//! Sign-up on the hosted pages (`prompt=create`, or the sign-in page's
//! link): the API's own sign-up, with its profile-field schema, its
//! `pre_sign_up` hooks and sign-up restrictions, and its rate limit; then
//! on as after a sign-in. An application that requires a verified email
//! asks for the emailed code first, then for a sign-in.
use std::collections::BTreeMap;

use actix_web::{http::StatusCode, HttpRequest, HttpResponse};
use entity::profile_field;
use serde_json::{Map, Number, Value};

use super::{
    browser::{form_page, too_many},
    next::Next,
    pages,
};
use crate::{
    areas::{
        auth::{self, NewSignUp},
        email_verifications::{self, EmailVerificationError},
        openid_provider::authorize::{self, Checked, Login},
        profile_fields, users,
        validate::Issues,
    },
    auth::public::{client_ip, limit, session_ttl},
    error::{ApiError, ApiResult},
    state::AppState,
    storage::TenantScope,
};

/// The fields a sign-up form sends besides the request's parameters.
fn take_entered(given: &mut BTreeMap<String, String>) -> (String, String, BTreeMap<String, String>) {
    let email = given.remove("email").unwrap_or_default();
    let password = given.remove("password").unwrap_or_default();
    let profile_keys: Vec<String> = given.keys().filter(|k| k.starts_with("profile.")).cloned().collect();
    let profile = profile_keys.into_iter().filter_map(|k| given.remove_entry(&k)).collect();
    (email, password, profile)
}

/// The sign-up page, with what was entered and what was wrong.
pub(super) async fn page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    (email, profile): (&str, &BTreeMap<String, String>),
    error: Option<(StatusCode, &str)>,
) -> ApiResult<HttpResponse> {
    let schema = profile_fields::schema(scope).await?;
    let title = format!("Create your {} account", scope.tenant().name);
    let status = error.map(|(status, _)| status).unwrap_or(StatusCode::OK);
    Ok(form_page(state, scope, checked, (&title, status), |csrf| {
        let form = pages::SignUpForm {
            application: &scope.tenant().name,
            client: &checked.client.name,
            action: req.path(),
            parameters: &checked.parameters,
            csrf,
            email,
            profile: schema.iter().map(|field| pages::ProfileInput { field, entered: profile }).collect(),
            error: error.map(|(_, text)| text),
        };
        form.render()
    }))
}

/// A submitted sign-up form: a new user and their session, or the form
/// again saying what is wrong.
pub(super) async fn submitted(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    mut given: BTreeMap<String, String>,
) -> ApiResult<Next> {
    let (email, password, entered) = take_entered(&mut given);
    let checked = match authorize::check(scope, &given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Next::Refused(refused)),
    };
    let per_ip = state.settings.rate_limits.sign_up_per_ip_per_minute;
    let key = format!("sign_up:ip:{}:{}", scope.tenant().id, client_ip(req));
    if let Err(err) = limit(state, req, key, per_ip).await {
        return too_many(scope, err).map(Next::Shown);
    }
    let mut issues = Issues::default();
    let normalized = users::email(&mut issues, &email);
    users::password(&mut issues, &password);
    let schema = profile_fields::schema(scope).await?;
    let profile = users::profile(scope, &mut issues, Some(Value::Object(profile_of(&schema, &entered)))).await?;
    if let Err(invalid) = issues.finish() {
        let said: Vec<String> =
            invalid.0.iter().map(|i| format!("{} {}.", label_of(&schema, &i.field), i.issue)).collect();
        let error = said.join(" ");
        let error = Some((StatusCode::UNPROCESSABLE_ENTITY, error.as_str()));
        return page(state, scope, req, &checked, (&email, &entered), error).await.map(Next::Shown);
    }
    let new = NewSignUp { email: normalized.clone(), password, profile };
    let caller = state.hook_caller();
    let ttl = session_ttl(state);
    let outcome = auth::sign_up(scope, &state.issuer(), &state.passwords, &caller, state.email_codes(), new, ttl).await;
    let opened = match outcome {
        Ok((_, _, opened)) => opened,
        Err(err) => {
            // A taken email (409), a refused domain or a hook's no (403):
            // the form again with the API's own message.
            let err = ApiError::from(err);
            let status = StatusCode::from_u16(err.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            if !status.is_client_error() {
                return Err(err);
            }
            let error = Some((status, err.message.as_str()));
            return page(state, scope, req, &checked, (&email, &entered), error).await.map(Next::Shown);
        }
    };
    if scope.tenant().require_verified_email && !opened.session.email_verified {
        return Ok(Next::Shown(verify_page(state, scope, req, &checked, &normalized, None)));
    }
    let login = Login { session: opened.session, amr: authorize::amr_of("password", None) };
    Ok(Next::SignedIn(Box::new(checked), Box::new(login)))
}

/// The emailed code, after a sign-up that needs it: then the sign-in page,
/// the email filled in.
pub(super) async fn verified(
    state: &AppState,
    req: &HttpRequest,
    scope: &TenantScope,
    mut given: BTreeMap<String, String>,
) -> ApiResult<Next> {
    let email = given.remove("verify_email").unwrap_or_default();
    let code = given.remove("email_code").unwrap_or_default();
    let checked = match authorize::check(scope, &given).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Next::Refused(refused)),
    };
    match email_verifications::verify(scope, &state.master_key, &email, code.trim()).await {
        Ok(_) => Ok(Next::SignIn(Box::new(checked), email, "Your email is verified. Sign in to continue.")),
        Err(EmailVerificationError::InvalidCode) => {
            let wrong = Some("The code is wrong, was used already or has expired.");
            Ok(Next::Shown(verify_page(state, scope, req, &checked, &email, wrong)))
        }
        Err(err) => Err(err.into()),
    }
}

fn verify_page(
    state: &AppState,
    scope: &TenantScope,
    req: &HttpRequest,
    checked: &Checked,
    email: &str,
    error: Option<&str>,
) -> HttpResponse {
    let status = if error.is_some() { StatusCode::UNAUTHORIZED } else { StatusCode::OK };
    form_page(state, scope, checked, ("Verify your email", status), |csrf| {
        pages::verify_email(&scope.tenant().name, req.path(), &checked.parameters, csrf, email, error)
    })
}

/// The profile a form gives, typed by the schema: a number as a number
/// (else the text, which the schema check names), a checkbox as a
/// boolean, a multi-select's ticked options as a list, and an empty field
/// left out (a required one is then named missing).
fn profile_of(schema: &[profile_field::Model], entered: &BTreeMap<String, String>) -> Map<String, Value> {
    let mut profile = Map::new();
    for field in schema {
        let name = format!("profile.{}", field.key);
        let given = entered.get(&name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let value = match field.field_type.as_str() {
            "boolean" => Some(Value::Bool(given == Some("true"))),
            "number" => given.map(|v| {
                v.parse::<f64>().ok().and_then(Number::from_f64).map_or_else(|| Value::String(v.into()), Value::Number)
            }),
            "multi_select" => {
                let prefix = format!("{name}.");
                let ticked: Vec<Value> = entered
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .map(|(_, v)| Value::String(v.clone()))
                    .collect();
                (!ticked.is_empty()).then_some(Value::Array(ticked))
            }
            _ => given.map(|v| Value::String(v.into())),
        };
        if let Some(value) = value {
            profile.insert(field.key.clone(), value);
        }
    }
    profile
}

/// A field issue's subject in words: the profile field's label, `Email`
/// or `Password`.
fn label_of(schema: &[profile_field::Model], field: &str) -> String {
    match field.strip_prefix("profile.") {
        Some(key) => schema.iter().find(|f| f.key == key).map_or_else(|| key.to_string(), |f| f.label.clone()),
        None => {
            let mut words = field.chars();
            words.next().map(|c| c.to_uppercase().chain(words).collect()).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(key: &str, field_type: &str) -> profile_field::Model {
        let now = crate::clock::now();
        profile_field::Model {
            id: uuid::Uuid::now_v7(),
            application_id: uuid::Uuid::now_v7(),
            key: key.into(),
            label: key.to_uppercase(),
            field_type: field_type.into(),
            options: None,
            position: 0,
            required: false,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn a_forms_profile_is_typed_by_the_schema() {
        let schema =
            [field("age", "number"), field("news", "boolean"), field("tags", "multi_select"), field("city", "text")];
        let entered: BTreeMap<String, String> = [
            ("profile.age", " 42 "),
            ("profile.tags.0", "a"),
            ("profile.tags.2", "c"),
            ("profile.city", ""),
            ("profile.other", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            Value::Object(profile_of(&schema, &entered)),
            json!({"age": 42.0, "news": false, "tags": ["a", "c"]})
        );
        assert_eq!(label_of(&schema, "profile.age"), "AGE");
        assert_eq!(label_of(&schema, "email"), "Email");
    }
}
