//! `ApiError` and the one table of error codes → HTTP status (contract §2).
//! Each area maps its own error to a code and message with a `From<…> for
//! ApiError` beside that error's type: the area says what happened in its
//! own terms, and only that impl turns it into a code and a sentence.
use serde::Serialize;

/// Declares [`Code`] from one table: each code's variant, its HTTP status
/// and its wire name, so a new code is one line here.
macro_rules! codes {
    ($($variant:ident => $status:literal, $name:literal;)+) => {
        /// Every `error.code` the API can answer, with its status.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Code {
            $($variant,)+
        }

        impl Code {
            /// Every code, for the OpenAPI document's `Error` schema.
            pub const ALL: &[Code] = &[$(Code::$variant,)+];

            /// The HTTP status it is answered with.
            pub fn status(self) -> u16 {
                match self {
                    $(Code::$variant => $status,)+
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
    MalformedJson => 400, "malformed_json";
    InvalidSignature => 400, "invalid_signature";
    InvalidState => 400, "invalid_state";
    InvalidGrant => 400, "invalid_grant";
    Unauthenticated => 401, "unauthenticated";
    InvalidCredentials => 401, "invalid_credentials";
    InsufficientScope => 403, "insufficient_scope";
    InsufficientRole => 403, "insufficient_role";
    NoActiveOrganization => 403, "no_active_organization";
    OriginNotAllowed => 403, "origin_not_allowed";
    SignUpDenied => 403, "sign_up_denied";
    NotFound => 404, "not_found";
    HostGroupNotFound => 404, "host_group_not_found";
    MethodNotAllowed => 405, "method_not_allowed";
    Conflict => 409, "conflict";
    KeyInUse => 409, "key_in_use";
    AlreadyMember => 409, "already_member";
    SodViolation => 409, "sod_violation";
    LastOwner => 409, "last_owner";
    AlreadyDecided => 409, "already_decided";
    AlreadyInvited => 409, "already_invited";
    InvitationEmailMismatch => 403, "invitation_email_mismatch";
    DomainTaken => 409, "domain_taken";
    DomainVerificationFailed => 422, "domain_verification_failed";
    EmailNotVerified => 403, "email_not_verified";
    Aal2Required => 403, "aal2_required";
    PasskeysNotConfigured => 409, "passkeys_not_configured";
    PayloadTooLarge => 413, "payload_too_large";
    RequestTimeout => 408, "request_timeout";
    UriTooLong => 414, "uri_too_long";
    HeadersTooLarge => 431, "headers_too_large";
    UnsupportedMediaType => 415, "unsupported_media_type";
    ValidationFailed => 422, "validation_failed";
    InvalidUrl => 422, "invalid_url";
    UnknownRegion => 422, "unknown_region";
    PlatformMismatch => 422, "platform_mismatch";
    ProductionSharedSenderForbidden => 422, "production_shared_sender_forbidden";
    ProductionRequiresOwnCredentials => 422, "production_requires_own_credentials";
    RateLimited => 429, "rate_limited";
    Unavailable => 503, "unavailable";
    HookUnavailable => 503, "hook_unavailable";
    RegionMigrationInProgress => 503, "region_migration_in_progress";
    Internal => 500, "internal";
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

    /// 503 `region_migration_in_progress`: the application is moving (or
    /// has just moved) to another region; its requests are held meanwhile.
    pub fn moving() -> Self {
        let message = "The application is moving to another region; try again shortly.";
        Self { retry_after: Some(MOVE_RETRY_AFTER_SECONDS), ..Self::new(Code::RegionMigrationInProgress, message) }
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

impl From<sea_orm::DbErr> for ApiError {
    fn from(err: sea_orm::DbErr) -> Self {
        ApiError::from(&err)
    }
}

/// What a request held by a region move is told to wait before it tries again.
pub const MOVE_RETRY_AFTER_SECONDS: u64 = 2;

/// What a write of an application finds where its audit chain is fenced or
/// gone: a region move copied it away, or is copying it (`audit::fence`).
/// Answered 503 `region_migration_in_progress`: tried again, the request
/// reaches the application's new region.
const FENCED: &str =
    "the application's audit chain is fenced or gone here: it moved, or is moving, to another database";

pub fn fenced() -> sea_orm::DbErr {
    sea_orm::DbErr::Custom(FENCED.to_string())
}

pub fn is_fenced(err: &sea_orm::DbErr) -> bool {
    matches!(err, sea_orm::DbErr::Custom(message) if message == FENCED)
}

/// Also for errors shared by several waiters (a coalesced cache load).
impl From<&sea_orm::DbErr> for ApiError {
    fn from(err: &sea_orm::DbErr) -> Self {
        use sea_orm::SqlErr;
        if is_fenced(err) {
            ApiError::moving()
        } else if is_transient(err) {
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
