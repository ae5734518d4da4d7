//! Organizations (their memberships are [`super::memberships`]). Roles are
//! `owner`, `admin`, `member` or any custom name.
pub mod http;
pub mod view;

use entity::{entitlement_override, invitation, membership, organization, session};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    unless_unique,
    validate::{Invalid, Issues},
};
use crate::{
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope, TenantTxn},
};

/// What went wrong with an organization or a membership.
#[derive(Debug, thiserror::Error)]
pub enum OrganizationError {
    #[error("organization `{0}` not found")]
    NotFound(Uuid),
    /// No membership of this user (named by the user's id) in the organization.
    #[error("membership of user `{0}` not found")]
    MembershipNotFound(Uuid),
    /// Slugs are unique within the application.
    #[error("an organization with this slug already exists")]
    SlugTaken,
    #[error("the user is already a member of this organization")]
    AlreadyMember,
    /// A new membership names a user the application does not have.
    #[error("no such user")]
    NoSuchUser,
    /// The change would leave an organization that has an owner with none.
    #[error("the organization's last owner cannot be removed or demoted")]
    LastOwner,
    /// A grant decided earlier by an owner or admin who may not make it now
    /// (an SSO connection's role, set by an owner since demoted).
    #[error("the role `{role}` was set by an {granter} of the organization, who may not grant it")]
    GrantNotAllowed { granter: &'static str, role: String },
    #[error(transparent)]
    Sod(#[from] super::sod::SodError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<OrganizationError> for ApiError {
    fn from(err: OrganizationError) -> Self {
        match err {
            OrganizationError::NotFound(id) => ApiError::not_found("Organization", id),
            OrganizationError::MembershipNotFound(user_id) => ApiError::not_found("Membership", user_id),
            OrganizationError::SlugTaken => {
                ApiError::new(Code::Conflict, "An organization with this slug already exists.")
            }
            OrganizationError::AlreadyMember => {
                ApiError::new(Code::AlreadyMember, "The user is already a member of this organization.")
            }
            OrganizationError::NoSuchUser => ApiError::invalid("user_id", "no such user"),
            OrganizationError::LastOwner => ApiError::new(
                Code::LastOwner,
                "The organization's last owner cannot be removed or given another role; make another member owner first.",
            ),
            OrganizationError::GrantNotAllowed { .. } => ApiError::new(Code::InsufficientRole, err.to_string()),
            OrganizationError::Sod(err) => err.into(),
            OrganizationError::Invalid(err) => err.into(),
            OrganizationError::Db(err) => err.into(),
        }
    }
}

/// `^[a-z0-9][a-z0-9-]{0,62}$`
pub fn is_slug(value: &str) -> bool {
    let mut chars = value.chars();
    value.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A slug made from a name: lowercase letters and digits, dashes between.
fn slug_of(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(48);
    slug.trim_end_matches('-').to_string()
}

pub async fn create(
    scope: &TenantScope,
    name: &str,
    slug: Option<String>,
) -> Result<organization::Model, OrganizationError> {
    let mut issues = Issues::default();
    let name = issues.text("name", name, 255);
    let id = Uuid::now_v7();
    let slug = match slug {
        Some(slug) => {
            if !is_slug(&slug) {
                issues.add("slug", "must match ^[a-z0-9][a-z0-9-]{0,62}$");
            }
            slug
        }
        None => match slug_of(&name) {
            empty if empty.is_empty() => id.simple().to_string(),
            // Distinct by default: two organizations may share a name.
            base => format!("{base}-{}", &id.simple().to_string()[24..]),
        },
    };
    issues.finish()?;
    let mut txn = scope.begin().await?;
    let organization = insert(&mut txn, id, name, slug).await?;
    txn.commit().await?;
    Ok(organization)
}

/// Inserts a checked organization and its audit row in the caller's transaction.
pub async fn insert(
    txn: &mut TenantTxn,
    id: Uuid,
    name: String,
    slug: String,
) -> Result<organization::Model, OrganizationError> {
    let now = crate::clock::now();
    let organization = organization::Model {
        id,
        application_id: txn.application_id(),
        name,
        slug,
        plan_key: None,
        created_at: now,
        updated_at: now,
    };
    txn.insert(organization::ActiveModel::from(organization.clone()))
        .await
        .map_err(unless_unique(OrganizationError::SlugTaken))?;
    txn.audit(EventType::OrganizationCreated, Some(id), json!({"name": organization.name, "slug": organization.slug}))
        .await?;
    Ok(organization)
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<organization::Model, OrganizationError> {
    db.find_by_id::<organization::Entity>(id).one(db.conn()).await?.ok_or(OrganizationError::NotFound(id))
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<organization::Model>, bool), DbErr> {
    page.fetch(
        db.find::<organization::Entity>()
            .order_by_desc(organization::Column::CreatedAt)
            .order_by_desc(organization::Column::Id),
        db.conn(),
    )
    .await
}

pub async fn update(
    scope: &TenantScope,
    id: Uuid,
    name: Option<String>,
    slug: Option<String>,
) -> Result<organization::Model, OrganizationError> {
    let mut issues = Issues::default();
    let name = name.map(|n| issues.text("name", &n, 255));
    if slug.as_deref().is_some_and(|s| !is_slug(s)) {
        issues.add("slug", "must match ^[a-z0-9][a-z0-9-]{0,62}$");
    }
    issues.finish()?;
    let mut txn = scope.begin().await?;
    let mut organization = find(&txn, id).await?;
    organization.name = name.unwrap_or(organization.name);
    organization.slug = slug.unwrap_or(organization.slug);
    organization.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<organization::Entity>| {
        q.col_expr(organization::Column::Name, Expr::value(organization.name.clone()))
            .col_expr(organization::Column::Slug, Expr::value(organization.slug.clone()))
            .col_expr(organization::Column::UpdatedAt, Expr::value(organization.updated_at))
            .filter(organization::Column::Id.eq(id))
    })
    .await
    .map_err(unless_unique(OrganizationError::SlugTaken))?;
    txn.audit(EventType::OrganizationUpdated, Some(id), json!({"name": organization.name, "slug": organization.slug}))
        .await?;
    txn.commit().await?;
    Ok(organization)
}

/// Deletes an organization with its memberships, invitations, entitlement
/// overrides and SCIM directories (the caller then drops its cached
/// entitlements); sessions that had it
/// active carry no organization from their next token on.
pub async fn delete(scope: &TenantScope, id: Uuid) -> Result<(), OrganizationError> {
    let mut txn = scope.begin().await?;
    let organization = find(&txn, id).await?;
    txn.delete::<membership::Entity>(membership::Column::OrganizationId.eq(id)).await?;
    txn.delete::<entitlement_override::Entity>(entitlement_override::Column::OrganizationId.eq(id)).await?;
    txn.delete::<invitation::Entity>(invitation::Column::OrganizationId.eq(id)).await?;
    let directories = super::scim::records::forget_directories_of(&mut txn, id).await?;
    let connections = super::sso_connections::records::forget_organization(&mut txn, id).await?;
    txn.update_many(|q: UpdateMany<session::Entity>| {
        q.col_expr(session::Column::ActiveOrganizationId, Expr::value(Option::<Uuid>::None))
            .filter(session::Column::ActiveOrganizationId.eq(id))
    })
    .await?;
    txn.delete::<organization::Entity>(organization::Column::Id.eq(id)).await?;
    let data = json!({"slug": organization.slug, "scim_directories_deleted": directories,
        "sso_connections_deleted": connections});
    txn.audit(EventType::OrganizationDeleted, Some(id), data).await?;
    txn.commit().await?;
    Ok(())
}
