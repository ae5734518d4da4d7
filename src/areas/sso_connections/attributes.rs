//! An SSO connection's attribute mapping: which of the provider's claims
//! (its ID token's, then its user-info endpoint's) holds the user's email
//! address, and which fill the application's profile fields when a first
//! sign-in makes the user. Microsoft Entra ID, for one, often gives the
//! address as `preferred_username` or `upn` rather than `email`.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::areas::validate::Issues;

/// The claim read for the address when the mapping names none.
pub const EMAIL_CLAIM: &str = "email";
pub const MAX_PROFILE_MAPPINGS: usize = 50;
const MAX_CLAIM_NAME: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttributeMapping {
    /// The claim that holds the user's email address. Default `email`.
    #[serde(default = "email_claim")]
    #[schema(min_length = 1, max_length = 128)]
    pub email: String,
    /// A profile field's key → the claim that fills it when a first
    /// sign-in makes the user (at most 50).
    #[serde(default)]
    pub profile: BTreeMap<String, String>,
}

fn email_claim() -> String {
    EMAIL_CLAIM.to_string()
}

impl Default for AttributeMapping {
    fn default() -> Self {
        AttributeMapping { email: email_claim(), profile: BTreeMap::new() }
    }
}

impl AttributeMapping {
    /// The mapping a connection's row holds.
    pub fn of(stored: &Value) -> AttributeMapping {
        serde_json::from_value(stored.clone()).unwrap_or_default()
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Checks the claim names and that each profile key is one of the
    /// application's profile fields (`profile_keys`).
    pub fn check(&self, issues: &mut Issues, profile_keys: &[String]) {
        let claim = |name: &str| {
            (1..=MAX_CLAIM_NAME).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_graphic() && b != b'"')
        };
        if !claim(&self.email) {
            issues.add("attribute_mapping.email", "must be a claim name: 1 to 128 printable characters");
        }
        if self.profile.len() > MAX_PROFILE_MAPPINGS {
            issues.add("attribute_mapping.profile", format!("at most {MAX_PROFILE_MAPPINGS} entries"));
        }
        for (key, name) in &self.profile {
            let place = format!("attribute_mapping.profile.{}", key.escape_debug());
            if !profile_keys.contains(key) {
                issues.add(&place, "is not a profile field of this application");
            } else if !claim(name) {
                issues.add(&place, "must be a claim name: 1 to 128 printable characters");
            }
        }
    }

    /// Every claim the mapping reads.
    pub fn claims(&self) -> Vec<String> {
        std::iter::once(self.email.clone()).chain(self.profile.values().cloned()).collect()
    }

    /// The address the claims give: `None` for a missing or non-string claim.
    pub fn email_in(&self, claims: &Map<String, Value>) -> Option<String> {
        claims.get(&self.email).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
    }

    /// The profile values the claims give (a claim the provider did not
    /// send leaves its field out).
    pub fn profile_in(&self, claims: &Map<String, Value>) -> Map<String, Value> {
        self.profile
            .iter()
            .filter_map(|(key, name)| claims.get(name).filter(|v| !v.is_null()).map(|v| (key.clone(), v.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_mapping_reads_the_address_and_the_profile_from_the_claims() {
        let mapping: AttributeMapping = serde_json::from_value(
            json!({"email": "upn", "profile": {"department": "dept", "title": "job_title", "cost_center": "cc"}}),
        )
        .unwrap();
        let claims = json!({"upn": "ada@acme.example", "email": "other@acme.example", "dept": "R&D",
            "job_title": null, "cc": 42});
        let claims = claims.as_object().unwrap();
        assert_eq!(mapping.email_in(claims).as_deref(), Some("ada@acme.example"));
        assert_eq!(Value::Object(mapping.profile_in(claims)), json!({"department": "R&D", "cost_center": 42}));
        assert_eq!(AttributeMapping::of(&json!({})), AttributeMapping::default());
        assert_eq!(AttributeMapping::default().email_in(claims).as_deref(), Some("other@acme.example"));
        assert_eq!(mapping.email_in(json!({"upn": 7}).as_object().unwrap()), None);
    }

    #[test]
    fn bad_mappings_name_their_place() {
        let mapping: AttributeMapping =
            serde_json::from_value(json!({"email": "", "profile": {"nope": "x", "department": "a b"}})).unwrap();
        let mut issues = Issues::default();
        mapping.check(&mut issues, &["department".to_string()]);
        let message = issues.finish().unwrap_err().to_string();
        for place in
            ["attribute_mapping.email", "attribute_mapping.profile.nope", "attribute_mapping.profile.department"]
        {
            assert!(message.contains(place), "{place}: {message}");
        }
        assert!(serde_json::from_value::<AttributeMapping>(json!({"mail": "x"})).is_err(), "unknown fields refused");
    }
}
