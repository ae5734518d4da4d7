//! `ApiError` and the one table of error codes → HTTP status (contract §2).
//! Each area maps its own error to a code and message with a `From<…> for
//! ApiError` beside that error's type: the area says what happened in its
//! own terms, and only that impl turns it into a code and a sentence.
use serde::Serialize;

/// Declares [`Code`] from one table: each code's variant, its HTTP status,
/// its wire name and what it means (`docs/reference/errors.md` is generated
/// from it), so a new code is one entry here.
macro_rules! codes {
    ($($variant:ident => $status:literal, $name:literal, $meaning:literal;)+) => {
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

            /// What it means to a caller, for the error catalog of the docs.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Code::$variant => $meaning,)+
                }
            }
        }
    };
}

codes! {
    MalformedJson => 400, "malformed_json",
        "The body is not JSON, or not of the operation's shape (a field of the wrong type, a duplicate key).";
    InvalidSignature => 400, "invalid_signature",
        "A signed inbound request (a billing processor's event) carries no valid signature.";
    InvalidState => 400, "invalid_state",
        "The resource is not in a state that allows this (an access review already closed, a code already used).";
    InvalidGrant => 400, "invalid_grant",
        "A refresh token, authorization code or one-time code is unknown, used, expired or another client's.";
    Unauthenticated => 401, "unauthenticated",
        "No credential, or one that is unknown, revoked or expired. The one answer for every such case, so it tells nothing about why.";
    InvalidCredentials => 401, "invalid_credentials",
        "Sign-in: the email and password do not match (also for an unknown email, after the same work).";
    InsufficientScope => 403, "insufficient_scope",
        "The secret key lacks the scope the operation declares (its `security` in the OpenAPI document).";
    InsufficientRole => 403, "insufficient_role",
        "The end user's role in the organization does not allow this.";
    NoActiveOrganization => 403, "no_active_organization",
        "The route acts on the session's active organization, and the session has none.";
    OriginNotAllowed => 403, "origin_not_allowed",
        "The request's `Origin` is not one of the application's `allowed_origins`.";
    SignUpDenied => 403, "sign_up_denied",
        "A sign-up restriction or a `before_sign_up` hook refused the sign-up.";
    NotFound => 404, "not_found",
        "No such resource in this application (another application's resources are not found either).";
    HostGroupNotFound => 404, "host_group_not_found",
        "Host enrollment: the enrollment token's host group does not exist.";
    MethodNotAllowed => 405, "method_not_allowed",
        "The path exists but not with this method; `Allow` lists the methods it takes.";
    Conflict => 409, "conflict",
        "A unique value is taken (an email, a key name, a slug), or a concurrent change won.";
    KeyInUse => 409, "key_in_use",
        "The key cannot be removed while something uses it.";
    AlreadyMember => 409, "already_member",
        "The user is already a member of the organization.";
    SodViolation => 409, "sod_violation",
        "The grant would give one user two roles a separation-of-duties policy keeps apart.";
    LastOwner => 409, "last_owner",
        "The change would leave the organization without an owner.";
    AlreadyDecided => 409, "already_decided",
        "The access-review item has been decided already.";
    AlreadyInvited => 409, "already_invited",
        "The email has a pending invitation to this team already.";
    InvitationEmailMismatch => 403, "invitation_email_mismatch",
        "The invitation was sent to another email than the signed-in user's.";
    DomainTaken => 409, "domain_taken",
        "Another organization has claimed this SSO domain.";
    DomainVerificationFailed => 422, "domain_verification_failed",
        "The domain's DNS TXT record does not hold the verification value.";
    SsoRequired => 403, "sso_required",
        "The address's organization requires its people to sign in through its identity provider: start at `POST /v1/auth/sso/start`.";
    EmailNotVerified => 403, "email_not_verified",
        "The application requires a verified email and the user has not verified one.";
    Aal2Required => 403, "aal2_required",
        "The action needs a second factor: step up (`POST /v1/auth/mfa/step-up`) first.";
    PasskeysNotConfigured => 409, "passkeys_not_configured",
        "The application has no `passkey_rp_id`, so passkeys cannot be used.";
    PayloadTooLarge => 413, "payload_too_large",
        "The body is larger than 1 MiB.";
    RequestTimeout => 408, "request_timeout",
        "The body did not arrive within `server.body_timeout_seconds`.";
    UriTooLong => 414, "uri_too_long",
        "The request line is too long.";
    HeadersTooLarge => 431, "headers_too_large",
        "The headers are too large.";
    UnsupportedMediaType => 415, "unsupported_media_type",
        "A body was sent with another `Content-Type` than `application/json` (or the form type the OAuth routes take).";
    ValidationFailed => 422, "validation_failed",
        "A field breaks a rule; `details` names each field and what is wrong with it.";
    InvalidUrl => 422, "invalid_url",
        "A URL field is not a URL the service will call (scheme, host, or a private address); `details` names it.";
    SsoDiscoveryFailed => 422, "sso_discovery_failed",
        "An SSO connection's issuer has no usable discovery document (unreachable, another issuer, or an endpoint the URL rules refuse).";
    UnknownRegion => 422, "unknown_region",
        "The region is not one of the deployment's.";
    PlatformMismatch => 422, "platform_mismatch",
        "Host enrollment: the host's platform is not the one its token is for.";
    ProductionSharedSenderForbidden => 422, "production_shared_sender_forbidden",
        "A production application must send email through its own provider, not the shared development sender.";
    ProductionRequiresOwnCredentials => 422, "production_requires_own_credentials",
        "A production application must use its own identity-provider credentials.";
    RateLimited => 429, "rate_limited",
        "Too many requests; wait the seconds in `Retry-After`.";
    Unavailable => 503, "unavailable",
        "A database or another dependency is unavailable for now; retry with backoff (`Retry-After`).";
    HookUnavailable => 503, "hook_unavailable",
        "A blocking hook did not answer in time, so the action was not taken.";
    RegionMigrationInProgress => 503, "region_migration_in_progress",
        "The application is moving to another region; its writes resume when the move switches (`Retry-After`).";
    Internal => 500, "internal",
        "A defect. Never expected: report it with the `request_id`.";
}

