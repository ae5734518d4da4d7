//! Host enrollment (operation 6): host groups, enrollment tokens (`het_`,
//! hashed at rest, shown once) and the hosts they enroll. A use is counted
//! by a conditional update in the transaction that creates the host, so a
//! token is never used past its `max_uses`, however many hosts present it
//! at once, and an enrollment that fails burns no use.
pub mod http;

use chrono::{DateTime, Duration, Utc};
use entity::{enrollment_token, host, host_group};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    unless_unique,
    validate::{Invalid, Issues},
};
use crate::{
    crypto::{constant_time_eq, key_format, sha256},
    error::{ApiError, Code, FieldIssue},
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope},
};

/// The platforms a host can enroll as (interface: `windows` or `linux`).
pub const PLATFORMS: &[&str] = &["linux", "windows"];

/// What went wrong with host groups, enrollment tokens or an enrollment.
#[derive(Debug, thiserror::Error)]
pub enum EnrollmentError {
    #[error("enrollment token `{0}` not found")]
    NotFound(Uuid),
    #[error("host group `{0}` not found")]
    HostGroupNotFound(Uuid),
    #[error("a host group named `{0}` already exists")]
    HostGroupTaken(String),
    /// The token is unknown, revoked, expired or used up: one answer for all.
    #[error("the enrollment token is not usable")]
    Unusable,
    #[error("the token enrolls `{expected}` hosts only")]
    PlatformMismatch { expected: String },
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<EnrollmentError> for ApiError {
    fn from(err: EnrollmentError) -> Self {
        match err {
            EnrollmentError::NotFound(id) => ApiError::not_found("Enrollment token", id),
            EnrollmentError::HostGroupNotFound(id) => {
                ApiError::new(Code::HostGroupNotFound, format!("Host group `{id}` not found."))
            }
            EnrollmentError::HostGroupTaken(name) => {
                ApiError::new(Code::Conflict, format!("A host group named `{}` already exists.", name.escape_debug()))
            }
            EnrollmentError::Unusable => ApiError::unauthenticated(),
            EnrollmentError::PlatformMismatch { expected } => ApiError {
                details: vec![FieldIssue { field: "platform".into(), issue: format!("must be `{expected}`") }],
                ..ApiError::new(Code::PlatformMismatch, format!("This token enrolls `{expected}` hosts only."))
            },
            EnrollmentError::Invalid(err) => err.into(),
            EnrollmentError::Db(err) => err.into(),
        }
    }
}

/// A host group's name, checked.
pub fn group_name(name: &str) -> Result<String, Invalid> {
    let mut issues = Issues::default();
    let name = issues.text("name", name, 255);
    issues.finish()?;
    Ok(name)
}

pub async fn create_group(scope: &TenantScope, name: String) -> Result<host_group::Model, EnrollmentError> {
    let mut txn = scope.begin().await?;
    let row = host_group::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name,
        created_at: crate::clock::now(),
    };
    txn.insert(host_group::ActiveModel::from(row.clone()))
        .await
        .map_err(unless_unique(EnrollmentError::HostGroupTaken(row.name.clone())))?;
    txn.audit(EventType::HostGroupCreated, Some(row.id), json!({"name": row.name})).await?;
    txn.commit().await?;
    Ok(row)
}

pub async fn list_groups(db: &impl TenantConn, page: Page) -> Result<(Vec<host_group::Model>, bool), DbErr> {
    page.fetch(
        db.find::<host_group::Entity>()
            .order_by_desc(host_group::Column::CreatedAt)
            .order_by_desc(host_group::Column::Id),
        db.conn(),
    )
    .await
}

/// A validated request for a new token.
pub struct NewToken {
    pub label: String,
    pub host_group_id: Option<Uuid>,
    pub platform: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub max_uses: Option<i32>,
}

