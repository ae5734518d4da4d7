//! Authentication: who is calling. Secret API keys for management routes
//! ([`secret_key::SecretKey`], an extractor that fails before any body is
//! read), their scopes, and the per-application request budget.
pub mod end_user;
pub mod rate_limit;
pub mod secret_key;

/// Scopes an operation can require. `admin` implies every scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Admin,
    AuditRead,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Admin => "admin",
            Scope::AuditRead => "audit:read",
        }
    }
}
