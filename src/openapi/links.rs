//! Links from each creation to the operations on what it created, found
//! from the paths, so generated clients and fuzzers can chain them: the
//! `201` of `POST /v1/webhooks` links to every operation on
//! `/v1/webhooks/{webhook_id}…` with `webhook_id = $response.body#/data/id`
//! (or the created row's own field of that name, as `user_id` of a
//! membership). A new application is the exception: its settings and keys
//! change only with its own secret key, which a link cannot pass, so it
//! links to reads alone, and not to its provider settings (tag
//! `providers`), which only its own key reads either. Written on the JSON document: utoipa 5 serialises
//! its `Link` with `operation_id`, not the `operationId` OpenAPI names.
use serde_json::{json, Map, Value};

pub fn add(document: &mut Value) {
    let Some(paths) = document.get("paths").and_then(Value::as_object) else { return };
    let components = document.pointer("/components/schemas").cloned().unwrap_or_default();
    let mut found = Vec::new();
    for (collection, item) in paths {
        let Some(created) = item.pointer("/post/responses/201") else { continue };
        let fields = created_fields(created, &components);
        let mut links = Map::new();
        for (path, target) in paths {
            let Some(name) = path.strip_prefix(collection.as_str()).and_then(first_parameter) else { continue };
            let field = if fields.iter().any(|f| f == name) { name } else { "id" };
            let operations = target.as_object().into_iter().flat_map(|ops| ops.iter());
            let reachable = |(method, op): &(&String, &Value)| {
                collection != "/v1/applications" || (*method == "get" && !is_tenant_setting(op))
            };
            for id in operations.filter(reachable).filter_map(|(_, op)| op.get("operationId").and_then(Value::as_str)) {
                let parameters = json!({ name: format!("$response.body#/data/{field}") });
                links.insert(id.to_string(), json!({"operationId": id, "parameters": parameters}));
            }
        }
        if !links.is_empty() {
            found.push((collection.clone(), links));
        }
    }
    for (collection, links) in found {
        if let Some(created) = document["paths"][&collection].pointer_mut("/post/responses/201") {
            created["links"] = Value::Object(links);
        }
    }
}

/// An operation on an application's provider settings: read and changed
/// with that application's own key only (404 with another's).
fn is_tenant_setting(operation: &Value) -> bool {
    operation["tags"].as_array().is_some_and(|tags| tags.iter().any(|t| t == "providers"))
}

/// `"/{user_id}/sessions"` → `user_id`: the parameter right after the collection.
fn first_parameter(rest: &str) -> Option<&str> {
    rest.strip_prefix("/{")?.split_once('}').map(|(name, _)| name)
}

/// The fields of the created row: the properties of the component its
/// envelope's `data` refers to.
fn created_fields(created: &Value, components: &Value) -> Vec<String> {
    let reference = created.pointer("/content/application~1json/schema/properties/data/$ref").and_then(Value::as_str);
    let name = reference.and_then(|r| r.rsplit('/').next()).unwrap_or_default();
    let properties = components.get(name).and_then(|s| s.get("properties")).and_then(Value::as_object);
    properties.map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_creation_links_to_the_operations_on_what_it_created() {
        let document: serde_json::Value = serde_json::from_str(super::super::json()).unwrap();
        let links = |path: &str| document["paths"][path]["post"]["responses"]["201"]["links"].clone();
        assert_eq!(links("/v1/webhooks")["find_webhook"]["parameters"]["webhook_id"], "$response.body#/data/id");
        let memberships = links("/v1/organizations/{organization_id}/memberships");
        assert_eq!(memberships["remove_membership"]["parameters"]["user_id"], "$response.body#/data/user_id");
        assert_eq!(links("/v1/users")["list_user_sessions"]["operationId"], "list_user_sessions");
        assert!(links("/v1/applications")["get_application"].is_object());
        assert!(links("/v1/applications")["update_application"].is_null());
        assert!(links("/v1/applications")["list_messaging_providers"].is_null());
    }
}