impl NewToken {
    pub fn parse(
        label: &str,
        host_group_id: Option<Uuid>,
        platform: Option<String>,
        expires_in_days: Option<i64>,
        max_uses: Option<i64>,
    ) -> Result<NewToken, Invalid> {
        let mut issues = Issues::default();
        let label = issues.text("label", label, 255);
        if platform.as_deref().is_some_and(|p| !PLATFORMS.contains(&p)) {
            issues.add("platform", format!("must be one of {}, or null", PLATFORMS.join(", ")));
        }
        let expires_at = match expires_in_days {
            None => None,
            Some(days @ 1..=3650) => Some(crate::clock::now() + Duration::days(days)),
            Some(_) => {
                issues.add("expires_in_days", "must be between 1 and 3650, or null");
                None
            }
        };
        let max_uses = match max_uses {
            None => None,
            Some(n) if n >= 1 && n <= i64::from(i32::MAX) => Some(n as i32),
            Some(_) => {
                issues.add("max_uses", format!("must be between 1 and {}, or null", i32::MAX));
                None
            }
        };
        issues.finish()?;
        Ok(NewToken { label, host_group_id, platform, expires_at, max_uses })
    }
}

/// Whether a token can enroll a host now.
pub fn is_active(token: &enrollment_token::Model, now: DateTime<Utc>) -> bool {
    token.revoked_at.is_none()
        && token.expires_at.is_none_or(|at| at > now)
        && token.max_uses.is_none_or(|max| token.uses < max)
}

/// Issues a token; its secret is in the answer once.
pub async fn create_token(
    scope: &TenantScope,
    new: NewToken,
) -> Result<(enrollment_token::Model, String), EnrollmentError> {
    let mut txn = scope.begin().await?;
    if let Some(group) = new.host_group_id {
        if txn.find_by_id::<host_group::Entity>(group).one(txn.conn()).await?.is_none() {
            return Err(EnrollmentError::HostGroupNotFound(group));
        }
    }
    let secret = key_format::generate(key_format::KeyKind::Enrollment, scope.tenant().environment.is_live());
    let row = enrollment_token::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        label: new.label,
        host_group_id: new.host_group_id,
        platform: new.platform,
        prefix: key_format::display_prefix(&secret),
        secret_hash: sha256(&secret).to_vec(),
        expires_at: new.expires_at,
        max_uses: new.max_uses,
        uses: 0,
        revoked_at: None,
        created_at: crate::clock::now(),
    };
    txn.insert(enrollment_token::ActiveModel::from(row.clone())).await?;
    txn.audit(
        EventType::EnrollmentTokenCreated,
        Some(row.id),
        json!({
            "label": row.label, "prefix": row.prefix, "host_group_id": row.host_group_id,
            "platform": row.platform, "expires_at": row.expires_at, "max_uses": row.max_uses,
        }),
    )
    .await?;
    txn.commit().await?;
    Ok((row, secret))
}

pub async fn list_tokens(db: &impl TenantConn, page: Page) -> Result<(Vec<enrollment_token::Model>, bool), DbErr> {
    page.fetch(
        db.find::<enrollment_token::Entity>()
            .order_by_desc(enrollment_token::Column::CreatedAt)
            .order_by_desc(enrollment_token::Column::Id),
        db.conn(),
    )
    .await
}

async fn find_token(db: &impl TenantConn, id: Uuid) -> Result<enrollment_token::Model, EnrollmentError> {
    db.find_by_id::<enrollment_token::Entity>(id).one(db.conn()).await?.ok_or(EnrollmentError::NotFound(id))
}

/// Revokes a token; revoking a revoked token answers it unchanged.
pub async fn revoke_token(scope: &TenantScope, id: Uuid) -> Result<enrollment_token::Model, EnrollmentError> {
    let mut txn = scope.begin().await?;
    let mut token = find_token(&txn, id).await?;
    if token.revoked_at.is_some() {
        return Ok(token);
    }
    let now = crate::clock::now();
    if !txn.revoke::<enrollment_token::Entity>(id, now).await? {
        // Another request revoked it first: answer the token as it is now.
        drop(txn);
        return find_token(scope, id).await;
    }
    txn.audit(EventType::EnrollmentTokenRevoked, Some(id), json!({"label": token.label, "prefix": token.prefix}))
        .await?;
    txn.commit().await?;
    token.revoked_at = Some(now);
    Ok(token)
}

