//! `ApiError` and the one table of error codes → HTTP status (contract §2).
use actix_web::{http::StatusCode, HttpResponse, ResponseError};
use serde::Serialize;

use crate::http::envelope;

/// Every `error.code` the API can answer, with its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    MalformedJson,
    Unauthenticated,
    InvalidCredentials,
    InsufficientScope,
    InsufficientRole,
    NoActiveOrganization,
    OriginNotAllowed,
    SignUpDenied,
    NotFound,
    MethodNotAllowed,
    Conflict,
    KeyInUse,
    AlreadyMember,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationFailed,
    InvalidUrl,
    UnknownRegion,
    RateLimited,
    Unavailable,
    HookUnavailable,
    Internal,
}

impl Code {
    pub fn status(self) -> StatusCode {
        match self {
            Code::MalformedJson => StatusCode::BAD_REQUEST,
            Code::Unauthenticated | Code::InvalidCredentials => StatusCode::UNAUTHORIZED,
            Code::InsufficientScope
            | Code::InsufficientRole
            | Code::NoActiveOrganization
            | Code::OriginNotAllowed
            | Code::SignUpDenied => StatusCode::FORBIDDEN,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::Conflict | Code::KeyInUse | Code::AlreadyMember => StatusCode::CONFLICT,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Code::ValidationFailed | Code::InvalidUrl | Code::UnknownRegion => StatusCode::UNPROCESSABLE_ENTITY,
            Code::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Code::Unavailable | Code::HookUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Code::MalformedJson => "malformed_json",
            Code::Unauthenticated => "unauthenticated",
            Code::InvalidCredentials => "invalid_credentials",
            Code::InsufficientScope => "insufficient_scope",
            Code::InsufficientRole => "insufficient_role",
            Code::NoActiveOrganization => "no_active_organization",
            Code::OriginNotAllowed => "origin_not_allowed",
            Code::SignUpDenied => "sign_up_denied",
            Code::NotFound => "not_found",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::Conflict => "conflict",
            Code::KeyInUse => "key_in_use",
            Code::AlreadyMember => "already_member",
            Code::PayloadTooLarge => "payload_too_large",
            Code::UnsupportedMediaType => "unsupported_media_type",
            Code::ValidationFailed => "validation_failed",
            Code::InvalidUrl => "invalid_url",
            Code::UnknownRegion => "unknown_region",
            Code::RateLimited => "rate_limited",
            Code::Unavailable => "unavailable",
            Code::HookUnavailable => "hook_unavailable",
            Code::Internal => "internal",
        }
    }
}

/// One problem with one field of a request.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct FieldIssue {
    pub field: String,
    pub issue: String,
}

#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    pub details: Vec<FieldIssue>,
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), details: Vec::new(), retry_after: None }
    }

    /// The one answer for every authentication failure: no reason oracle.
    pub fn unauthenticated() -> Self {
        Self::new(Code::Unauthenticated, "Missing or invalid credentials.")
    }

    pub fn not_found(what: &str, id: impl std::fmt::Display) -> Self {
        Self::new(Code::NotFound, format!("{what} `{id}` not found."))
    }

    pub fn invalid(field: &str, issue: impl Into<String>) -> Self {
        Self::invalid_all(vec![FieldIssue { field: field.to_string(), issue: issue.into() }])
    }

    pub fn invalid_all(details: Vec<FieldIssue>) -> Self {
        let message = match details.as_slice() {
            [one] => format!("`{}`: {}", one.field, one.issue),
            _ => "The request has invalid fields.".to_string(),
        };
        Self { details, ..Self::new(Code::ValidationFailed, message) }
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self { retry_after: Some(1), ..Self::new(Code::Unavailable, message) }
    }

    /// Logs the cause for operators; the caller learns nothing of internals.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(Code::Internal, "An internal error occurred.")
    }

    /// [`Self::internal`] for an error with sources: the log line carries
    /// the whole chain (`outer: inner: root`), not only the outer message.
    pub fn internal_error(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut chain = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            chain.push_str(": ");
            chain.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::internal(chain)
    }

    /// For a write whose unique index stands for a rule: a violation is the
    /// caller's `code` and `message`; any other failure maps as usual.
    pub fn unless_unique(code: Code, message: impl Into<String>) -> impl FnOnce(sea_orm::DbErr) -> ApiError {
        move |err| match err.sql_err() {
            Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => ApiError::new(code, message),
            _ => err.into(),
        }
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        use actix_web::http::header::{HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
        let mut answer = envelope::json(self.status_code(), &envelope::failure(self));
        if self.code == Code::Unauthenticated {
            answer.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            answer.headers_mut().insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        answer
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(err: sea_orm::DbErr) -> Self {
        ApiError::from(&err)
    }
}

/// Also for errors shared by several waiters (a coalesced cache load).
impl From<&sea_orm::DbErr> for ApiError {
    fn from(err: &sea_orm::DbErr) -> Self {
        use sea_orm::{DbErr, SqlErr};
        match err {
            DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => {
                tracing::warn!(error = %err, "database unavailable");
                ApiError::unavailable("A database is unavailable; try again shortly.")
            }
            _ if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                ApiError::new(Code::Conflict, "The resource conflicts with an existing one.")
            }
            _ if is_busy(err) => ApiError::unavailable("The database is busy; try again shortly."),
            _ => ApiError::internal_error(err),
        }
    }
}

/// Transient conditions, not defects: SQLite's `database is locked` when
/// another process holds the write lock past the busy timeout, PostgreSQL's
/// deadlock victims and serialization failures.
fn is_busy(err: &sea_orm::DbErr) -> bool {
    let text = err.to_string();
    text.contains("database is locked")
        || text.contains("(code: 5)")
        // PostgreSQL: a deadlock victim or a serialization failure may simply try again.
        || text.contains("deadlock detected")
        || text.contains("could not serialize access")
}

impl std::error::Error for ApiError {}
