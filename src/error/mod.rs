//! `ApiError` and the one table of error codes → HTTP status (contract §2).
//! Each area's own error maps to a code and message in [`areas`].
use actix_web::{http::StatusCode, HttpResponse, ResponseError};
use serde::Serialize;

use crate::http::envelope;

mod areas;

/// Declares [`Code`] from one table: each code's variant, its HTTP status
/// and its wire name, so a new code is one line here.
macro_rules! codes {
    ($($variant:ident => $status:ident, $name:literal;)+) => {
        /// Every `error.code` the API can answer, with its status.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Code {
            $($variant,)+
        }

        impl Code {
            /// Every code, for the OpenAPI document's `Error` schema.
            pub const ALL: &[Code] = &[$(Code::$variant,)+];

            pub fn status(self) -> StatusCode {
                match self {
                    $(Code::$variant => StatusCode::$status,)+
                }
            }

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)+
                }
            }
        }
    };
}

codes! {
    MalformedJson => BAD_REQUEST, "malformed_json";
    InvalidSignature => BAD_REQUEST, "invalid_signature";
    InvalidState => BAD_REQUEST, "invalid_state";
    InvalidGrant => BAD_REQUEST, "invalid_grant";
    Unauthenticated => UNAUTHORIZED, "unauthenticated";
    InvalidCredentials => UNAUTHORIZED, "invalid_credentials";
    InsufficientScope => FORBIDDEN, "insufficient_scope";
    InsufficientRole => FORBIDDEN, "insufficient_role";
    NoActiveOrganization => FORBIDDEN, "no_active_organization";
    OriginNotAllowed => FORBIDDEN, "origin_not_allowed";
    SignUpDenied => FORBIDDEN, "sign_up_denied";
    NotFound => NOT_FOUND, "not_found";
    HostGroupNotFound => NOT_FOUND, "host_group_not_found";
    MethodNotAllowed => METHOD_NOT_ALLOWED, "method_not_allowed";
    Conflict => CONFLICT, "conflict";
    KeyInUse => CONFLICT, "key_in_use";
    AlreadyMember => CONFLICT, "already_member";
    SodViolation => CONFLICT, "sod_violation";
    LastOwner => CONFLICT, "last_owner";
    AlreadyDecided => CONFLICT, "already_decided";
    AlreadyInvited => CONFLICT, "already_invited";
    InvitationEmailMismatch => FORBIDDEN, "invitation_email_mismatch";
    DomainTaken => CONFLICT, "domain_taken";
    DomainVerificationFailed => UNPROCESSABLE_ENTITY, "domain_verification_failed";
    EmailNotVerified => FORBIDDEN, "email_not_verified";
    Aal2Required => FORBIDDEN, "aal2_required";
    PasskeysNotConfigured => CONFLICT, "passkeys_not_configured";
    PayloadTooLarge => PAYLOAD_TOO_LARGE, "payload_too_large";
    RequestTimeout => REQUEST_TIMEOUT, "request_timeout";
    UriTooLong => URI_TOO_LONG, "uri_too_long";
    HeadersTooLarge => REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large";
    UnsupportedMediaType => UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type";
    ValidationFailed => UNPROCESSABLE_ENTITY, "validation_failed";
    InvalidUrl => UNPROCESSABLE_ENTITY, "invalid_url";
    UnknownRegion => UNPROCESSABLE_ENTITY, "unknown_region";
    PlatformMismatch => UNPROCESSABLE_ENTITY, "platform_mismatch";
    ProductionSharedSenderForbidden => UNPROCESSABLE_ENTITY, "production_shared_sender_forbidden";
    ProductionRequiresOwnCredentials => UNPROCESSABLE_ENTITY, "production_requires_own_credentials";
    RateLimited => TOO_MANY_REQUESTS, "rate_limited";
    Unavailable => SERVICE_UNAVAILABLE, "unavailable";
    HookUnavailable => SERVICE_UNAVAILABLE, "hook_unavailable";
    RegionMigrationInProgress => SERVICE_UNAVAILABLE, "region_migration_in_progress";
    Internal => INTERNAL_SERVER_ERROR, "internal";
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

    /// 422 `invalid_url`, naming the field that holds the URL.
    pub fn invalid_url(field: &str, issue: impl Into<String>) -> Self {
        let issue = issue.into();
        let message = format!("`{field}` {issue}.");
        Self { details: vec![FieldIssue { field: field.to_string(), issue }], ..Self::new(Code::InvalidUrl, message) }
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
        Self::internal(cause_chain(err))
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
        let mut answer = envelope::failure(self);
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
        use sea_orm::SqlErr;
        if is_transient(err) {
            tracing::warn!(error = %err, "database unavailable or busy");
            ApiError::unavailable("A database is unavailable or busy; try again shortly.")
        } else if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) {
            ApiError::new(Code::Conflict, "The resource conflicts with an existing one.")
        } else {
            ApiError::internal_error(err)
        }
    }
}

/// An error with its sources, `outer: inner: root`, for a log line.
pub fn cause_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

/// Whether a database error is a condition of the moment, not a defect:
/// the pool timed out or closed, a connection was refused, reset or
/// terminated, the server is shutting down or full, a deadlock victim or a
/// serialization failure, SQLite busy or locked. Judged by the error's kind
/// and code (PostgreSQL's SQLSTATE, SQLite's result code), never its text.
pub fn is_transient(err: &sea_orm::DbErr) -> bool {
    use sea_orm::{sqlx, sqlx::error::DatabaseError as _, DbErr, RuntimeErr};
    let runtime = match err {
        DbErr::ConnectionAcquire(_) => return true,
        DbErr::Conn(runtime) | DbErr::Exec(runtime) | DbErr::Query(runtime) => runtime,
        _ => return false,
    };
    let RuntimeErr::SqlxError(err) = runtime else {
        return false;
    };
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                // The primary result code is the low byte of the extended one.
                let code = sqlite.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or_default() & 0xff;
                return matches!(code, SQLITE_BUSY | SQLITE_LOCKED);
            }
            db.code().is_some_and(|code| is_transient_sqlstate(&code))
        }
        _ => false,
    }
}

const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// PostgreSQL: class 08 (connection exception), 57P01-57P03 (the server is
/// shutting down or not yet accepting), 53300 (too many connections),
/// 40001 (serialization failure), 40P01 (deadlock victim).
fn is_transient_sqlstate(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "40001" | "40P01")
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use sea_orm::{sqlx, ConnAcquireErr, DbErr, RuntimeErr};

    use super::*;

    #[test]
    fn lost_connections_are_503_with_retry_after_and_defects_stay_500() {
        let reset = || sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        for err in [
            DbErr::ConnectionAcquire(ConnAcquireErr::Timeout),
            DbErr::ConnectionAcquire(ConnAcquireErr::ConnectionClosed),
            DbErr::Conn(RuntimeErr::SqlxError(sqlx::Error::PoolTimedOut)),
            DbErr::Exec(RuntimeErr::SqlxError(reset())),
            DbErr::Query(RuntimeErr::SqlxError(sqlx::Error::PoolClosed)),
        ] {
            let answer = ApiError::from(err);
            assert_eq!((answer.code, answer.retry_after), (Code::Unavailable, Some(1)));
        }
        // Text that merely looks transient does not make an error so.
        for err in [DbErr::Custom("database is locked".into()), DbErr::Query(RuntimeErr::Internal("08006".into()))] {
            assert_eq!(ApiError::from(err).code, Code::Internal);
        }
    }
}
