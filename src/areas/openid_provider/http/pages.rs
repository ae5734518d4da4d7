//! The hosted pages, rendered on the server: plain HTML forms that work
//! without JavaScript, with no external stylesheet, script or font. Every
//! value is escaped; the only inline style carries the response's CSP
//! nonce.
use std::collections::BTreeMap;

use actix_web::{
    http::{header, StatusCode},
    HttpResponse,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::{rngs::OsRng, RngCore};

use crate::application::TenantSnapshot;

/// HTML text: `&`, `<`, `>`, `"` and `'` escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

pub fn random_value() -> String {
    let mut bytes = [0u8; 24];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `#rrggbb` from the application's `branding.primary_color`, else ours.
fn accent(branding: &serde_json::Value) -> String {
    let given = branding.get("primary_color").and_then(|v| v.as_str()).unwrap_or_default();
    let valid = given.len() == 7 && given.starts_with('#') && given[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if valid {
        given.to_string()
    } else {
        "#1f4fd1".to_string()
    }
}

/// A page's frame: its title, body, the application (its branding, and
/// whether its origins may frame the page), and the origins its form may
/// send the browser on to (`form-action`, which browsers also apply to
/// the redirect after a submission).
pub struct Page<'a> {
    pub status: StatusCode,
    pub title: &'a str,
    pub body: String,
    pub tenant: &'a TenantSnapshot,
    pub form_targets: &'a [String],
}

impl Page<'_> {
    pub fn render(self) -> HttpResponse {
        self.render_with(None)
    }

    /// The page with one inline script (the passkey page's), allowed by
    /// the response's nonce and nothing else.
    pub fn render_with_script(self, script: &str) -> HttpResponse {
        self.render_with(Some(script))
    }

    fn render_with(self, script: Option<&str>) -> HttpResponse {
        let nonce = random_value();
        let targets: String = self.form_targets.iter().map(|t| format!(" {t}")).collect();
        let script_src = if script.is_some() { format!("script-src 'nonce-{nonce}'; ") } else { String::new() };
        let framers = self.framers();
        let csp = format!(
            "default-src 'none'; {script_src}style-src 'nonce-{nonce}'; img-src 'self' data:; \
             form-action 'self'{targets}; frame-ancestors {framers}; base-uri 'none'"
        );
        let script = script.map(|s| format!("<script nonce=\"{nonce}\">{s}</script>")).unwrap_or_default();
        let html = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title><style nonce=\"{nonce}\">{style}</style></head>\
             <body><main>{body}</main>{script}</body></html>",
            title = escape(self.title),
            style = STYLE.replace("ACCENT", &accent(&self.tenant.branding)),
            body = self.body,
        );
        let mut builder = HttpResponse::build(self.status);
        builder
            .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
            .insert_header((header::CONTENT_SECURITY_POLICY, csp))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((header::CACHE_CONTROL, "no-store"));
        if framers == "'none'" {
            // For browsers that predate `frame-ancestors`.
            builder.insert_header((header::X_FRAME_OPTIONS, "DENY"));
        }
        builder.body(html)
    }

    /// `frame-ancestors`: the application's allowed origins when it lets
    /// them frame its hosted pages, else `'none'`.
    fn framers(&self) -> String {
        match self.tenant.hosted_pages_in_frames && !self.tenant.allowed_origins.is_empty() {
            true => self.tenant.allowed_origins.join(" "),
            false => "'none'".to_string(),
        }
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f5f6f8;color:#1b1d21;margin:0}\
main{max-width:24rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0003}\
h1{font-size:1.4rem;margin:0 0 .25rem}p{margin:.25rem 0 1rem}\
label{display:block;margin:1rem 0 .25rem;font-weight:600}\
input{width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #767b85;border-radius:4px;font-size:1rem}\
button{margin-top:1.5rem;width:100%;padding:.7rem;border:0;border-radius:4px;background:ACCENT;color:#fff;font-size:1rem;font-weight:600}\
.error{color:#a4121b;font-weight:600}.secondary{background:#fff;color:#1b1d21;border:1px solid #767b85}\
select{width:100%;padding:.6rem;font-size:1rem}fieldset{border:0;padding:0;margin:1rem 0 0}legend{font-weight:600}\
.role{font-weight:400}.check{font-weight:400}.check input{width:auto}.switch{margin-top:1.5rem;text-align:center}a{color:#1b1d21}";

/// A form's hidden fields: the request's parameters (never a `csrf` among
/// them) and this page's CSRF token.
fn hidden_fields(parameters: &BTreeMap<String, String>, csrf: &str) -> String {
    let field = |name: &str, value: &str| {
        format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(name), escape(value))
    };
    let mut hidden: String =
        parameters.iter().filter(|(name, _)| name.as_str() != "csrf").map(|(name, value)| field(name, value)).collect();
    hidden.push_str(&field("csrf", csrf));
    hidden
}

/// What went wrong on a form, announced to screen readers; nothing if nothing did.
fn alert(error: Option<&str>) -> String {
    error.map(|e| format!("<p role=\"alert\" class=\"error\">{}</p>", escape(e))).unwrap_or_default()
}

/// The sign-in page: the password form, a button for each identity
/// provider, and the ways to reset a password or create an account. The
/// request's parameters and the CSRF token ride along as hidden fields,
/// checked again when a form is submitted.
pub struct SignInForm<'a> {
    pub application: &'a str,
    pub client: &'a str,
    pub action: &'a str,
    pub parameters: &'a BTreeMap<String, String>,
    pub csrf: &'a str,
    pub email: &'a str,
    /// The enabled providers' names (`google`, …).
    pub providers: Vec<&'a str>,
    /// Whether a passkey can sign in here.
    pub passkeys: bool,
    /// Whether an organization of the application has SSO (the "Use
    /// single sign-on" button).
    pub sso_offered: bool,
    /// The address's organization's SSO connection, once the address is
    /// known to have one: its provider name and its name.
    pub sso: Option<(&'a str, &'a str)>,
    pub error: Option<&'a str>,
}

impl SignInForm<'_> {
    pub fn render(&self) -> String {
        let hidden = hidden_fields(self.parameters, self.csrf);
        let error = alert(self.error);
        let mut buttons = String::new();
        if let Some((provider, name)) = self.sso {
            buttons.push_str(&format!(
                "<button type=\"submit\" name=\"sign_in_with\" value=\"{p}\">Continue with {name}</button>",
                p = escape(provider),
                name = escape(name),
            ));
        }
        buttons += match self.passkeys {
            true => {
                "<button type=\"submit\" name=\"passkey\" value=\"sign_in\" class=\"secondary\">\
                     Sign in with a passkey</button>"
            }
            false => "",
        };
        for provider in &self.providers {
            buttons.push_str(&format!(
                "<button type=\"submit\" name=\"sign_in_with\" value=\"{p}\" class=\"secondary\">Continue with {name}</button>",
                p = escape(provider),
                name = escape(crate::oauth::providers::display_name(provider)),
            ));
        }
        // The other ways to sign in: a passkey, then each identity provider.
        let others = match buttons.is_empty() {
            true => String::new(),
            false => format!(
                "<form method=\"post\" action=\"{action}\">{hidden}{buttons}</form>",
                action = escape(self.action)
            ),
        };
        format!(
            "<h1>Sign in to {application}</h1><p>to continue to {client}</p>{error}\
             <form method=\"post\" action=\"{action}\">{hidden}\
             <label for=\"email\">Email</label>\
             <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required value=\"{email}\">\
             <label for=\"password\">Password</label>\
             <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
             <button type=\"submit\">Sign in</button>{find_sso}</form>{others}\
             <form method=\"post\" action=\"{action}\">{hidden}\
             <button type=\"submit\" name=\"forgot_password\" value=\"ask\" class=\"secondary\">Forgot your password?</button></form>\
             <p class=\"switch\"><a href=\"{sign_up}\">Create an account</a></p>",
            application = escape(self.application),
            client = escape(self.client),
            action = escape(self.action),
            email = escape(self.email),
            find_sso = match self.sso_offered {
                true => "<button type=\"submit\" name=\"sso\" value=\"find\" class=\"secondary\" formnovalidate>\
                         Use single sign-on</button>",
                false => "",
            },
            sign_up = escape(&link(self.action, self.parameters, Some("create"))),
        )
    }
}

/// The authorization request again, as a link: `prompt` replaced by
/// `prompt` (or left out).
fn link(action: &str, parameters: &BTreeMap<String, String>, prompt: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in parameters.iter().filter(|(name, _)| name.as_str() != "prompt") {
        query.append_pair(name, value);
    }
    if let Some(prompt) = prompt {
        query.append_pair("prompt", prompt);
    }
    format!("{action}?{}", query.finish())
}

/// One profile field as the sign-up form asks for it, with what was
/// entered: `profile.<key>` (a multi-select's options `profile.<key>.<n>`).
pub struct ProfileInput<'a> {
    pub field: &'a entity::profile_field::Model,
    pub entered: &'a BTreeMap<String, String>,
}

impl ProfileInput<'_> {
    fn render(&self) -> String {
        let field = self.field;
        let name = format!("profile.{}", field.key);
        let id = format!("profile-{}", field.key);
        let value = self.entered.get(&name).map(String::as_str).unwrap_or_default();
        let required = if field.required { " required" } else { "" };
        let label = escape(&field.label);
        let options: Vec<&str> = field
            .options
            .as_ref()
            .and_then(|o| o.as_array())
            .into_iter()
            .flatten()
            .filter_map(|o| o.as_str())
            .collect();
        let input = |kind: &str| {
            format!(
                "<label for=\"{id}\">{label}</label><input id=\"{id}\" name=\"{name}\" type=\"{kind}\" value=\"{value}\"{required}>",
                id = escape(&id),
                name = escape(&name),
                value = escape(value),
            )
        };
        match field.field_type.as_str() {
            "boolean" => format!(
                "<label class=\"check\"><input name=\"{name}\" type=\"checkbox\" value=\"true\"{checked}> {label}</label>",
                name = escape(&name),
                checked = if value == "true" { " checked" } else { "" },
            ),
            "select" => {
                let choices: String = options
                    .iter()
                    .map(|o| {
                        let selected = if *o == value { " selected" } else { "" };
                        format!("<option value=\"{v}\"{selected}>{v}</option>", v = escape(o))
                    })
                    .collect();
                format!(
                    "<label for=\"{id}\">{label}</label><select id=\"{id}\" name=\"{name}\"{required}>\
                     <option value=\"\"></option>{choices}</select>",
                    id = escape(&id),
                    name = escape(&name),
                )
            }
            "multi_select" => {
                let boxes: String = options
                    .iter()
                    .enumerate()
                    .map(|(n, o)| {
                        let each = format!("{name}.{n}");
                        let checked = if self.entered.contains_key(&each) { " checked" } else { "" };
                        format!(
                            "<label class=\"check\"><input name=\"{each}\" type=\"checkbox\" value=\"{v}\"{checked}> {v}</label>",
                            each = escape(&each),
                            v = escape(o),
                        )
                    })
                    .collect();
                format!("<fieldset><legend>{label}</legend>{boxes}</fieldset>")
            }
            "number" => input("number\" step=\"any"),
            "date" => input("date"),
            "email" => input("email"),
            "url" => input("url"),
            "phone" => input("tel"),
            _ => input("text"),
        }
    }
}

/// The sign-up form (OIDC's `prompt=create`): email, password and the
/// application's profile fields.
pub struct SignUpForm<'a> {
    pub application: &'a str,
    pub client: &'a str,
    pub action: &'a str,
    pub parameters: &'a BTreeMap<String, String>,
    pub csrf: &'a str,
    pub email: &'a str,
    pub profile: Vec<ProfileInput<'a>>,
    pub error: Option<&'a str>,
}

