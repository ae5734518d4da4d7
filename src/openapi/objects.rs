//! Free-form objects (a profile, branding, an audit row's `data`) are open:
//! utoipa writes `Object` as `{"type": "object"}` alone, which client
//! generators read as an object that may hold nothing (`Record<string,
//! never>` from openapi-typescript). Every object schema that declares no
//! properties says `additionalProperties: true` here, on the JSON document.
use serde_json::Value;

pub fn open(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let object = match map.get("type") {
                Some(Value::String(kind)) => kind == "object",
                Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
                _ => false,
            };
            let declared = ["properties", "additionalProperties", "allOf", "oneOf", "anyOf", "$ref"];
            if object && !declared.iter().any(|key| map.contains_key(*key)) {
                map.insert("additionalProperties".into(), Value::Bool(true));
            }
            map.values_mut().for_each(open);
        }
        Value::Array(items) => items.iter_mut().for_each(open),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn profiles_branding_and_audit_data_take_any_property() {
        let document: serde_json::Value = serde_json::from_str(super::super::json()).unwrap();
        let schemas = &document["components"]["schemas"];
        for (schema, field) in [
            ("SignUpRequest", "profile"),
            ("UserView", "profile"),
            ("AuditRow", "data"),
            ("ApplicationView", "branding"),
        ] {
            assert_eq!(schemas[schema]["properties"][field]["additionalProperties"], true, "{schema}.{field}");
        }
        assert!(schemas["WebhookView"]["additionalProperties"].is_null(), "declared objects stay as they are");
    }
}
