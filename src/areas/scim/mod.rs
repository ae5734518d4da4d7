//! SCIM 2.0 directories (RFC 7643, 7644): an organization's identity
//! provider (Okta, Entra ID, Google Workspace…) provisions its people into
//! the organization and deprovisions them when they leave.
//!
//! A directory is made with the application's secret key and answers a
//! bearer token, shown once and stored as its SHA-256, like an OAuth
//! client's secret. Its resources ([`resources`]) live under its base URL
//! (`/v1/applications/{application_id}/scim/v2/{directory_id}`), which the
//! region router forwards by the application in the path.
pub mod filter;
pub mod http;
pub mod patch;
pub mod records;
pub mod resources;
pub mod schema;

use entity::scim_directory;
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{
    organizations::{self, OrganizationError},
    users::UserError,
    validate::{Invalid, Issues},
};
use crate::{
    clock,
    crypto::{constant_time_eq, key_format, sha256},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Limit, ReserveError, TenantConn, TenantScope},
};

pub const MAX_NAME: usize = 255;
/// The most entries of a directory's `group_roles`.
pub const MAX_GROUP_ROLES: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("SCIM directory `{0}` not found")]
    NotFound(Uuid),
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<DirectoryError> for ApiError {
    fn from(err: DirectoryError) -> Self {
        match err {
            DirectoryError::NotFound(id) => ApiError::not_found("SCIM directory", id),
            DirectoryError::Organization(err) => err.into(),
            DirectoryError::Invalid(err) => err.into(),
            DirectoryError::Limit(err) => err.into(),
            DirectoryError::Db(err) => err.into(),
        }
    }
}

/// A group whose members get a role in the organization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupRole {
    /// The group's `displayName`, compared without case.
    #[schema(min_length = 1, max_length = 255)]
    pub group: String,
    /// The role its members get.
    #[schema(pattern = "^[a-z][a-z0-9_-]{0,62}$")]
    pub role: String,
}

/// Checks `group_roles`: at most [`MAX_GROUP_ROLES`], each group named
/// once, each role a role name.
pub fn group_roles(issues: &mut Issues, given: &[GroupRole]) {
    if given.len() > MAX_GROUP_ROLES {
        issues.add("group_roles", format!("at most {MAX_GROUP_ROLES} entries"));
    }
    for (i, entry) in given.iter().enumerate() {
        issues.text(&format!("group_roles[{i}].group"), &entry.group, MAX_NAME);
        issues.role(&format!("group_roles[{i}].role"), &entry.role);
        if given[..i].iter().any(|e| e.group.to_lowercase() == entry.group.to_lowercase()) {
            issues.add(&format!("group_roles[{i}].group"), "names a group already listed");
        }
    }
}

pub fn group_roles_of(row: &scim_directory::Model) -> Vec<GroupRole> {
    serde_json::from_value(row.group_roles.clone()).unwrap_or_default()
}

fn new_token(scope: &TenantScope) -> (String, Vec<u8>, String) {
    let token = key_format::generate(key_format::KeyKind::ScimDirectory, scope.tenant().environment.is_live());
    (key_format::display_prefix(&token), sha256(&token).to_vec(), token)
}

/// Makes a directory for an organization; answers it and its token (the
/// one time it is shown).
pub async fn create(
    scope: &TenantScope,
    organization_id: Uuid,
    name: String,
    roles: Vec<GroupRole>,
    limit: u64,
) -> Result<(scim_directory::Model, String), DirectoryError> {
    let mut txn = scope.begin().await?;
    organizations::find(&txn, organization_id).await?;
    txn.reserve::<scim_directory::Entity>(Limit { max: limit, what: "SCIM directories", field: "name" }, |all| all)
        .await?;
    let (prefix, hash, token) = new_token(scope);
    let now = clock::now();
    let row = scim_directory::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        organization_id,
        name,
        token_hash: hash,
        token_prefix: prefix,
        group_roles: json!(roles),
        created_at: now,
        updated_at: now,
    };
    txn.insert(scim_directory::ActiveModel::from(row.clone())).await?;
    txn.audit(EventType::ScimDirectoryCreated, Some(row.id), audit_data(&row)).await?;
    txn.commit().await?;
    Ok((row, token))
}

fn audit_data(row: &scim_directory::Model) -> Value {
    json!({"organization_id": row.organization_id, "name": row.name, "group_roles": row.group_roles})
}

/// The organization's directories, oldest first.
pub async fn list(db: &impl TenantConn, organization_id: Uuid) -> Result<Vec<scim_directory::Model>, DirectoryError> {
    organizations::find(db, organization_id).await?;
    Ok(db
        .find::<scim_directory::Entity>()
        .filter(scim_directory::Column::OrganizationId.eq(organization_id))
        .order_by_asc(scim_directory::Column::CreatedAt)
        .order_by_asc(scim_directory::Column::Id)
        .all(db.conn())
        .await?)
}

/// A directory of the organization; one of another organization is 404.
pub async fn find(
    db: &impl TenantConn,
    organization_id: Uuid,
    id: Uuid,
) -> Result<scim_directory::Model, DirectoryError> {
    db.find_by_id::<scim_directory::Entity>(id)
        .filter(scim_directory::Column::OrganizationId.eq(organization_id))
        .one(db.conn())
        .await?
        .ok_or(DirectoryError::NotFound(id))
}

