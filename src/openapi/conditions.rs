//! Rules across fields that no field's own schema can state: in these
//! request schemas one field (`kind`, `field_type`, `channel`) decides what
//! another takes. Each is rewritten, on the JSON document, as a `oneOf` with
//! one branch per value of the deciding field, so a client generator or a
//! fuzzer knows, for instance, that a `limit` feature's `default_value` is a
//! non-negative integer. And a domain claim's refusal of consumer mail
//! domains (`not`, which utoipa's schema type does not keep).
use serde_json::{json, Value};

use super::fields::{email_of, options_of, PHONE};
use crate::areas::{entitlements, profile_fields, sso_domains};

/// What a branch gives the decided field: its schema, and whether it is required.
struct Takes(Value, bool);

pub fn add(document: &mut Value) {
    let schemas = document.pointer_mut("/components/schemas").expect("the document has schemas");

    let default_value = |kind| match kind {
        entitlements::BOOLEAN => Takes(json!({"type": "boolean"}), true),
        entitlements::LIMIT => Takes(json!({"type": "integer", "minimum": 0, "maximum": i64::MAX}), true),
        _ => Takes(json!({}), true),
    };
    split(
        &mut schemas["PutFeatureRequest"],
        "kind",
        "default_value",
        entitlements::KINDS.map(|k| (k, default_value(k))),
    );

    let options = |field_type| match profile_fields::is_select(field_type) {
        true => Takes(options_of(), true),
        false => Takes(json!({"type": "null"}), false),
    };
    let field_types = profile_fields::FIELD_TYPES.map(|t| (t, options(t)));
    split(&mut schemas["CreateProfileFieldRequest"], "field_type", "options", field_types);

    let recipients =
        [("email", Takes(email_of(), true)), ("sms", Takes(json!({"type": "string", "pattern": PHONE}), true))];
    split(&mut schemas["TestMessagingProviderRequest"], "channel", "to", recipients);

    schemas["ClaimDomainRequest"]["properties"]["domain"]["not"] = json!({"enum": sso_domains::CONSUMER_DOMAINS});
}

/// `schema` as one branch per value of `by`: the same object with `by`
/// fixed to the value and `field` as the value says.
fn split<const N: usize>(schema: &mut Value, by: &str, field: &str, branches: [(&str, Takes); N]) {
    assert!(schema["properties"][by].is_object(), "a request schema decided by `{by}` is in the document");
    let description = schema.as_object_mut().and_then(|o| o.remove("description"));
    let one_of: Vec<Value> = branches
        .into_iter()
        .map(|(value, Takes(mut takes, required))| {
            let mut branch = schema.clone();
            branch["properties"][by] = json!({"type": "string", "const": value});
            if let Some(described) = branch["properties"][field].get("description") {
                takes["description"] = described.clone();
            }
            branch["properties"][field] = takes;
            let names = branch["required"].as_array_mut().expect("a decided schema lists its required fields");
            names.retain(|name| name != field);
            if required {
                names.push(json!(field));
            }
            branch
        })
        .collect();
    *schema = json!({"oneOf": one_of});
    if let Some(description) = description {
        schema["description"] = description;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    fn branch<'a>(schemas: &'a Value, name: &str, by: &str, value: &str) -> &'a Value {
        let branches = schemas[name]["oneOf"].as_array().unwrap();
        branches.iter().find(|b| b["properties"][by]["const"] == value).unwrap()
    }

    #[test]
    fn a_deciding_field_gives_each_value_its_own_branch() {
        let document: Value = serde_json::from_str(super::super::json()).unwrap();
        let schemas = &document["components"]["schemas"];
        let limit = branch(schemas, "PutFeatureRequest", "kind", "limit");
        assert_eq!(limit["properties"]["default_value"]["minimum"], 0);
        assert!(limit["required"].as_array().unwrap().contains(&json!("default_value")));
        let select = branch(schemas, "CreateProfileFieldRequest", "field_type", "select");
        assert_eq!(select["properties"]["options"]["type"], "array");
        assert!(select["required"].as_array().unwrap().contains(&json!("options")));
        let text = branch(schemas, "CreateProfileFieldRequest", "field_type", "text");
        assert_eq!(text["properties"]["options"]["type"], "null");
        let sms = branch(schemas, "TestMessagingProviderRequest", "channel", "sms");
        assert_eq!(sms["properties"]["to"]["pattern"], super::PHONE);
        assert_eq!(sms["additionalProperties"], false, "each branch keeps the object's rules");
    }
}
