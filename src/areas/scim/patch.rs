//! PATCH (RFC 7644 section 3.5.2): `add`, `remove` and `replace` applied in
//! order to a resource's attributes, all or nothing. The result is checked
//! again as a whole resource ([`schema::normalize`]) before it is stored.
//! Paths take the RFC's forms (`active`, `name.givenName`,
//! `emails[type eq "work"].value`, with or without the schema's URN), and
//! the forms identity providers send beside them: operation names in any
//! case, and Entra ID's `remove` of `members` with the members to remove as
//! its value.
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    filter::{lookup, AttrPath, Filter, Op},
    schema::{self, Kind, Type},
    ScimError,
};

/// The most operations in one request.
pub const MAX_OPERATIONS: usize = 1000;

#[derive(Debug, Deserialize)]
pub struct PatchRequest {
    #[serde(default)]
    schemas: Vec<String>,
    #[serde(rename = "Operations", alias = "operations")]
    operations: Vec<Operation>,
}

#[derive(Debug, Deserialize)]
pub struct Operation {
    op: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    value: Option<Value>,
}

/// A parsed path: the attribute, which of its values (a filter), and the
/// sub-attribute of each.
struct Target {
    attribute: &'static schema::Attribute,
    filter: Option<Filter>,
    sub: Option<&'static schema::Attribute>,
}

impl PatchRequest {
    pub fn parse(body: &[u8]) -> Result<PatchRequest, ScimError> {
        let request: PatchRequest = serde_json::from_slice(body)
            .map_err(|e| ScimError::invalid_syntax(format!("not a PatchOp request: {e}")))?;
        if !request.schemas.iter().any(|s| s == schema::PATCH_OP) {
            return Err(ScimError::invalid_syntax(format!("`schemas` must be [\"{}\"]", schema::PATCH_OP)));
        }
        if request.operations.len() > MAX_OPERATIONS {
            return Err(ScimError::invalid_value(format!("at most {MAX_OPERATIONS} operations")));
        }
        Ok(request)
    }

    /// The resource after every operation, in canonical form.
    pub fn apply(&self, kind: Kind, resource: &Map<String, Value>) -> Result<Map<String, Value>, ScimError> {
        let mut working = resource.clone();
        for operation in &self.operations {
            operation.apply(kind, &mut working)?;
        }
        schema::normalize(kind, &working)
    }
}

impl Operation {
    fn apply(&self, kind: Kind, resource: &mut Map<String, Value>) -> Result<(), ScimError> {
        let op = self.op.to_ascii_lowercase();
        match (op.as_str(), &self.path) {
            ("add" | "replace", None) => {
                let Some(Value::Object(fields)) = &self.value else {
                    return Err(ScimError::invalid_value(format!("`{op}` without a path takes an object")));
                };
                for (name, value) in fields {
                    if read_only(name) {
                        continue;
                    }
                    if let Some(target) = target(kind, name)? {
                        set(resource, &target, value, op == "add")?;
                    }
                }
                Ok(())
            }
            ("add" | "replace", Some(path)) => {
                let value =
                    self.value.as_ref().ok_or_else(|| ScimError::invalid_value(format!("`{op}` needs a value")))?;
                match target(kind, path)? {
                    Some(target) => set(resource, &target, value, op == "add"),
                    None => Ok(()),
                }
            }
            ("remove", None) => Err(ScimError::no_target("`remove` needs a path")),
            ("remove", Some(path)) => match target(kind, path)? {
                Some(target) => remove(resource, &target, self.value.as_ref()),
                None => Ok(()),
            },
            _ => Err(ScimError::invalid_syntax(format!("`{}` is not add, remove or replace", self.op))),
        }
    }
}

