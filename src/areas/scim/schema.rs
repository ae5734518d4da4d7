//! The resources a directory serves, as RFC 7643 describes them: the
//! attributes of Users and Groups that Gatehouse keeps, published at
//! `/Schemas`, `/ResourceTypes` and `/ServiceProviderConfig`, and the one
//! place a resource sent by a directory is checked and put in canonical
//! form ([`normalize`]). Attributes that the schema does not name (an
//! extension such as the enterprise User's) are ignored, as RFC 7644
//! section 3.3 allows, so that Okta and Entra ID provision unchanged.
use serde_json::{json, Map, Value};

use super::ScimError;

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_RESPONSE: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// The longest string value kept.
pub const MAX_STRING: usize = 1024;
/// The most values of a multi-valued attribute (a group's members).
pub const MAX_VALUES: usize = 10_000;

/// The two kinds of resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    User,
    Group,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "User",
            Kind::Group => "Group",
        }
    }

    pub fn of(name: &str) -> Option<Kind> {
        match name {
            "User" => Some(Kind::User),
            "Group" => Some(Kind::Group),
            _ => None,
        }
    }

    /// The collection's path segment (`Users`, `Groups`).
    pub fn endpoint(self) -> &'static str {
        match self {
            Kind::User => "Users",
            Kind::Group => "Groups",
        }
    }

    pub fn schema_urn(self) -> &'static str {
        match self {
            Kind::User => USER_SCHEMA,
            Kind::Group => GROUP_SCHEMA,
        }
    }

    /// The attribute that names a resource, unique in its directory.
    pub fn key_attribute(self) -> &'static str {
        match self {
            Kind::User => "userName",
            Kind::Group => "displayName",
        }
    }

    pub fn attributes(self) -> &'static [Attribute] {
        match self {
            Kind::User => USER,
            Kind::Group => GROUP,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Type {
    String,
    Boolean,
    Reference(&'static [&'static str]),
    Complex(&'static [Attribute]),
}

/// One attribute of a schema.
#[derive(Debug)]
pub struct Attribute {
    pub name: &'static str,
    pub kind: Type,
    pub multi_valued: bool,
    pub required: bool,
    pub case_exact: bool,
    pub mutability: &'static str,
    pub uniqueness: &'static str,
    pub description: &'static str,
}

const fn attribute(name: &'static str, kind: Type, description: &'static str) -> Attribute {
    Attribute {
        name,
        kind,
        multi_valued: false,
        required: false,
        case_exact: false,
        mutability: "readWrite",
        uniqueness: "none",
        description,
    }
}

const NAME: &[Attribute] = &[
    attribute("formatted", Type::String, "The full name, as displayed."),
    attribute("familyName", Type::String, "The family name."),
    attribute("givenName", Type::String, "The given name."),
];

const EMAIL: &[Attribute] = &[
    attribute("value", Type::String, "The address; the primary one (or the first) is the Gatehouse user's email."),
    attribute("type", Type::String, "A label: work, home or other."),
    attribute("primary", Type::Boolean, "Whether this is the primary address."),
];

const MEMBER: &[Attribute] = &[
    Attribute {
        mutability: "immutable",
        case_exact: true,
        ..attribute("value", Type::String, "The member's id in the directory.")
    },
    Attribute {
        mutability: "immutable",
        case_exact: true,
        ..attribute("$ref", Type::Reference(&["User", "Group"]), "The member's URI.")
    },
];

const USER: &[Attribute] = &[
    Attribute {
        required: true,
        uniqueness: "server",
        ..attribute("userName", Type::String, "Unique in the directory, compared without case.")
    },
    attribute("name", Type::Complex(NAME), "The user's name."),
    attribute("displayName", Type::String, "The name displayed for the user."),
    Attribute { multi_valued: true, ..attribute("emails", Type::Complex(EMAIL), "The user's email addresses.") },
    attribute("active", Type::Boolean, "false deprovisions: the membership ends and every session is revoked."),
];

const GROUP: &[Attribute] = &[
    Attribute {
        required: true,
        uniqueness: "server",
        ..attribute("displayName", Type::String, "Unique in the directory, compared without case; maps to a role.")
    },
    Attribute { multi_valued: true, ..attribute("members", Type::Complex(MEMBER), "The group's users and groups.") },
];

/// `externalId`: a common attribute of every resource (RFC 7643 section 3.1).
pub const EXTERNAL_ID: Attribute = Attribute {
    case_exact: true,
    ..attribute("externalId", Type::String, "The resource's id in the directory's own system.")
};

/// The attribute of `kind` named `name` (compared without case, as RFC
/// 7643 section 2.1 says), `externalId` included.
pub fn find(kind: Kind, name: &str) -> Option<&'static Attribute> {
    let name = name.strip_prefix(kind.schema_urn()).map(|rest| rest.trim_start_matches(':')).unwrap_or(name);
    kind.attributes().iter().chain(std::iter::once(&EXTERNAL_ID)).find(|a| a.name.eq_ignore_ascii_case(name))
}