/// The token a host presents, found by the SHA-256 of its secret when its
/// shape, checksum and mode (`test`/`live`) are right and it is usable now.
pub async fn authenticate(scope: &TenantScope, presented: &str) -> Result<enrollment_token::Model, EnrollmentError> {
    let live = key_format::parse(key_format::KeyKind::Enrollment, presented).ok_or(EnrollmentError::Unusable)?;
    if live != scope.tenant().environment.is_live() {
        return Err(EnrollmentError::Unusable);
    }
    let hash = sha256(presented);
    let token = scope
        .find::<enrollment_token::Entity>()
        .filter(enrollment_token::Column::SecretHash.eq(hash.to_vec()))
        .one(scope.conn())
        .await?
        .filter(|t| constant_time_eq(&t.secret_hash, &hash))
        .ok_or(EnrollmentError::Unusable)?;
    if !is_active(&token, crate::clock::now()) {
        return Err(EnrollmentError::Unusable);
    }
    Ok(token)
}

/// A host's request to enroll, checked.
pub struct NewHost {
    pub hostname: String,
    pub platform: String,
}

impl NewHost {
    pub fn parse(hostname: &str, platform: &str) -> Result<NewHost, Invalid> {
        let mut issues = Issues::default();
        let hostname = issues.text("hostname", hostname, 255);
        if !PLATFORMS.contains(&platform) {
            issues.add("platform", format!("must be one of {}", PLATFORMS.join(", ")));
        }
        issues.finish()?;
        Ok(NewHost { hostname, platform: platform.to_string() })
    }
}

/// Enrolls a host with an authenticated token: the platform must match the
/// token's; then one use is taken by a conditional update (revoked,
/// expired and used-up tokens match no row) and the host is created, in
/// one transaction. Audited as `enrollment_token.used` by the scope's
/// actor (`public`).
pub async fn enroll(
    scope: &TenantScope,
    token: &enrollment_token::Model,
    new: NewHost,
) -> Result<host::Model, EnrollmentError> {
    if let Some(expected) = token.platform.as_deref().filter(|p| *p != new.platform) {
        return Err(EnrollmentError::PlatformMismatch { expected: expected.to_string() });
    }
    let mut txn = scope.begin().await?;
    let now = crate::clock::now();
    let taken = txn
        .update_many(|q: UpdateMany<enrollment_token::Entity>| {
            use enrollment_token::Column;
            q.col_expr(Column::Uses, Expr::col(Column::Uses).add(1))
                .filter(Column::Id.eq(token.id))
                .filter(Column::RevokedAt.is_null())
                .filter(Column::ExpiresAt.is_null().or(Column::ExpiresAt.gt(now)))
                .filter(Column::MaxUses.is_null().or(Expr::col(Column::Uses).lt(Expr::col(Column::MaxUses))))
        })
        .await?;
    if taken == 0 {
        return Err(EnrollmentError::Unusable);
    }
    let row = host::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        hostname: new.hostname,
        platform: new.platform,
        host_group_id: token.host_group_id,
        enrollment_token_id: token.id,
        enrolled_at: now,
    };
    txn.insert(host::ActiveModel::from(row.clone())).await?;
    txn.audit(
        EventType::EnrollmentTokenUsed,
        Some(token.id),
        json!({"host_id": row.id, "hostname": row.hostname, "platform": row.platform, "host_group_id": row.host_group_id}),
    )
    .await?;
    txn.commit().await?;
    Ok(row)
}

pub async fn list_hosts(db: &impl TenantConn, page: Page) -> Result<(Vec<host::Model>, bool), DbErr> {
    page.fetch(
        db.find::<host::Entity>().order_by_desc(host::Column::EnrolledAt).order_by_desc(host::Column::Id),
        db.conn(),
    )
    .await
}