fn read_only(name: &str) -> bool {
    ["id", "meta", "schemas"].iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// The attribute a path names; `None` for one the schema does not have
/// (an extension's), which is ignored as the whole resource's are.
fn target(kind: Kind, path: &str) -> Result<Option<Target>, ScimError> {
    let (head, filter, rest) = match path.find('[') {
        Some(open) => {
            let close = path
                .rfind(']')
                .filter(|&c| c > open)
                .ok_or_else(|| ScimError::invalid_path(format!("`{path}`: a bracket is not closed")))?;
            let filter = Filter::parse(&path[open + 1..close]).map_err(|e| ScimError::invalid_path(e.detail))?;
            let rest = &path[close + 1..];
            let sub = match rest {
                "" => None,
                _ => Some(rest.strip_prefix('.').ok_or_else(|| ScimError::invalid_path(format!("`{path}`")))?),
            };
            (&path[..open], Some(filter), sub.map(str::to_string))
        }
        None => {
            let parsed = AttrPath::parse(path)?;
            let head_len = path.len() - parsed.sub.as_ref().map_or(0, |s| s.len() + 1);
            (&path[..head_len], None, parsed.sub)
        }
    };
    let attribute = AttrPath::parse(head)?.attribute;
    if read_only(&attribute) {
        return Err(ScimError::mutability(format!("`{attribute}` is read-only")));
    }
    let Some(attribute) = schema::find(kind, &attribute).or_else(|| schema::find(kind, head)) else {
        return Ok(None);
    };
    let sub = match (&rest, attribute.kind) {
        (None, _) => None,
        (Some(name), Type::Complex(subs)) => match schema::find_in(subs, name) {
            Some(sub) => Some(sub),
            None => return Ok(None),
        },
        (Some(name), _) => return Err(ScimError::invalid_path(format!("`{}` has no `{name}`", attribute.name))),
    };
    if filter.is_some() && !attribute.multi_valued {
        return Err(ScimError::invalid_path(format!("`{}` is not multi-valued", attribute.name)));
    }
    Ok(Some(Target { attribute, filter, sub }))
}

/// `add` (`adding`) or `replace` at a target.
fn set(resource: &mut Map<String, Value>, target: &Target, value: &Value, adding: bool) -> Result<(), ScimError> {
    let name = target.attribute.name;
    match (&target.filter, target.sub) {
        (Some(filter), sub) => {
            // Taken out and put back: a refusal discards the whole working copy.
            let mut items = match resource.remove(name) {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            };
            let mut hit = false;
            for item in items.iter_mut() {
                let Value::Object(fields) = item else { continue };
                if !filter.matches(fields) {
                    continue;
                }
                hit = true;
                match (sub, value) {
                    (Some(sub), _) => {
                        fields.insert(sub.name.to_string(), value.clone());
                    }
                    (None, Value::Object(new)) if adding => fields.extend(new.clone()),
                    (None, new) => *item = new.clone(),
                }
            }
            if !hit {
                let made = made_by(filter, sub, value)
                    .ok_or_else(|| ScimError::no_target(format!("no value of `{name}` matches the filter")))?;
                items.push(made);
            }
            resource.insert(name.to_string(), Value::Array(items));
        }
        (None, Some(sub)) => {
            let slot = resource.entry(name.to_string()).or_insert_with(|| Value::Object(Map::new()));
            match slot {
                Value::Object(fields) => {
                    fields.insert(sub.name.to_string(), value.clone());
                }
                // A sub-attribute of every value of a multi-valued attribute.
                Value::Array(items) => {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        item.insert(sub.name.to_string(), value.clone());
                    }
                }
                other => *other = Value::Object(Map::from_iter([(sub.name.to_string(), value.clone())])),
            }
        }
        (None, None) if target.attribute.multi_valued && adding => {
            let new = match value {
                Value::Array(items) => items.clone(),
                one => vec![one.clone()],
            };
            let slot = resource.entry(name.to_string()).or_insert_with(|| Value::Array(Vec::new()));
            match slot {
                Value::Array(items) => {
                    for item in new {
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    }
                }
                other => *other = Value::Array(new),
            }
        }
        (None, None) => match (resource.get_mut(name), value) {
            (Some(Value::Object(fields)), Value::Object(new)) if adding => fields.extend(new.clone()),
            _ => {
                resource.insert(name.to_string(), value.clone());
            }
        },
    }
    Ok(())
}

/// The value that a change through `emails[type eq "work"].value` makes
/// when no value matches: `{"type": "work", "value": …}`. Entra ID sets a
/// user's first work address this way. Only a filter of that one form
/// names a value to make; any other finds no target.
fn made_by(filter: &Filter, sub: Option<&schema::Attribute>, value: &Value) -> Option<Value> {
    let Filter::Compare(path, Op::Eq, wanted) = filter else { return None };
    if path.sub.is_some() {
        return None;
    }
    let mut made = match (sub, value) {
        (Some(sub), value) => Map::from_iter([(sub.name.to_string(), value.clone())]),
        (None, Value::Object(fields)) => fields.clone(),
        (None, _) => return None,
    };
    made.insert(path.attribute.clone(), wanted.clone());
    Some(Value::Object(made))
}