impl SignUpForm<'_> {
    pub fn render(&self) -> String {
        let hidden = hidden_fields(self.parameters, self.csrf);
        let error = alert(self.error);
        let profile: String = self.profile.iter().map(ProfileInput::render).collect();
        format!(
            "<h1>Create your {application} account</h1><p>to continue to {client}</p>{error}\
             <form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"sign_up\" value=\"1\">\
             <label for=\"email\">Email</label>\
             <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\" required value=\"{email}\">\
             <label for=\"password\">Password</label>\
             <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" required>\
             {profile}<button type=\"submit\">Create account</button></form>\
             <p class=\"switch\"><a href=\"{sign_in}\">I have an account</a></p>",
            application = escape(self.application),
            client = escape(self.client),
            action = escape(self.action),
            email = escape(self.email),
            sign_in = escape(&link(self.action, self.parameters, None)),
        )
    }
}

/// After a sign-up, when the application requires a verified email: the
/// code that was emailed.
pub fn verify_email(
    application: &str,
    action: &str,
    parameters: &BTreeMap<String, String>,
    csrf: &str,
    email: &str,
    error: Option<&str>,
) -> String {
    let hidden = hidden_fields(parameters, csrf);
    let error = alert(error);
    format!(
        "<h1>Verify your email</h1><p>We sent a code to {email} for your {application} account.</p>{error}\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <input type=\"hidden\" name=\"verify_email\" value=\"{email}\">\
         <label for=\"email_code\">Code</label>\
         <input id=\"email_code\" name=\"email_code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" required>\
         <button type=\"submit\">Verify</button></form>",
        application = escape(application),
        action = escape(action),
        email = escape(email),
    )
}

