//! Organizations and memberships. Roles are `owner`, `admin`, `member` or
//! any custom name of the scope form.
use entity::{membership, organization, session};
use sea_orm::{sea_query::Expr, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use serde_json::json;
use uuid::Uuid;

use super::{users, validate::Issues};
use crate::{
    audit::{self, Actor},
    error::{ApiError, ApiResult, Code},
    http::query::Page,
    storage::Db,
};

const SLUG_TAKEN: &str = "An organization with this slug already exists.";

/// `^[a-z0-9][a-z0-9-]{0,62}$`
fn is_slug(value: &str) -> bool {
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

/// `owner`, `admin`, `member` or any custom role: 1 to 64 characters
/// without control characters.
pub fn role(issues: &mut Issues, role: &str) {
    issues.text("role", role, 64);
}

pub async fn create(
    shard: &Db,
    application_id: Uuid,
    name: &str,
    slug: Option<String>,
    actor: &Actor,
) -> ApiResult<organization::Model> {
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
    let now = crate::clock::now();
    let organization = organization::Model { id, application_id, name, slug, created_at: now, updated_at: now };
    let txn = shard.begin_write().await?;
    organization::Entity::insert(organization::ActiveModel::from(organization.clone()))
        .exec_without_returning(&*txn)
        .await
        .map_err(ApiError::unless_unique(Code::Conflict, SLUG_TAKEN))?;
    audit::record(
        &*txn,
        application_id,
        actor,
        "organization.created",
        Some(id),
        json!({"name": organization.name, "slug": organization.slug}),
    )
    .await?;
    txn.commit().await?;
    Ok(organization)
}

fn of_application(application_id: Uuid) -> sea_orm::Select<organization::Entity> {
    organization::Entity::find().filter(organization::Column::ApplicationId.eq(application_id))
}

pub async fn find(db: &impl ConnectionTrait, application_id: Uuid, id: Uuid) -> ApiResult<organization::Model> {
    of_application(application_id)
        .filter(organization::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("Organization", id))
}

pub async fn list(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    page: Page,
) -> Result<(Vec<organization::Model>, bool), DbErr> {
    page.fetch(
        of_application(application_id)
            .order_by_desc(organization::Column::CreatedAt)
            .order_by_desc(organization::Column::Id),
        db,
    )
    .await
}

pub async fn update(
    shard: &Db,
    application_id: Uuid,
    id: Uuid,
    name: Option<String>,
    slug: Option<String>,
    actor: &Actor,
) -> ApiResult<organization::Model> {
    let mut issues = Issues::default();
    let name = name.map(|n| issues.text("name", &n, 255));
    if slug.as_deref().is_some_and(|s| !is_slug(s)) {
        issues.add("slug", "must match ^[a-z0-9][a-z0-9-]{0,62}$");
    }
    issues.finish()?;
    let txn = shard.begin_write().await?;
    let mut organization = find(&*txn, application_id, id).await?;
    organization.name = name.unwrap_or(organization.name);
    organization.slug = slug.unwrap_or(organization.slug);
    organization.updated_at = crate::clock::now();
    organization::Entity::update_many()
        .col_expr(organization::Column::Name, Expr::value(organization.name.clone()))
        .col_expr(organization::Column::Slug, Expr::value(organization.slug.clone()))
        .col_expr(organization::Column::UpdatedAt, Expr::value(organization.updated_at))
        .filter(organization::Column::ApplicationId.eq(application_id))
        .filter(organization::Column::Id.eq(id))
        .exec(&*txn)
        .await
        .map_err(ApiError::unless_unique(Code::Conflict, SLUG_TAKEN))?;
    audit::record(
        &*txn,
        application_id,
        actor,
        "organization.updated",
        Some(id),
        json!({"name": organization.name, "slug": organization.slug}),
    )
    .await?;
    txn.commit().await?;
    Ok(organization)
}

/// Deletes an organization and its memberships; sessions that had it
/// active carry no organization from their next token on.
pub async fn delete(shard: &Db, application_id: Uuid, id: Uuid, actor: &Actor) -> ApiResult<()> {
    let txn = shard.begin_write().await?;
    let organization = find(&*txn, application_id, id).await?;
    membership::Entity::delete_many()
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::OrganizationId.eq(id))
        .exec(&*txn)
        .await?;
    session::Entity::update_many()
        .col_expr(session::Column::ActiveOrganizationId, Expr::value(Option::<Uuid>::None))
        .filter(session::Column::ApplicationId.eq(application_id))
        .filter(session::Column::ActiveOrganizationId.eq(id))
        .exec(&*txn)
        .await?;
    organization::Entity::delete_many()
        .filter(organization::Column::ApplicationId.eq(application_id))
        .filter(organization::Column::Id.eq(id))
        .exec(&*txn)
        .await?;
    audit::record(&*txn, application_id, actor, "organization.deleted", Some(id), json!({"slug": organization.slug}))
        .await?;
    txn.commit().await?;
    Ok(())
}

fn memberships_of(application_id: Uuid, organization_id: Uuid) -> sea_orm::Select<membership::Entity> {
    membership::Entity::find()
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::OrganizationId.eq(organization_id))
}

