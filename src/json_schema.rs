//! JSON Schema shapes that types declare beside their fields
//! (`#[schema(schema_with = …)]`), written as the literal schema. Below
//! every area (it imports only utoipa); the request fields whose rules
//! come from an area's checks are in `openapi::fields`.
use serde_json::{json, Value};
use utoipa::openapi::{RefOr, Schema};

/// A query filter: a UUID, or empty for none.
pub fn filter_uuid() -> RefOr<Schema> {
    literal(json!({"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "maxLength": 0}]}), false)
}

/// A query filter: an RFC 3339 date-time, or empty for none.
pub fn filter_time() -> RefOr<Schema> {
    literal(json!({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "maxLength": 0}]}), false)
}

/// Any JSON value (an entitlement's value: a boolean, a limit or a config).
pub fn any_json() -> RefOr<Schema> {
    use utoipa::openapi::{schema::SchemaType, ObjectBuilder};
    RefOr::T(Schema::Object(ObjectBuilder::new().schema_type(SchemaType::AnyValue).build()))
}

/// `value` as a schema; `nullable` also takes `null`. Panics if utoipa
/// would drop a keyword (so the document says all that the literal does).
pub fn literal(mut value: Value, nullable: bool) -> RefOr<Schema> {
    if nullable {
        let kind = value["type"].clone();
        value["type"] = json!([kind, "null"]);
        if let Some(values) = value.get_mut("enum").and_then(Value::as_array_mut) {
            values.push(Value::Null);
        }
    }
    let parsed: RefOr<Schema> = serde_json::from_value(value.clone()).expect("a literal schema is valid");
    let kept = serde_json::to_value(&parsed).expect("a schema serialises");
    assert_eq!(kept, value, "utoipa keeps every keyword of a literal schema");
    parsed
}
