//! Each area maps its own error to the one [`Code`] table (`From<…> for
//! ApiError` beside the error's type); these tests pin what callers see
//! for a few of them, and the one mapping database errors keep.
use sea_orm::{ConnAcquireErr, ConnectionTrait, Database, DbErr};
use uuid::Uuid;

use crate::{
    areas::{
        applications::ApplicationError,
        auth::AuthError,
        hooks::HookError,
        organizations::OrganizationError,
        profile_fields::ProfileFieldError,
        rotations::RotationError,
        sessions::SessionError,
        users::UserError,
        validate::Invalid,
        webhooks::{InvalidUrl, WebhookError},
    },
    error::{ApiError, Code, FieldIssue},
    storage::{Limit, LimitReached, ReserveError},
};

fn wire(err: impl Into<ApiError>) -> (Code, String, Vec<FieldIssue>, Option<u64>) {
    let err = err.into();
    (err.code, err.message, err.details, err.retry_after)
}

#[test]
fn outcomes_keep_their_codes_and_messages() {
    let id = Uuid::nil();
    let (code, message, ..) = wire(ApplicationError::NotFound(id));
    assert_eq!((code, message.as_str()), (Code::NotFound, format!("Application `{id}` not found.").as_str()));
    assert_eq!(code.status(), 404);
    let (code, message, ..) = wire(WebhookError::DeliveryInFlight(id));
    assert_eq!((code, message), (Code::Conflict, format!("Delivery `{id}` is being sent right now.")));
    let (code, message, ..) = wire(ProfileFieldError::KeyTaken("plan".into()));
    assert_eq!((code, message.as_str()), (Code::KeyInUse, "A profile field with key `plan` already exists."));
    let (code, _, _, retry_after) = wire(AuthError::Hook(HookError::Unavailable));
    assert_eq!((code, retry_after), (Code::HookUnavailable, Some(1)));
    assert_eq!(
        wire(AuthError::RefreshRefused(crate::areas::sessions::RefreshRefused::Reused)).0,
        Code::Unauthenticated
    );
}

#[test]
fn a_limit_is_422_naming_its_field() {
    let limit = Limit { max: 10, what: "hooks", field: "url" };
    let (code, message, details, _) = wire(HookError::Limit(ReserveError::Reached(LimitReached(limit))));
    assert_eq!(code.status(), 422);
    assert_eq!((code, message.as_str()), (Code::ValidationFailed, "`url`: the limit of 10 hooks is reached"));
    assert_eq!(details, vec![FieldIssue { field: "url".into(), issue: "the limit of 10 hooks is reached".into() }]);
}

#[test]
fn field_issues_and_urls_carry_details() {
    let issue = |field: &str| FieldIssue { field: field.into(), issue: "must not be empty".into() };
    let (code, message, details, _) = wire(OrganizationError::Invalid(Invalid(vec![issue("name"), issue("slug")])));
    assert_eq!((code, message.as_str(), details.len()), (Code::ValidationFailed, "The request has invalid fields.", 2));
    let (code, message, details, _) = wire(HookError::InvalidUrl(InvalidUrl("must use https".into())));
    assert_eq!((code, message.as_str()), (Code::InvalidUrl, "`url` must use https."));
    assert_eq!(details, vec![FieldIssue { field: "url".into(), issue: "must use https".into() }]);
}

#[test]
fn database_errors_keep_their_one_mapping() {
    let (code, _, _, retry_after) = wire(UserError::Db(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout)));
    assert_eq!((code, retry_after), (Code::Unavailable, Some(1)));
    assert_eq!(wire(SessionError::Db(DbErr::Custom("a defect".into()))).0, Code::Internal);
    let batch = std::sync::Arc::new(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout));
    assert_eq!(wire(RotationError::Batch(batch)).0, Code::Unavailable);
}

/// A real unique violation: the area's rule where it names one, the
/// generic 409 where it does not.
#[tokio::test]
#[allow(clippy::disallowed_methods)] // a scratch in-memory table, no tenant
async fn unique_violations_are_409() {
    let db = Database::connect("sqlite::memory:").await.unwrap();
    db.execute_unprepared("create table t (email text unique)").await.unwrap();
    db.execute_unprepared("insert into t values ('a@example.com')").await.unwrap();
    let violation = || async { db.execute_unprepared("insert into t values ('a@example.com')").await.unwrap_err() };
    let taken = crate::areas::unless_unique(UserError::EmailTaken)(violation().await);
    assert!(matches!(taken, UserError::EmailTaken));
    let (code, message, ..) = wire(taken);
    assert_eq!((code, message.as_str()), (Code::Conflict, "A user with this email already exists."));
    let (code, message, ..) = wire(WebhookError::Db(violation().await));
    assert_eq!(code.status(), 409);
    assert_eq!((code, message.as_str()), (Code::Conflict, "The resource conflicts with an existing one."));
    let other = crate::areas::unless_unique(UserError::EmailTaken)(DbErr::Custom("a defect".into()));
    assert!(matches!(other, UserError::Db(_)));
}