pub async fn find_membership(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    organization_id: Uuid,
    user_id: Uuid,
) -> Result<Option<membership::Model>, DbErr> {
    memberships_of(application_id, organization_id).filter(membership::Column::UserId.eq(user_id)).one(db).await
}

pub async fn add_member(
    shard: &Db,
    application_id: Uuid,
    organization_id: Uuid,
    user_id: Uuid,
    role_name: String,
    actor: &Actor,
) -> ApiResult<membership::Model> {
    let mut issues = Issues::default();
    role(&mut issues, &role_name);
    issues.finish()?;
    let txn = shard.begin_write().await?;
    find(&*txn, application_id, organization_id).await?;
    users::find(&*txn, application_id, user_id).await.map_err(|_| ApiError::invalid("user_id", "no such user"))?;
    let membership = membership::Model {
        application_id,
        organization_id,
        user_id,
        role: role_name,
        created_at: crate::clock::now(),
    };
    membership::Entity::insert(membership::ActiveModel::from(membership.clone()))
        .exec_without_returning(&*txn)
        .await
        .map_err(ApiError::unless_unique(Code::AlreadyMember, "The user is already a member of this organization."))?;
    audit::record(
        &*txn,
        application_id,
        actor,
        "organization.membership.created",
        Some(organization_id),
        json!({"user_id": user_id, "role": membership.role}),
    )
    .await?;
    txn.commit().await?;
    Ok(membership)
}

pub async fn list_members(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    organization_id: Uuid,
    page: Page,
) -> ApiResult<(Vec<membership::Model>, bool)> {
    find(db, application_id, organization_id).await?;
    Ok(page
        .fetch(
            memberships_of(application_id, organization_id)
                .order_by_asc(membership::Column::CreatedAt)
                .order_by_asc(membership::Column::UserId),
            db,
        )
        .await?)
}

pub async fn update_member(
    shard: &Db,
    application_id: Uuid,
    organization_id: Uuid,
    user_id: Uuid,
    role_name: String,
    actor: &Actor,
) -> ApiResult<membership::Model> {
    let mut issues = Issues::default();
    role(&mut issues, &role_name);
    issues.finish()?;
    let txn = shard.begin_write().await?;
    let mut membership = find_membership(&*txn, application_id, organization_id, user_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Membership", user_id))?;
    membership::Entity::update_many()
        .col_expr(membership::Column::Role, Expr::value(role_name.clone()))
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::OrganizationId.eq(organization_id))
        .filter(membership::Column::UserId.eq(user_id))
        .exec(&*txn)
        .await?;
    audit::record(
        &*txn,
        application_id,
        actor,
        "organization.membership.updated",
        Some(organization_id),
        json!({"user_id": user_id, "role": role_name, "previous_role": membership.role}),
    )
    .await?;
    txn.commit().await?;
    membership.role = role_name;
    Ok(membership)
}

pub async fn remove_member(
    shard: &Db,
    application_id: Uuid,
    organization_id: Uuid,
    user_id: Uuid,
    actor: &Actor,
) -> ApiResult<()> {
    let txn = shard.begin_write().await?;
    let membership = find_membership(&*txn, application_id, organization_id, user_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Membership", user_id))?;
    membership::Entity::delete_many()
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::OrganizationId.eq(organization_id))
        .filter(membership::Column::UserId.eq(user_id))
        .exec(&*txn)
        .await?;
    audit::record(
        &*txn,
        application_id,
        actor,
        "organization.membership.deleted",
        Some(organization_id),
        json!({"user_id": user_id, "role": membership.role}),
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// The user's memberships with their organizations.
pub async fn of_user(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    user_id: Uuid,
) -> Result<Vec<(membership::Model, organization::Model)>, DbErr> {
    let memberships = membership::Entity::find()
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::UserId.eq(user_id))
        .order_by_asc(membership::Column::CreatedAt)
        .all(db)
        .await?;
    let ids: Vec<Uuid> = memberships.iter().map(|m| m.organization_id).collect();
    let organizations = of_application(application_id).filter(organization::Column::Id.is_in(ids)).all(db).await?;
    Ok(memberships
        .into_iter()
        .filter_map(|m| {
            let organization = organizations.iter().find(|o| o.id == m.organization_id)?.clone();
            Some((m, organization))
        })
        .collect())
}
