//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! what every route shares ([`wire`]).
mod conditions;
mod examples;
pub mod fields;
mod links;
mod objects;
#[cfg(test)]
mod reference;
pub mod security;
pub mod served;
mod wire;
use wire::Wire;

use std::sync::OnceLock;

use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};

use crate::{
    audit::query::AuditRow, config::Settings, error::FieldIssue, region::Region, routes, tenancy::Environment,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Gatehouse",
        description = "Multi-tenant identity and access management. Every `/v1` answer other than the documents (this one, JWKS, discovery) is wrapped in the envelope `{success, data, error, meta}`."
    ),
    paths(
        routes::ops::healthz,
        routes::ops::readyz,
        routes::ops::metrics,
        served::document,
        routes::signing_keys::authorization_server
    ),
    components(schemas(AuditRow, FieldIssue, Region, Environment))
)]
struct ApiDoc;

struct SecretKeyAuth;

impl Modify for SecretKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description = Some("A secret key (`sk_test_…`/`sk_live_…`) with the `x-application-id` header.".into());
        components.add_security_scheme("secret_key", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build();
        scheme.description = Some("An end user's access token with the `x-application-id` header.".into());
        components.add_security_scheme("access_token", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description =
            Some("A host enrollment token (`het_test_…`/`het_live_…`) with the `x-application-id` header.".into());
        components.add_security_scheme("enrollment_token", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Basic).build();
        scheme.description = Some(
            "A client's id and secret (RFC 6749 `client_secret_basic`), or both in the form (`client_secret_post`): at the token endpoint a service account's id and one of its `sak_` keys; at introspection and revocation an OAuth client's id and its `ocs_` secret (a public client sends only its `client_id` to revoke).".into(),
        );
        components.add_security_scheme("client_basic", SecurityScheme::Http(scheme));
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description =
            Some("A SCIM directory's token (`scim_test_…`/`scim_live_…`), on the routes under its base URL.".into());
        components.add_security_scheme("scim_token", SecurityScheme::Http(scheme));
    }
}

/// The document a deployment serves: [`json`] with its regions as the
/// `Region` schema's `enum` and its public URL as the server (for
/// [`served::Served`], and `gatehouse openapi`).
pub fn for_deployment(settings: &Settings) -> serde_json::Value {
    let mut document: serde_json::Value = serde_json::from_str(json()).expect("the document is JSON");
    document["components"]["schemas"]["Region"]["enum"] = serde_json::json!(settings.deployment.regions);
    document["servers"] =
        serde_json::json!([{"url": settings.public_url(), "description": "This deployment (server.public_url)"}]);
    document
}

/// The document every deployment shares (a region is any region name),
/// which the served one and `gatehouse openapi` add the regions to.
pub fn json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut document = described();
        examples::add(&mut document);
        document.to_string()
    })
}

/// The document as the handlers and [`wire`] describe it, before the
/// recorded examples ([`examples`]) join it.
fn described() -> serde_json::Value {
    let mut described = ApiDoc::openapi();
    for area in routes::AREAS {
        described.merge((area.operations)());
    }
    SecretKeyAuth.modify(&mut described);
    Wire.modify(&mut described);
    let mut document = serde_json::to_value(described).expect("the OpenAPI document serialises");
    links::add(&mut document);
    conditions::add(&mut document);
    objects::open(&mut document);
    document
}

#[cfg(test)]
mod tests {
    /// OpenAPI 3.1 section 4.8.10: `operationId` is unique in the document
    /// (utoipa takes it from the handler's name, and two areas may name
    /// handlers alike). The validator in `.ci/run` says so too, later.
    #[test]
    fn every_operation_id_is_unique() {
        let document: serde_json::Value = serde_json::from_str(super::json()).expect("the document is JSON");
        let mut seen = std::collections::BTreeMap::new();
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                if let Some(id) = operation["operationId"].as_str() {
                    let here = format!("{} {path}", method.to_uppercase());
                    if let Some(first) = seen.insert(id.to_string(), here.clone()) {
                        panic!("operationId `{id}` of {here} is also {first}'s");
                    }
                }
            }
        }
    }

    /// A page or a metadata document is answered as it is: a success that
    /// declares another media type does not also claim the JSON envelope.
    #[test]
    fn a_success_that_is_a_page_or_a_document_is_not_enveloped_json() {
        let document: serde_json::Value = serde_json::from_str(super::json()).expect("the document is JSON");
        let mut pages = 0;
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let content = response["content"].as_object();
                    let types: Vec<&String> = content.into_iter().flat_map(|c| c.keys()).collect();
                    if status.starts_with('2') && types.iter().any(|t| *t == "text/html" || t.ends_with("+xml")) {
                        pages += 1;
                        assert_eq!(types.len(), 1, "{} {path} {status}: {types:?}", method.to_uppercase());
                    }
                }
            }
        }
        assert!(pages >= 4, "{pages} pages");
    }

    /// Every enveloped refusal shows an example: the envelope with a code
    /// its status is answered with (redocly, in `.ci/run`, checks each
    /// example against its schema).
    #[test]
    fn every_enveloped_refusal_has_an_example_of_a_code_of_its_status() {
        let document: serde_json::Value = serde_json::from_str(super::json()).expect("the document is JSON");
        let shared = &document["components"]["responses"];
        let mut checked = 0;
        for (path, item) in document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let response = match response["$ref"].as_str() {
                        Some(name) => &shared[name.rsplit('/').next().unwrap()],
                        None => response,
                    };
                    let body = &response["content"]["application/json"];
                    if body["schema"]["$ref"] != "#/components/schemas/ErrorEnvelope" {
                        continue;
                    }
                    let code = body["example"]["error"]["code"].as_str();
                    let code = crate::error::Code::ALL.iter().find(|c| Some(c.as_str()) == code);
                    let here = format!("{} {path} {status}", method.to_uppercase());
                    assert_eq!(code.map(|c| c.status().to_string()).as_deref(), Some(status.as_str()), "{here}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 400, "{checked} refusals");
    }
}
