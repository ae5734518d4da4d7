//! Applications: creation (with the first secret key), the account's list,
//! and settings changes. The application row lives in the catalog; its data
//! and audit chain live in its region.
use std::sync::Arc;

use entity::application;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{
    api_keys::{self, Issued, NewApiKey},
    validate::Issues,
};
use crate::{
    audit::{self, Actor},
    auth::Scope,
    error::{ApiError, ApiResult},
    http::query::Page,
    region::Region,
    storage::Storage,
    tenancy::{Environment, Tenant, TenantSnapshot},
};

pub const MAX_ORIGINS: usize = 100;
pub const MAX_BRANDING_BYTES: usize = 16 * 1024;

/// A validated new application.
pub struct NewApplication {
    pub account_id: Uuid,
    pub name: String,
    pub environment: Environment,
    pub region: Region,
    pub allowed_origins: Vec<String>,
    pub branding: Value,
    /// Copied from `copy_from`'s schema (new ids, this application's).
    pub profile_fields: Vec<entity::profile_field::Model>,
}

/// A validated change of settings; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct SettingsPatch {
    pub name: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub branding: Option<Value>,
}

impl SettingsPatch {
    pub fn parse(
        name: Option<String>,
        allowed_origins: Option<Vec<String>>,
        branding: Option<Value>,
    ) -> ApiResult<Self> {
        let mut issues = Issues::default();
        let name = name.map(|n| issues.text("name", &n, 255));
        let allowed_origins = allowed_origins.map(|o| origins(&mut issues, o));
        if let Some(b) = &branding {
            branding_issue(&mut issues, b);
        }
        issues.finish()?;
        Ok(SettingsPatch { name, allowed_origins, branding })
    }
}

/// Origins as browsers send them: `scheme://host[:port]`, http or https,
/// nothing else. Stored in their serialised (lower-case) form.
pub fn origins(issues: &mut Issues, values: Vec<String>) -> Vec<String> {
    if values.len() > MAX_ORIGINS {
        issues.add("allowed_origins", format!("at most {MAX_ORIGINS} origins"));
    }
    let mut out = Vec::with_capacity(values.len());
    for value in values {
        match url::Url::parse(&value) {
            Ok(url)
                if matches!(url.scheme(), "http" | "https")
                    && url.username().is_empty()
                    && url.password().is_none()
                    && url.host().is_some()
                    && url.path() == "/"
                    && url.query().is_none()
                    && url.fragment().is_none()
                    && !value.ends_with('/') =>
            {
                out.push(url.origin().ascii_serialization())
            }
            _ => issues
                .add("allowed_origins", format!("`{}` is not an origin (scheme://host[:port])", value.escape_debug())),
        }
    }
    out.sort();
    out.dedup();
    out
}

pub fn branding_issue(issues: &mut Issues, branding: &Value) {
    if !branding.is_object() {
        issues.add("branding", "must be a JSON object");
    } else if branding.to_string().len() > MAX_BRANDING_BYTES {
        issues.add("branding", format!("must be at most {MAX_BRANDING_BYTES} bytes"));
    } else if has_nul(branding) {
        issues.add("branding", "must not contain NUL characters");
    }
}

/// PostgreSQL's JSONB refuses `\u0000` anywhere, in keys or values.
fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