pub fn find_in(attributes: &'static [Attribute], name: &str) -> Option<&'static Attribute> {
    attributes.iter().find(|a| a.name.eq_ignore_ascii_case(name))
}

/// Checks a resource a directory sent and answers it in canonical form:
/// attribute names as the schema spells them, unknown attributes and the
/// read-only ones (`id`, `meta`, `schemas`) left out, unassigned ones
/// (null, an empty list) left out, booleans sent as strings read.
pub fn normalize(kind: Kind, sent: &Map<String, Value>) -> Result<Map<String, Value>, ScimError> {
    if let Some(schemas) = sent.iter().find(|(k, _)| k.eq_ignore_ascii_case("schemas")).map(|(_, v)| v) {
        let names_core = schemas.as_array().is_some_and(|list| list.iter().any(|s| s == kind.schema_urn()));
        if !names_core {
            return Err(ScimError::invalid_syntax(format!("`schemas` must include {}", kind.schema_urn())));
        }
    }
    let mut out = Map::new();
    for (name, value) in sent {
        let Some(attribute) = find(kind, name) else { continue };
        if let Some(value) = normalize_value(attribute, value, attribute.name)? {
            out.insert(attribute.name.to_string(), value);
        }
    }
    check_required(kind, &out)?;
    Ok(out)
}

/// The required attributes are present (after a change, too).
pub fn check_required(kind: Kind, resource: &Map<String, Value>) -> Result<(), ScimError> {
    for attribute in kind.attributes().iter().filter(|a| a.required) {
        match resource.get(attribute.name) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(ScimError::invalid_value(format!("`{}` is required", attribute.name))),
        }
    }
    Ok(())
}

/// One attribute's value in canonical form; `None` when unassigned.
pub fn normalize_value(attribute: &Attribute, value: &Value, at: &str) -> Result<Option<Value>, ScimError> {
    if value.is_null() {
        return Ok(None);
    }
    if !attribute.multi_valued {
        return single(attribute, value, at);
    }
    let Value::Array(items) = value else {
        return Err(ScimError::invalid_value(format!("`{at}` is multi-valued: it must be a list")));
    };
    if items.len() > MAX_VALUES {
        return Err(ScimError::invalid_value(format!("`{at}` holds at most {MAX_VALUES} values")));
    }
    let mut kept = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(item) = single(attribute, item, &format!("{at}[{i}]"))? {
            if !kept.contains(&item) {
                kept.push(item);
            }
        }
    }
    let primaries = kept.iter().filter(|v| v.get("primary") == Some(&Value::Bool(true))).count();
    if primaries > 1 {
        return Err(ScimError::invalid_value(format!("`{at}`: at most one value is primary")));
    }
    Ok((!kept.is_empty()).then_some(Value::Array(kept)))
}