/// A forgotten password: the email to send a code to.
pub fn forgot_password(
    application: &str,
    action: &str,
    parameters: &BTreeMap<String, String>,
    csrf: &str,
    email: &str,
    error: Option<&str>,
) -> String {
    let hidden = hidden_fields(parameters, csrf);
    let error = alert(error);
    format!(
        "<h1>Reset your password</h1><p>We will email you a code to choose a new password for your {application} account.</p>{error}\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <input type=\"hidden\" name=\"forgot_password\" value=\"send\">\
         <label for=\"email\">Email</label>\
         <input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required value=\"{email}\">\
         <button type=\"submit\">Email me a code</button></form>\
         <p class=\"switch\"><a href=\"{sign_in}\">Back to sign-in</a></p>",
        application = escape(application),
        action = escape(action),
        email = escape(email),
        sign_in = escape(&link(action, parameters, None)),
    )
}

/// The emailed code and the new password. `email` is where the code went
/// (said once, whether or not it is a user's).
pub fn reset_password(
    application: &str,
    action: &str,
    parameters: &BTreeMap<String, String>,
    csrf: &str,
    email: &str,
    error: Option<&str>,
) -> String {
    let hidden = hidden_fields(parameters, csrf);
    let error = alert(error);
    let sent = match email {
        "" => format!("Enter the code we emailed you for your {} account.", escape(application)),
        email => format!(
            "If an account at {} has the email {}, we sent it a code. It works for {} minutes.",
            escape(application),
            escape(email),
            crate::areas::password_resets::TOKEN_TTL_MINUTES
        ),
    };
    format!(
        "<h1>Choose a new password</h1><p>{sent}</p>{error}\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <input type=\"hidden\" name=\"forgot_password\" value=\"reset\">\
         <label for=\"reset_code\">Code</label>\
         <input id=\"reset_code\" name=\"reset_code\" type=\"text\" autocomplete=\"one-time-code\" required>\
         <label for=\"password\">New password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" required>\
         <button type=\"submit\">Set password</button></form>\
         <p class=\"switch\"><a href=\"{sign_in}\">Back to sign-in</a></p>",
        action = escape(action),
        sign_in = escape(&link(action, parameters, None)),
    )
}