/// Creates an application in its region with its audit chain and a first
/// admin key, then enters it in the catalog. The regional rows commit first:
/// until the catalog row exists nothing can reach them, so a crash between
/// the two leaves only unreachable rows, never a directory entry without data.
pub async fn create(storage: &Storage, new: NewApplication, actor: &Actor) -> ApiResult<(Tenant, Issued)> {
    let shard = storage
        .shard(new.region)
        .ok_or_else(|| ApiError::invalid("region", format!("region `{}` is not held by this node", new.region)))?;
    let now = crate::clock::now();
    let row = application::Model {
        id: Uuid::now_v7(),
        account_id: new.account_id,
        name: new.name,
        environment: new.environment.as_str().to_string(),
        region: new.region.as_str().to_string(),
        allowed_origins: json!(new.allowed_origins),
        branding: new.branding,
        created_at: now,
        updated_at: now,
    };
    let first_key = NewApiKey {
        name: "Default secret key".to_string(),
        scopes: vec![Scope::Admin.as_str().to_string(), Scope::AuditRead.as_str().to_string()],
        expires_at: None,
    };
    let txn = shard.begin_write().await?;
    audit::init_chain(&*txn, row.id).await?;
    audit::record(
        &*txn,
        row.id,
        actor,
        "application.created",
        Some(row.id),
        json!({"name": row.name, "environment": row.environment, "region": row.region}),
    )
    .await?;
    let issued = api_keys::insert(&*txn, row.id, new.environment.is_live(), &first_key, actor).await?;
    super::profile_fields::copy_into(&*txn, row.id, &new.profile_fields, actor).await?;
    txn.commit().await?;
    let catalog = storage.catalog.begin_write().await?;
    application::Entity::insert(application::ActiveModel::from(row.clone())).exec_without_returning(&*catalog).await?;
    catalog.commit().await?;
    Ok((snapshot(row)?, issued))
}

fn snapshot(row: application::Model) -> ApiResult<Tenant> {
    TenantSnapshot::from_model(row).map(Arc::new).map_err(ApiError::internal)
}

/// An application of the account; another account's is 404.
pub async fn find_in_account(storage: &Storage, account_id: Uuid, id: Uuid) -> ApiResult<Tenant> {
    let row = application::Entity::find_by_id(id)
        .filter(application::Column::AccountId.eq(account_id))
        .one(&storage.catalog.conn)
        .await?
        .ok_or_else(|| ApiError::not_found("Application", id))?;
    snapshot(row)
}

pub async fn list(storage: &Storage, account_id: Uuid, page: Page) -> ApiResult<(Vec<Tenant>, bool)> {
    let query = application::Entity::find()
        .filter(application::Column::AccountId.eq(account_id))
        .order_by_asc(application::Column::CreatedAt)
        .order_by_asc(application::Column::Id);
    let (rows, has_more) = page.fetch(query, &storage.catalog.conn).await?;
    Ok((rows.into_iter().map(snapshot).collect::<ApiResult<_>>()?, has_more))
}

/// Applies a settings change. Only the application's tenant actor calls
/// this, so changes of one application never interleave. The audit row is
/// written in a regional transaction that commits after the catalog change;
/// the two commits are adjacent, and the regional one cannot fail on a
/// constraint (it only appends to a chain this actor alone extends).
pub async fn update_settings(storage: &Storage, id: Uuid, patch: SettingsPatch, actor: &Actor) -> ApiResult<Tenant> {
    let row = application::Entity::find_by_id(id)
        .one(&storage.catalog.conn)
        .await?
        .ok_or_else(|| ApiError::not_found("Application", id))?;
    let region = Region::parse(&row.region).ok_or_else(|| ApiError::internal("application row with unknown region"))?;
    let shard =
        storage.shard(region).ok_or_else(|| ApiError::unavailable("The application's region is not held here."))?;
    let mut changed = Vec::new();
    let mut active = row.into_active_model();
    if let Some(name) = patch.name {
        active.name = Set(name);
        changed.push("name");
    }
    if let Some(origins) = patch.allowed_origins {
        active.allowed_origins = Set(json!(origins));
        changed.push("allowed_origins");
    }
    if let Some(branding) = patch.branding {
        active.branding = Set(branding);
        changed.push("branding");
    }
    active.updated_at = Set(crate::clock::now());
    let regional = shard.begin_write().await?;
    audit::record(&*regional, id, actor, "application.updated", Some(id), json!({"changed": changed})).await?;
    let catalog = storage.catalog.begin_write().await?;
    let updated = active.update(&*catalog).await?;
    catalog.commit().await?;
    regional.commit().await?;
    snapshot(updated)
}
