//! End users: created by sign-up or with a secret key, listed, changed and
//! deleted. Emails are unique per application, compared lowercased.
use entity::{membership, refresh_token, session, user, user_api_key};
use sea_orm::{sea_query::Expr, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::{profile_fields, validate::Issues};
use crate::{
    audit::{self, Actor},
    error::{ApiError, ApiResult, Code},
    http::query::Page,
    storage::Db,
};

pub const MIN_PASSWORD: usize = 8;
const EMAIL_TAKEN: &str = "A user with this email already exists.";
pub const MAX_PASSWORD: usize = 256;

/// The stored (and compared) form of an email: trimmed, lowercased.
pub fn normalize_email(raw: &str) -> String {
    raw.trim().to_lowercase()
}

/// The stored form of an email, or an issue named `email`.
pub fn email(issues: &mut Issues, raw: &str) -> String {
    let email = normalize_email(raw);
    if !profile_fields::is_email(&email) {
        issues.add("email", "must be an email address");
    }
    email
}

pub fn password(issues: &mut Issues, raw: &str) {
    let length = raw.chars().count();
    if !(MIN_PASSWORD..=MAX_PASSWORD).contains(&length) {
        issues.add("password", format!("must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"));
    }
}

/// Checks a profile (absent: empty) against the application's schema.
pub async fn profile(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    issues: &mut Issues,
    profile: Option<Value>,
) -> Result<Map<String, Value>, DbErr> {
    let profile = match profile {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            issues.add("profile", "must be a JSON object");
            return Ok(Map::new());
        }
    };
    let schema = profile_fields::schema(db, application_id).await?;
    profile_fields::check_profile(&schema, &profile, issues);
    Ok(profile)
}

/// Inserts a user and its `user.created` row in the caller's transaction.
pub async fn insert(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    email: String,
    password_hash: Option<String>,
    profile: Map<String, Value>,
    actor: &Actor,
) -> ApiResult<user::Model> {
    let now = crate::clock::now();
    let user = user::Model {
        id: Uuid::now_v7(),
        application_id,
        email,
        password_hash,
        profile: Value::Object(profile),
        last_sign_in_at: None,
        created_at: now,
        updated_at: now,
    };
    user::Entity::insert(user::ActiveModel::from(user.clone()))
        .exec_without_returning(db)
        .await
        .map_err(ApiError::unless_unique(Code::Conflict, EMAIL_TAKEN))?;
    audit::record(db, application_id, actor, "user.created", Some(user.id), json!({"email": user.email})).await?;
    Ok(user)
}

fn of_application(application_id: Uuid) -> sea_orm::Select<user::Entity> {
    user::Entity::find().filter(user::Column::ApplicationId.eq(application_id))
}

pub async fn find(db: &impl ConnectionTrait, application_id: Uuid, id: Uuid) -> ApiResult<user::Model> {
    of_application(application_id)
        .filter(user::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("User", id))
}

pub async fn find_by_email(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    email: &str,
) -> Result<Option<user::Model>, DbErr> {
    of_application(application_id).filter(user::Column::Email.eq(email)).one(db).await
}

pub async fn list(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    email: Option<&str>,
    page: Page,
) -> Result<(Vec<user::Model>, bool), DbErr> {
    let mut query = of_application(application_id);
    if let Some(email) = email {
        query = query.filter(user::Column::Email.eq(normalize_email(email)));
    }
    page.fetch(query.order_by_desc(user::Column::CreatedAt).order_by_desc(user::Column::Id), db).await
}

/// A change to a user; `profile` replaces the whole profile.
#[derive(Default)]
pub struct UserPatch {
    pub email: Option<String>,
    pub password_hash: Option<String>,
    pub profile: Option<Map<String, Value>>,
}

pub async fn update(
    shard: &Db,
    application_id: Uuid,
    id: Uuid,
    patch: UserPatch,
    actor: &Actor,
) -> ApiResult<user::Model> {
    let txn = shard.begin_write().await?;
    let mut user = find(&*txn, application_id, id).await?;
    let mut changed = Vec::new();
    if let Some(email) = patch.email {
        changed.push("email");
        user.email = email;
    }
    if let Some(hash) = patch.password_hash {
        changed.push("password");
        user.password_hash = Some(hash);
    }
    if let Some(profile) = patch.profile {
        changed.push("profile");
        user.profile = Value::Object(profile);
    }
    user.updated_at = crate::clock::now();
    user::Entity::update_many()
        .col_expr(user::Column::Email, Expr::value(user.email.clone()))
        .col_expr(user::Column::PasswordHash, Expr::value(user.password_hash.clone()))
        .col_expr(user::Column::Profile, Expr::value(user.profile.clone()))
        .col_expr(user::Column::UpdatedAt, Expr::value(user.updated_at))
        .filter(user::Column::ApplicationId.eq(application_id))
        .filter(user::Column::Id.eq(id))
        .exec(&*txn)
        .await
        .map_err(ApiError::unless_unique(Code::Conflict, EMAIL_TAKEN))?;
    audit::record(&*txn, application_id, actor, "user.updated", Some(id), json!({"changed": changed})).await?;
    txn.commit().await?;
    Ok(user)
}

/// Deletes a user with everything that is theirs: sessions (and so every
/// refresh token), memberships and personal keys.
pub async fn delete(shard: &Db, application_id: Uuid, id: Uuid, actor: &Actor) -> ApiResult<()> {
    let txn = shard.begin_write().await?;
    let user = find(&*txn, application_id, id).await?;
    let sessions: Vec<Uuid> = session::Entity::find()
        .filter(session::Column::ApplicationId.eq(application_id))
        .filter(session::Column::UserId.eq(id))
        .all(&*txn)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    refresh_token::Entity::delete_many()
        .filter(refresh_token::Column::ApplicationId.eq(application_id))
        .filter(refresh_token::Column::SessionId.is_in(sessions))
        .exec(&*txn)
        .await?;
    session::Entity::delete_many()
        .filter(session::Column::ApplicationId.eq(application_id))
        .filter(session::Column::UserId.eq(id))
        .exec(&*txn)
        .await?;
    membership::Entity::delete_many()
        .filter(membership::Column::ApplicationId.eq(application_id))
        .filter(membership::Column::UserId.eq(id))
        .exec(&*txn)
        .await?;
    user_api_key::Entity::delete_many()
        .filter(user_api_key::Column::ApplicationId.eq(application_id))
        .filter(user_api_key::Column::UserId.eq(id))
        .exec(&*txn)
        .await?;
    user::Entity::delete_many()
        .filter(user::Column::ApplicationId.eq(application_id))
        .filter(user::Column::Id.eq(id))
        .exec(&*txn)
        .await?;
    audit::record(&*txn, application_id, actor, "user.deleted", Some(id), json!({"email": user.email})).await?;
    txn.commit().await?;
    Ok(())
}

/// Records a successful sign-in, in the caller's transaction; false when
/// the user no longer exists.
pub async fn touch_sign_in(
    db: &impl ConnectionTrait,
    application_id: Uuid,
    id: Uuid,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<bool, DbErr> {
    let touched = user::Entity::update_many()
        .col_expr(user::Column::LastSignInAt, Expr::value(at))
        .filter(user::Column::ApplicationId.eq(application_id))
        .filter(user::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(touched.rows_affected == 1)
}
