//! One NDJSON line of an import, checked before anything is written:
//! `{"external_id", "email", "password_hash"?, "profile"?,
//! "email_verified"?, "organizations"?}`.
use entity::profile_field;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{
    areas::{organizations, profile_fields, users, validate::Issues},
    crypto::foreign_hashes::{self, FirebaseScrypt},
};

/// A line as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sent {
    external_id: String,
    email: String,
    #[serde(default)]
    password_hash: Option<SentHash>,
    #[serde(default)]
    profile: Option<Value>,
    /// The source system had proven the address.
    #[serde(default)]
    email_verified: bool,
    #[serde(default)]
    organizations: Vec<SentOrganization>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SentHash {
    Text(String),
    Firebase(FirebaseScrypt),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SentOrganization {
    slug: String,
    /// For an organization the import creates; the slug when absent.
    #[serde(default)]
    name: Option<String>,
    role: String,
}

/// A line that passed every check.
#[derive(Clone, Debug)]
pub struct Line {
    /// Its number in the job, from 1.
    pub number: usize,
    pub external_id: String,
    pub email: String,
    pub password_hash: Option<String>,
    pub profile: Map<String, Value>,
    pub email_verified: bool,
    pub organizations: Vec<Membership>,
}

#[derive(Clone, Debug)]
pub struct Membership {
    pub slug: String,
    pub name: String,
    pub role: String,
}

/// Why a line was refused.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    pub line: usize,
    pub external_id: Option<String>,
    /// `malformed_line`, `validation_failed`, `invalid_password_hash`,
    /// `email_taken`, `duplicate_in_import` or `refused`.
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(line: usize, external_id: Option<&str>, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal { line, external_id: external_id.map(str::to_string), code, message: message.into() }
    }
}

/// Checks line `number` against the application's profile schema.
pub fn check(number: usize, text: &str, schema: &[profile_field::Model]) -> Result<Line, Refusal> {
    let sent: Sent = serde_json::from_str(text)
        .map_err(|err| Refusal::new(number, None, "malformed_line", format!("not an import line: {err}")))?;
    let id = Some(sent.external_id.as_str());
    let mut issues = Issues::default();
    issues.text("external_id", &sent.external_id, 255);
    let email = users::email(&mut issues, &sent.email);
    let profile = match sent.profile {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            issues.add("profile", "must be a JSON object");
            Map::new()
        }
    };
    profile_fields::check_profile(schema, &profile, &mut issues);
    let mut organizations = Vec::with_capacity(sent.organizations.len());
    for (i, organization) in sent.organizations.into_iter().enumerate() {
        if !organizations::is_slug(&organization.slug) {
            issues.add(&format!("organizations[{i}].slug"), "must match ^[a-z0-9][a-z0-9-]{0,62}$");
        }
        issues.role(&format!("organizations[{i}].role"), &organization.role);
        let name = organization.name.unwrap_or_else(|| organization.slug.clone());
        let name = issues.text(&format!("organizations[{i}].name"), &name, 255);
        organizations.push(Membership { slug: organization.slug, name, role: organization.role });
    }
    if let Err(invalid) = issues.finish() {
        return Err(Refusal::new(number, id, "validation_failed", invalid.to_string()));
    }
    let password_hash = match sent.password_hash {
        None => None,
        Some(SentHash::Text(text)) => Some(foreign_hashes::parse(&text).map(|_| text)),
        Some(SentHash::Firebase(exported)) => Some(exported.to_stored()),
    }
    .transpose()
    .map_err(|refused| Refusal::new(number, id, "invalid_password_hash", format!("`password_hash` {refused}")))?;
    Ok(Line {
        number,
        external_id: sent.external_id,
        email,
        password_hash,
        profile,
        email_verified: sent.email_verified,
        organizations,
    })
}

/// The job's lines with their numbers, blank lines left out.
pub fn numbered(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line)).filter(|(_, line)| !line.trim().is_empty())
}