/// The error catalog of the docs (`docs/reference/errors.md`), generated
/// from the table.
pub fn catalog_markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\n\
         <!-- Generated from `codes!` in src/error/mod.rs by `GATEHOUSE_WRITE_DOCS=1 cargo test --lib error`. -->\n\n\
         Every refusal of a `/v1` route is the envelope with `\"success\": false` and an `error`:\n\n\
         ```json\n\
         {\"success\": false, \"data\": null,\n \"error\": {\"code\": \"validation_failed\", \"message\": \"`email`: must be an email address\",\n           \"details\": [{\"field\": \"email\", \"issue\": \"must be an email address\"}]},\n \"meta\": {\"timestamp\": \"2026-11-28T19:01:41.093050Z\", \"request_id\": \"01a22388-da60-74c7-81af-a370ebc42650\"}}\n\
         ```\n\n\
         Branch on `code`, never on `message` (a sentence for people, which may change). \
         `details` comes with `validation_failed` and `invalid_url`. 429 and 503 carry `Retry-After`. \
         The OAuth and OpenID routes under an issuer answer their RFCs' `{\"error\", \"error_description\"}` instead.\n\n\
         | code | status | meaning |\n|---|---|---|\n",
    );
    for code in Code::ALL {
        out.push_str(&format!("| `{}` | {} | {} |\n", code.as_str(), code.status(), code.meaning()));
    }
    out
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
    fn docs_errors_md_is_generated_from_the_table() {
        for code in Code::ALL {
            assert!(
                !code.meaning().is_empty() && !code.meaning().contains('|'),
                "{:?}'s meaning breaks the table",
                code
            );
        }
        crate::generated_docs::assert_generated("docs/reference/errors.md", &catalog_markdown());
    }

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