/// Changes a directory's name or group roles; the roles its users hold
/// follow at their next change.
pub async fn update(
    scope: &TenantScope,
    organization_id: Uuid,
    id: Uuid,
    name: Option<String>,
    roles: Option<Vec<GroupRole>>,
) -> Result<scim_directory::Model, DirectoryError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, organization_id, id).await?;
    let mut active = row.into_active_model();
    if let Some(name) = name {
        active.name = Set(name);
    }
    if let Some(roles) = roles {
        active.group_roles = Set(json!(roles));
    }
    active.updated_at = Set(clock::now());
    let updated = txn.update(active).await?;
    txn.audit(EventType::ScimDirectoryUpdated, Some(id), audit_data(&updated)).await?;
    txn.commit().await?;
    Ok(updated)
}

/// Deletes a directory with its users and groups. The memberships it
/// granted stay: they are the organization's now, and a directory deleted
/// by mistake must not sign an organization's people out.
pub async fn delete(scope: &TenantScope, organization_id: Uuid, id: Uuid) -> Result<(), DirectoryError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, organization_id, id).await?;
    let forgotten = records::forget_directory(&mut txn, id).await?;
    txn.delete::<scim_directory::Entity>(scim_directory::Column::Id.eq(id)).await?;
    let mut data = audit_data(&row);
    data["resources_deleted"] = json!(forgotten);
    txn.audit(EventType::ScimDirectoryDeleted, Some(id), data).await?;
    txn.commit().await?;
    Ok(())
}

/// Replaces a directory's token; the old one stops at the commit.
pub async fn rotate_token(
    scope: &TenantScope,
    organization_id: Uuid,
    id: Uuid,
) -> Result<(scim_directory::Model, String), DirectoryError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, organization_id, id).await?;
    let (prefix, hash, token) = new_token(scope);
    let mut active = row.into_active_model();
    active.token_hash = Set(hash);
    active.token_prefix = Set(prefix.clone());
    active.updated_at = Set(clock::now());
    let updated = txn.update(active).await?;
    txn.audit(EventType::ScimDirectoryTokenRotated, Some(id), json!({"token_prefix": prefix})).await?;
    txn.commit().await?;
    Ok((updated, token))
}

/// The directory a bearer token opens: `None` for an unknown directory, a
/// token of another, or anything not shaped as a token. Read from the
/// database on every request, so a rotated token or a deleted directory is
/// refused at once on every node.
pub async fn authenticate(
    db: &impl TenantConn,
    directory_id: Uuid,
    presented: &str,
) -> Result<Option<scim_directory::Model>, DbErr> {
    if key_format::parse(key_format::KeyKind::ScimDirectory, presented).is_none() {
        return Ok(None);
    }
    let Some(row) = db.find_by_id::<scim_directory::Entity>(directory_id).one(db.conn()).await? else {
        return Ok(None);
    };
    Ok(constant_time_eq(&sha256(presented), &row.token_hash).then_some(row))
}

/// A refusal in SCIM's own format (RFC 7644 section 3.12).
#[derive(Debug)]
pub struct ScimError {
    pub status: u16,
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    fn new(status: u16, scim_type: Option<&'static str>, detail: impl Into<String>) -> ScimError {
        ScimError { status, scim_type, detail: detail.into() }
    }

    pub fn invalid_syntax(detail: impl Into<String>) -> ScimError {
        Self::new(400, Some("invalidSyntax"), detail)
    }

    pub fn invalid_value(detail: impl Into<String>) -> ScimError {
        Self::new(400, Some("invalidValue"), detail)
    }

    pub fn invalid_filter(detail: String) -> ScimError {
        Self::new(400, Some("invalidFilter"), detail)
    }

    pub fn invalid_path(detail: impl Into<String>) -> ScimError {
        Self::new(400, Some("invalidPath"), detail)
    }

    pub fn no_target(detail: impl Into<String>) -> ScimError {
        Self::new(400, Some("noTarget"), detail)
    }

    pub fn mutability(detail: impl Into<String>) -> ScimError {
        Self::new(400, Some("mutability"), detail)
    }

    pub fn uniqueness(detail: impl Into<String>) -> ScimError {
        Self::new(409, Some("uniqueness"), detail)
    }

    pub fn not_found(what: &str, id: &str) -> ScimError {
        Self::new(404, None, format!("{what} `{id}` not found"))
    }

    pub fn unauthorized() -> ScimError {
        Self::new(401, None, "Missing or invalid bearer token.")
    }

    pub fn precondition_failed() -> ScimError {
        Self::new(412, None, "The resource changed: its version no longer matches `If-Match`.")
    }

    pub fn conflict(detail: impl Into<String>) -> ScimError {
        Self::new(409, None, detail)
    }

    pub fn body(&self) -> Value {
        let mut body = json!({"schemas": [schema::ERROR], "status": self.status.to_string(), "detail": self.detail});
        if let Some(scim_type) = self.scim_type {
            body["scimType"] = json!(scim_type);
        }
        body
    }
}

impl std::fmt::Display for ScimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.detail)
    }
}

/// What the rest of the service refuses, said in SCIM's format with the
/// same status (a database that is busy stays 503 with `Retry-After`).
impl From<ApiError> for ScimError {
    fn from(err: ApiError) -> ScimError {
        let scim_type = match err.code {
            Code::ValidationFailed | Code::MalformedJson => Some("invalidValue"),
            _ => None,
        };
        let detail = match err.details.first() {
            Some(issue) => format!("`{}`: {}", issue.field, issue.issue),
            None => err.message,
        };
        ScimError::new(err.code.status(), scim_type, detail)
    }
}

impl From<OrganizationError> for ScimError {
    fn from(err: OrganizationError) -> ScimError {
        ApiError::from(err).into()
    }
}

impl From<UserError> for ScimError {
    fn from(err: UserError) -> ScimError {
        ApiError::from(err).into()
    }
}

impl From<DbErr> for ScimError {
    fn from(err: DbErr) -> ScimError {
        ApiError::from(err).into()
    }
}
