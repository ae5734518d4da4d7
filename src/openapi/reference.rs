//! `docs/reference/api.md`: every operation of the document by tag, with
//! its summary and the credential it takes, generated from the document
//! so that the reference cannot miss a route.
use serde_json::Value;

const INTRO: &str = "# API routes

<!-- Generated from the OpenAPI document by `GATEHOUSE_WRITE_DOCS=1 cargo test --lib openapi`. -->

Every operation, by area, with the credential it takes. The OpenAPI 3.1
document has each one whole (parameters, bodies, answers, refusals): it is
served at `GET /v1/openapi.json` and printed without a server by
`gatehouse openapi`, for generating clients.

Every `/v1` answer is the envelope:

```json
{\"success\": true, \"data\": {}, \"error\": null, \"meta\": {\"timestamp\": \"2026-11-28T19:01:41.093050Z\", \"request_id\": \"01a22388-da60-74c7-81af-a370ebc42650\"}}
```

A refusal has `\"success\": false`, `\"data\": null` and `\"error\": {\"code\",
\"message\", \"details\"?}` ([errors.md](errors.md)). Lists are newest first,
take `?limit=` (1 to 100, default 50) and `?offset=`, and add
`meta.has_more`; the audit log also takes `?before=` and `?type=`. The OAuth
and OpenID routes under an issuer (`/v1/applications/{id}/oauth/…`) and the
documents (JWKS, discovery, this one) answer as their standards say, without
the envelope.

Credentials:

- **secret key** `scope`: `Authorization: Bearer sk_…` with `x-application-id`;
  the key needs the scope named (`admin` implies every scope).
- **access token**: an end user's, `Authorization: Bearer eyJ…` with
  `x-application-id`.
- **client**: a client id and secret, HTTP Basic or in the form (OAuth).
- **enrollment token**: a host enrollment token, `Authorization: Bearer het_…`.
- **none**: public; the end-user routes among them take `x-application-id`.
";

/// The reference page for a document.
pub fn markdown(document: &Value) -> String {
    let mut by_tag: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(operation) = item.get(method) else { continue };
            let tag = operation["tags"][0].as_str().unwrap_or("other").to_string();
            let summary = operation["summary"].as_str().unwrap_or_default().replace('\n', " ").replace('|', "\\|");
            let row =
                format!("| `{} {path}` | {summary} | {} |", method.to_uppercase(), credential(&operation["security"]));
            by_tag.entry(tag).or_default().push(row);
        }
    }
    let mut out = String::from(INTRO);
    for (tag, rows) in by_tag {
        out.push_str(&format!("\n## {tag}\n\n| operation | what it does | credential |\n|---|---|---|\n"));
        for row in rows {
            out.push_str(&row);
            out.push('\n');
        }
    }
    out
}

/// `security` in words: each requirement, alternatives joined by "or".
fn credential(security: &Value) -> String {
    let requirements: Vec<_> = security.as_array().into_iter().flatten().filter_map(Value::as_object).collect();
    let mut named: Vec<String> = requirements
        .iter()
        .flat_map(|requirement| requirement.iter())
        .map(|(scheme, scopes)| {
            let scopes: Vec<&str> = scopes.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let name = match scheme.as_str() {
                "secret_key" => "secret key",
                "access_token" => "access token",
                "client_basic" => "client",
                "enrollment_token" => "enrollment token",
                "scim_token" => "SCIM directory token",
                other => other,
            };
            match scopes.as_slice() {
                [] => name.to_string(),
                scopes => format!("{name} `{}`", scopes.join("`, `")),
            }
        })
        .collect();
    // `{}` among the alternatives: the credential is optional.
    if requirements.iter().any(|requirement| requirement.is_empty()) {
        named.push("none".to_string());
    }
    if named.is_empty() {
        "none".to_string()
    } else {
        named.join(" or ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_api_md_is_generated_from_the_document() {
        let document: serde_json::Value = serde_json::from_str(super::super::json()).expect("the document is JSON");
        crate::generated_docs::assert_generated("docs/reference/api.md", &super::markdown(&document));
    }
}