/// The second step of a sign-in: a code from the user's authenticator app
/// or a recovery code (`codes`), or their passkey (`passkey`), whichever
/// they have.
pub struct SecondFactorForm<'a> {
    pub application: &'a str,
    pub action: &'a str,
    pub parameters: &'a BTreeMap<String, String>,
    pub csrf: &'a str,
    pub challenge: &'a str,
    pub codes: bool,
    pub passkey: bool,
    pub error: Option<&'a str>,
}

impl SecondFactorForm<'_> {
    pub fn render(&self) -> String {
        let hidden = hidden_fields(self.parameters, self.csrf);
        let challenge = format!("<input type=\"hidden\" name=\"mfa_challenge\" value=\"{}\">", escape(self.challenge));
        let action = escape(self.action);
        let (asked, codes) = match self.codes {
            true => (
                "Enter the code from your authenticator app, or a recovery code.",
                format!(
                    "<form method=\"post\" action=\"{action}\">{hidden}{challenge}\
                     <label for=\"code\">Code</label>\
                     <input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" required>\
                     <button type=\"submit\">Continue</button></form>"
                ),
            ),
            false => ("Confirm it is you with your passkey.", String::new()),
        };
        let passkey = match self.passkey {
            true => format!(
                "<form method=\"post\" action=\"{action}\">{hidden}{challenge}\
                 <button type=\"submit\" name=\"passkey\" value=\"second_step\" class=\"secondary\">Use a passkey</button></form>"
            ),
            false => String::new(),
        };
        format!(
            "<h1>Sign in to {application}</h1><p>{asked}</p>{error}{codes}{passkey}",
            application = escape(self.application),
            error = alert(self.error),
        )
    }
}