fn single(attribute: &Attribute, value: &Value, at: &str) -> Result<Option<Value>, ScimError> {
    let wrong = |what: &str| ScimError::invalid_value(format!("`{at}` must be {what}"));
    match (attribute.kind, value) {
        (_, Value::Null) => Ok(None),
        (Type::String | Type::Reference(_), Value::String(s)) => {
            if s.chars().count() > MAX_STRING {
                return Err(ScimError::invalid_value(format!("`{at}` is longer than {MAX_STRING} characters")));
            }
            if s.chars().any(char::is_control) {
                return Err(ScimError::invalid_value(format!("`{at}` holds a control character")));
            }
            Ok(Some(value.clone()))
        }
        (Type::String | Type::Reference(_), _) => Err(wrong("a string")),
        (Type::Boolean, Value::Bool(_)) => Ok(Some(value.clone())),
        // Entra ID sends `"True"` and `"False"`.
        (Type::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(Value::Bool(true))),
        (Type::Boolean, Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(Value::Bool(false))),
        (Type::Boolean, _) => Err(wrong("true or false")),
        (Type::Complex(subs), Value::Object(fields)) => {
            let mut out = Map::new();
            for (name, value) in fields {
                let Some(sub) = find_in(subs, name) else { continue };
                if let Some(value) = single(sub, value, &format!("{at}.{}", sub.name))? {
                    out.insert(sub.name.to_string(), value);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        (Type::Complex(_), _) => Err(wrong("an object")),
    }
}

fn describe(attribute: &Attribute) -> Value {
    let mut out = json!({
        "name": attribute.name,
        "type": match attribute.kind {
            Type::String => "string",
            Type::Boolean => "boolean",
            Type::Reference(_) => "reference",
            Type::Complex(_) => "complex",
        },
        "multiValued": attribute.multi_valued,
        "description": attribute.description,
        "required": attribute.required,
        "caseExact": attribute.case_exact,
        "mutability": attribute.mutability,
        "returned": "default",
        "uniqueness": attribute.uniqueness,
    });
    match attribute.kind {
        Type::Reference(types) => out["referenceTypes"] = json!(types),
        Type::Complex(subs) => out["subAttributes"] = Value::Array(subs.iter().map(describe).collect()),
        _ => {}
    }
    out
}

/// The `/Schemas` entry of `kind`.
pub fn schema_document(kind: Kind, base_url: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": kind.schema_urn(),
        "name": kind.as_str(),
        "description": format!("{} of the organization's directory", kind.endpoint()),
        "attributes": kind.attributes().iter().map(describe).collect::<Vec<_>>(),
        "meta": {"resourceType": "Schema", "location": format!("{base_url}/Schemas/{}", kind.schema_urn())},
    })
}

/// The `/ResourceTypes` entry of `kind`.
pub fn resource_type_document(kind: Kind, base_url: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": kind.as_str(),
        "name": kind.as_str(),
        "endpoint": format!("/{}", kind.endpoint()),
        "description": format!("{} of the organization's directory", kind.endpoint()),
        "schema": kind.schema_urn(),
        "schemaExtensions": [],
        "meta": {"resourceType": "ResourceType", "location": format!("{base_url}/ResourceTypes/{}", kind.as_str())},
    })
}

/// What the server supports (RFC 7643 section 5).
pub fn service_provider_config(base_url: &str, max_results: usize) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": "https://github.com/gatehouse-iam/gatehouse/blob/main/docs/guides/scim.md",
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": max_results},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": true},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "The directory's token (`scim_…`), shown once when the directory is created or its token rotated.",
            "primary": true,
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base_url}/ServiceProviderConfig")},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn names_are_read_without_case_and_unknown_ones_are_dropped() {
        let sent = object(json!({
            "schemas": [USER_SCHEMA, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
            "USERNAME": "Ada@Example.com",
            "Active": "False",
            "emails": [{"Value": "ada@example.com", "primary": true, "display": "x"}, null],
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "R&D"},
            "id": "ignored",
            "name": {},
        }));
        let kept = normalize(Kind::User, &sent).unwrap();
        assert_eq!(
            Value::Object(kept),
            json!({"userName": "Ada@Example.com", "active": false, "emails": [{"value": "ada@example.com", "primary": true}]})
        );
    }

    #[test]
    fn a_wrong_shape_a_missing_name_and_two_primaries_are_refused() {
        let refused = |v: Value| normalize(Kind::User, &object(v)).unwrap_err().scim_type;
        assert_eq!(refused(json!({"userName": 3})), Some("invalidValue"));
        assert_eq!(refused(json!({"displayName": "x"})), Some("invalidValue"));
        assert_eq!(refused(json!({"userName": "a", "emails": {"value": "a@b.c"}})), Some("invalidValue"));
        let two = json!({"userName": "a", "emails": [{"value": "a@b.c", "primary": true}, {"value": "d@b.c", "primary": true}]});
        assert_eq!(refused(two), Some("invalidValue"));
        assert_eq!(refused(json!({"schemas": [GROUP_SCHEMA], "userName": "a"})), Some("invalidSyntax"));
        assert_eq!(refused(json!({"userName": "a\u{0}b"})), Some("invalidValue"));
    }
}