fn remove(resource: &mut Map<String, Value>, target: &Target, value: Option<&Value>) -> Result<(), ScimError> {
    let name = target.attribute.name;
    if target.attribute.required && target.filter.is_none() && target.sub.is_none() {
        return Err(ScimError::mutability(format!("`{name}` is required")));
    }
    match (&target.filter, target.sub, value) {
        (Some(filter), sub, _) => {
            let Some(Value::Array(items)) = resource.get_mut(name) else {
                return Err(ScimError::no_target(format!("`{name}` has no values")));
            };
            let before = items.len();
            match sub {
                None => items.retain(|item| !item.as_object().is_some_and(|f| filter.matches(f))),
                Some(sub) => {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        if filter.matches(item) {
                            item.remove(sub.name);
                        }
                    }
                }
            }
            if sub.is_none() && items.len() == before {
                return Err(ScimError::no_target(format!("no value of `{name}` matches the filter")));
            }
        }
        // Entra ID: `{"op": "Remove", "path": "members", "value": [{"value": "…"}]}`.
        (None, None, Some(Value::Array(listed))) if target.attribute.multi_valued => {
            let ids: Vec<&Value> =
                listed.iter().filter_map(|v| v.as_object().and_then(|o| lookup(o, "value"))).collect();
            if let Some(Value::Array(items)) = resource.get_mut(name) {
                items.retain(|item| {
                    !item.as_object().and_then(|o| lookup(o, "value")).is_some_and(|v| ids.contains(&v))
                });
            }
        }
        (None, Some(sub), _) => match resource.get_mut(name) {
            Some(Value::Object(fields)) => {
                fields.remove(sub.name);
            }
            Some(Value::Array(items)) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    item.remove(sub.name);
                }
            }
            _ => {}
        },
        (None, None, _) => {
            resource.remove(name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn patched(kind: Kind, start: Value, operations: Value) -> Result<Value, ScimError> {
        let body = json!({"schemas": [schema::PATCH_OP], "Operations": operations});
        let request = PatchRequest::parse(body.to_string().as_bytes())?;
        request.apply(kind, start.as_object().unwrap()).map(Value::Object)
    }

    fn ada() -> Value {
        json!({"userName": "ada", "emails": [{"value": "ada@work.com", "type": "work", "primary": true}, {"value": "ada@home.org", "type": "home"}], "active": true})
    }

    #[test]
    fn the_rfc_and_the_identity_providers_forms_apply() {
        let out = patched(Kind::User, ada(), json!([{"op": "Replace", "value": {"active": "False"}}])).unwrap();
        assert_eq!(out["active"], false);
        let out = patched(
            Kind::User,
            ada(),
            json!([{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "ada@new.com"}]),
        )
        .unwrap();
        assert_eq!(out["emails"][0]["value"], "ada@new.com");
        let first = json!([{"op": "Add", "path": "emails[type eq \"work\"].value", "value": "ada@work.com"}]);
        let out = patched(Kind::User, json!({"userName": "ada"}), first).unwrap();
        assert_eq!(out["emails"], json!([{"type": "work", "value": "ada@work.com"}]));
        let out = patched(Kind::User, ada(), json!([{"op": "add", "path": "name.givenName", "value": "Ada"}])).unwrap();
        assert_eq!(out["name"], json!({"givenName": "Ada"}));
        let out = patched(Kind::User, ada(), json!([{"op": "remove", "path": "emails[type eq \"home\"]"}])).unwrap();
        assert_eq!(out["emails"].as_array().unwrap().len(), 1);
        let out = patched(Kind::User, ada(), json!([{"op": "add", "path": "urn:ietf:params:scim:schemas:core:2.0:User:displayName", "value": "A"}, {"op": "add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "R&D"}])).unwrap();
        assert_eq!(out["displayName"], "A");
        let group = json!({"displayName": "Admins", "members": [{"value": "1"}, {"value": "2"}]});
        let out = patched(
            Kind::Group,
            group.clone(),
            json!([{"op": "Remove", "path": "members", "value": [{"value": "1"}]}]),
        )
        .unwrap();
        assert_eq!(out["members"], json!([{"value": "2"}]));
        let out =
            patched(Kind::Group, group.clone(), json!([{"op": "remove", "path": "members[value eq \"2\"]"}])).unwrap();
        assert_eq!(out["members"], json!([{"value": "1"}]));
        let out = patched(
            Kind::Group,
            group,
            json!([{"op": "add", "path": "members", "value": [{"value": "3"}, {"value": "1"}]}]),
        )
        .unwrap();
        assert_eq!(out["members"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn bad_operations_are_refused_and_nothing_is_half_done() {
        let refused = |ops: Value| patched(Kind::User, ada(), ops).unwrap_err().scim_type;
        assert_eq!(refused(json!([{"op": "remove"}])), Some("noTarget"));
        assert_eq!(refused(json!([{"op": "move", "path": "active"}])), Some("invalidSyntax"));
        assert_eq!(refused(json!([{"op": "remove", "path": "userName"}])), Some("mutability"));
        assert_eq!(refused(json!([{"op": "replace", "path": "id", "value": "x"}])), Some("mutability"));
        assert_eq!(
            refused(json!([{"op": "replace", "path": "emails[type sw \"fax\"].value", "value": "x"}])),
            Some("noTarget")
        );
        assert_eq!(refused(json!([{"op": "replace", "path": "emails[type eq", "value": "x"}])), Some("invalidPath"));
        assert_eq!(refused(json!([{"op": "replace", "path": "active", "value": "maybe"}])), Some("invalidValue"));
        assert_eq!(
            refused(json!([{"op": "replace", "path": "userName[value eq \"a\"]", "value": "x"}])),
            Some("invalidPath")
        );
        let no_schema = json!({"Operations": []}).to_string();
        assert_eq!(PatchRequest::parse(no_schema.as_bytes()).unwrap_err().scim_type, Some("invalidSyntax"));
    }
}