/// A passkey's step: the browser's WebAuthn prompt behind a button, the
/// assertion posted back in the form (`passkey_credential`). The
/// ceremony's options ride in the form's `data-options`; `mfa_challenge`
/// is the sign-in's challenge when the passkey is its second step.
pub struct PasskeyForm<'a> {
    pub application: &'a str,
    pub action: &'a str,
    pub parameters: &'a BTreeMap<String, String>,
    pub csrf: &'a str,
    pub ceremony: &'a str,
    pub options: &'a serde_json::Value,
    pub mfa_challenge: Option<&'a str>,
}

impl PasskeyForm<'_> {
    pub fn render(&self) -> String {
        let hidden = hidden_fields(self.parameters, self.csrf);
        // Where the script says that the prompt failed.
        let error = "<p role=\"alert\" class=\"error\" id=\"passkey-error\"></p>";
        let challenge = self
            .mfa_challenge
            .map(|c| format!("<input type=\"hidden\" name=\"mfa_challenge\" value=\"{}\">", escape(c)))
            .unwrap_or_default();
        format!(
            "<h1>Sign in to {application}</h1><p>Use your passkey: your device asks for your fingerprint, face or PIN.</p>{error}\
             <noscript><p>Passkeys need JavaScript in this browser. Go back and sign in another way.</p></noscript>\
             <form method=\"post\" action=\"{action}\" id=\"passkey-form\" data-options=\"{options}\">{hidden}\
             <input type=\"hidden\" name=\"passkey\" value=\"assert\">\
             <input type=\"hidden\" name=\"passkey_ceremony\" value=\"{ceremony}\">{challenge}\
             <input type=\"hidden\" name=\"passkey_credential\" id=\"passkey-credential\" value=\"\">\
             <button type=\"button\" id=\"use-passkey\">Use a passkey</button></form>\
             <p class=\"switch\"><a href=\"{sign_in}\">Sign in another way</a></p>",
            application = escape(self.application),
            action = escape(self.action),
            options = escape(&self.options.to_string()),
            ceremony = escape(self.ceremony),
            sign_in = escape(&link(self.action, self.parameters, None)),
        )
    }
}

