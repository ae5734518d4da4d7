//! What each operation requires of its caller. An operation says it once,
//! in its `#[utoipa::path(security(...))]`: the credential it takes and,
//! for a secret key, the one scope it needs (`("secret_key" = ["users:write"])`).
//! The credential extractors read that declaration here and enforce it, so
//! a handler can neither skip its scope nor take a credential its operation
//! does not declare, and the document a client reads states the same rule.
use std::collections::HashMap;

use actix_web::{http::Method, web, HttpRequest};
use serde_json::Value;

/// The security scheme names of the document.
pub const SECRET_KEY: &str = "secret_key";
pub const ACCESS_TOKEN: &str = "access_token";
/// A SCIM directory's bearer token, on the routes under its base URL.
pub const SCIM_TOKEN: &str = "scim_token";

/// One operation's declaration: for each scheme it accepts, the scopes it
/// lists (an empty list where the scheme has none).
#[derive(Debug, Default)]
pub struct Declared {
    schemes: Vec<(String, Vec<String>)>,
}

impl Declared {
    /// Whether the operation takes this kind of credential.
    pub fn accepts(&self, scheme: &str) -> bool {
        self.schemes.iter().any(|(name, _)| name == scheme)
    }

    /// The scope a secret key needs here; `None` when the operation takes
    /// no secret key or declares no single scope (so no key passes).
    pub fn secret_key_scope(&self) -> Option<&str> {
        match self.schemes.iter().find(|(name, _)| name == SECRET_KEY) {
            Some((_, scopes)) if scopes.len() == 1 => Some(&scopes[0]),
            _ => None,
        }
    }
}

/// Every operation's declaration, read from the served document once at
/// start (app data, so the extractors need not import the document).
pub struct Requirements(HashMap<String, Vec<(Method, Declared)>>);

impl Requirements {
    pub fn of_document(document: &Value) -> Requirements {
        let mut table: HashMap<String, Vec<(Method, Declared)>> = HashMap::new();
        let paths = document["paths"].as_object().into_iter().flatten();
        for (path, item) in paths {
            let operations = item.as_object().into_iter().flatten();
            for (method, operation) in operations {
                let Ok(method) = method.to_uppercase().parse::<Method>() else { continue };
                table.entry(path.clone()).or_default().push((method, Declared::of(&operation["security"])));
            }
        }
        Requirements(table)
    }

    /// The declaration of `method` on a route pattern (`/v1/users/{user_id}`).
    pub fn of(&self, method: &Method, pattern: &str) -> Option<&Declared> {
        self.0.get(pattern)?.iter().find(|(m, _)| m == method).map(|(_, declared)| declared)
    }

    /// Every operation of the document: `(path, method, declaration)`.
    pub fn operations(&self) -> impl Iterator<Item = (&str, &Method, &Declared)> {
        self.0
            .iter()
            .flat_map(|(path, ops)| ops.iter().map(move |(method, declared)| (path.as_str(), method, declared)))
    }
}

/// The declaration of the operation a request was routed to; `None` for a
/// route the document does not describe (so no credential passes).
pub fn of_request(req: &HttpRequest) -> Option<&Declared> {
    let pattern = req.match_pattern()?;
    // `HEAD` is routed as the `GET` of the same route.
    let method = if req.method() == Method::HEAD { &Method::GET } else { req.method() };
    req.app_data::<web::Data<Requirements>>()?.of(method, &pattern)
}

impl Declared {
    /// An operation's `security` (`[{"secret_key": ["users:write"]}, {}]`)
    /// as its schemes and scopes: for the table here, and for the shared
    /// answers the document adds to each operation (`wire`).
    pub(super) fn of(security: &Value) -> Declared {
        let requirements = security.as_array().into_iter().flatten();
        let schemes = requirements
            .filter_map(Value::as_object)
            .flatten()
            .map(|(scheme, scopes)| {
                let scopes = scopes.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned);
                (scheme.clone(), scopes.collect())
            })
            .collect();
        Declared { schemes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operations() -> impl Iterator<Item = (String, Method, &'static Declared)> {
        static REQUIREMENTS: std::sync::OnceLock<Requirements> = std::sync::OnceLock::new();
        let requirements = REQUIREMENTS.get_or_init(|| {
            Requirements::of_document(&serde_json::from_str(crate::openapi::json()).expect("the document is JSON"))
        });
        requirements.operations().map(|(path, method, declared)| (path.to_string(), method.clone(), declared))
    }

    #[test]
    fn every_secret_key_operation_declares_one_well_formed_scope() {
        let mut secret_key_operations = 0;
        for (path, method, declared) in operations() {
            let path = path.as_str();
            if !declared.accepts(SECRET_KEY) {
                continue;
            }
            secret_key_operations += 1;
            let scope =
                declared.secret_key_scope().unwrap_or_else(|| panic!("{method} {path} declares no single scope"));
            let (area, access) = scope.split_once(':').unwrap_or((scope, ""));
            assert!(
                scope == crate::auth::ADMIN_SCOPE || scope == "audit:read" || matches!(access, "read" | "write"),
                "{method} {path}: `{scope}` is not `admin`, `audit:read` or `<area>:read|write`"
            );
            assert!(area.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{method} {path}: area `{area}`");
            if method == Method::GET {
                assert!(access != "write", "{method} {path} reads but declares `{scope}`");
            }
        }
        assert!(secret_key_operations > 90, "{secret_key_operations} secret-key operations");
    }

    /// Contract §4's `admin` operations, and ours (settings that decide
    /// where reset links and emails go, the outbox that holds them, and a
    /// user's whole export).
    const ADMIN: &[(&str, &str)] = &[
        ("POST", "/v1/api-keys"),
        ("POST", "/v1/api-keys/{key_id}/revoke"),
        ("POST", "/v1/applications"),
        ("PATCH", "/v1/applications/{application_id}"),
        ("PUT", "/v1/billing/payment-method"),
        ("POST", "/v1/billing/connect"),
        ("POST", "/v1/security/region"),
        ("POST", "/v1/applications/{application_id}/signing-keys/rotate"),
        ("PUT", "/v1/applications/{application_id}/providers/messaging"),
        ("POST", "/v1/applications/{application_id}/providers/messaging/test"),
        ("GET", "/v1/applications/{application_id}/providers/messaging/outbox"),
        ("PUT", "/v1/applications/{application_id}/providers/oauth"),
        ("GET", "/v1/users/{user_id}/export"),
    ];

    /// Operations that change nothing though they are not `GET`.
    const READS_BY_POST: &[&str] = &["/v1/api-keys/verify", "/v1/sod-policies/check"];

    #[test]
    fn exactly_the_admin_operations_need_admin_and_only_reads_need_read() {
        let mut admin: Vec<(String, String)> = Vec::new();
        for (path, method, declared) in operations() {
            let path = path.as_str();
            let Some(scope) = declared.secret_key_scope() else { continue };
            if scope == crate::auth::ADMIN_SCOPE {
                admin.push((method.to_string(), path.to_string()));
            }
            if scope.ends_with(":read") && method != Method::GET {
                assert!(READS_BY_POST.contains(&path), "{method} {path} changes something but declares `{scope}`");
            }
        }
        admin.sort();
        let mut expected: Vec<(String, String)> = ADMIN.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
        expected.sort();
        assert_eq!(admin, expected);
    }
}