/// The passkey page's script: the options decoded for
/// `navigator.credentials.get()`, the assertion encoded back (binary
/// fields base64url, as `PublicKeyCredential.toJSON()` gives them) and the
/// form submitted.
pub const PASSKEY_SCRIPT: &str = r#"(() => {
  const form = document.getElementById("passkey-form");
  const fromB64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const toB64 = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  document.getElementById("use-passkey").addEventListener("click", async () => {
    const o = JSON.parse(form.dataset.options).publicKey;
    const allowCredentials = (o.allowCredentials || []).map((c) => ({ ...c, id: fromB64(c.id) }));
    try {
      const got = await navigator.credentials.get({ publicKey: { ...o, challenge: fromB64(o.challenge), allowCredentials } });
      document.getElementById("passkey-credential").value = JSON.stringify({
        id: got.id,
        rawId: toB64(got.rawId),
        type: got.type,
        response: {
          clientDataJSON: toB64(got.response.clientDataJSON),
          authenticatorData: toB64(got.response.authenticatorData),
          signature: toB64(got.response.signature),
          userHandle: got.response.userHandle && toB64(got.response.userHandle),
        },
        clientExtensionResults: got.getClientExtensionResults(),
      });
      form.submit();
    } catch (error) {
      document.getElementById("passkey-error").textContent = "The passkey was not used. Try again, or sign in another way.";
    }
  });
})();"#;

/// What a scope lets a client do, in words.
fn scope_in_words(scope: &str) -> &'static str {
    match scope {
        "openid" => "Know who you are",
        "profile" => "See your name and profile",
        "email" => "See your email address",
        "offline_access" => "Keep access while you are away",
        "organization" => "See your active organization and your role in it",
        _ => "Use a permission of the application",
    }
}

/// The consent form for a third-party client: what it asks for, in
/// words, and a choice to allow or deny.
pub fn consent(
    application: &str,
    client: &str,
    action: &str,
    parameters: &BTreeMap<String, String>,
    csrf: &str,
    scopes: &[String],
) -> String {
    let hidden = hidden_fields(parameters, csrf);
    let asked: String = scopes.iter().map(|s| format!("<li>{}</li>", escape(scope_in_words(s)))).collect();
    format!(
        "<h1>Allow {client}?</h1><p>{client} asks to use your {application} account to:</p><ul>{asked}</ul>\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <button type=\"submit\" name=\"consent\" value=\"allow\">Allow</button>\
         <button type=\"submit\" name=\"consent\" value=\"deny\" class=\"secondary\">Deny</button></form>",
        application = escape(application),
        client = escape(client),
        action = escape(action),
    )
}

/// The user's organizations, for a client granted the `organization`
/// scope: one button each, `(id, name, role)`.
pub fn choose_organization(
    client: &str,
    action: &str,
    parameters: &BTreeMap<String, String>,
    csrf: &str,
    choices: &[(String, &str, &str)],
) -> String {
    let hidden = hidden_fields(parameters, csrf);
    let buttons: String = choices
        .iter()
        .map(|(id, name, role)| {
            format!(
                "<button type=\"submit\" name=\"organization\" value=\"{id}\" class=\"secondary\">{name} \
                 <span class=\"role\">({role})</span></button>",
                id = escape(id),
                name = escape(name),
                role = escape(role),
            )
        })
        .collect();
    format!(
        "<h1>Choose an organization</h1><p>{client} will see the one you choose and your role in it.</p>\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <input type=\"hidden\" name=\"choose_organization\" value=\"1\">{buttons}</form>",
        client = escape(client),
        action = escape(action),
    )
}

/// RP-initiated logout's question, when no ID token vouches for the client.
pub fn confirm_sign_out(application: &str, action: &str, parameters: &BTreeMap<String, String>, csrf: &str) -> String {
    let hidden = hidden_fields(parameters, csrf);
    format!(
        "<h1>Sign out of {application}?</h1><p>An application asked to end your sign-in.</p>\
         <form method=\"post\" action=\"{action}\">{hidden}\
         <button type=\"submit\">Sign out</button></form>",
        application = escape(application),
        action = escape(action),
    )
}

/// A page that says what went wrong and goes nowhere.
pub fn message(heading: &str, text: &str) -> String {
    format!("<h1>{}</h1><p role=\"alert\">{}</p>", escape(heading), escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_and_the_accent_is_a_colour_or_ours() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;");
        assert_eq!(accent(&serde_json::json!({"primary_color": "#AbC123"})), "#AbC123");
        assert_eq!(accent(&serde_json::json!({"primary_color": "red;}body{x"})), "#1f4fd1");
        assert_eq!(accent(&serde_json::json!(null)), "#1f4fd1");
    }
}
