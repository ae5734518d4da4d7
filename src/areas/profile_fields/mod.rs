//! The profile-field schema (operation 5, with list, update, delete) and its
//! enforcement on sign-up and on user create and update.
pub mod http;

use entity::profile_field;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, QueryOrder, QuerySelect, UpdateMany};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::{
    unless_unique,
    validate::{Invalid, Issues},
};
use crate::{
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantTxn},
    tenancy::InTurn,
};

/// What went wrong with a profile field of the schema.
#[derive(Debug, thiserror::Error)]
pub enum ProfileFieldError {
    #[error("profile field `{0}` not found")]
    NotFound(Uuid),
    /// Field keys are unique within the application.
    #[error("a profile field with key `{0}` already exists")]
    KeyTaken(String),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ProfileFieldError> for ApiError {
    fn from(err: ProfileFieldError) -> Self {
        match err {
            ProfileFieldError::NotFound(id) => ApiError::not_found("Profile field", id),
            ProfileFieldError::KeyTaken(key) => {
                ApiError::new(Code::KeyInUse, format!("A profile field with key `{key}` already exists."))
            }
            ProfileFieldError::Invalid(err) => err.into(),
            ProfileFieldError::Limit(err) => err.into(),
            ProfileFieldError::Db(err) => err.into(),
        }
    }
}

pub const FIELD_TYPES: [&str; 9] =
    ["text", "number", "boolean", "date", "email", "url", "phone", "select", "multi_select"];
pub const MAX_OPTIONS: usize = 200;
/// Longest text value a profile field holds.
const MAX_VALUE_CHARS: usize = 1024;

/// `^[a-z][a-z0-9_]{0,63}$`
pub fn is_field_key(value: &str) -> bool {
    let mut chars = value.chars();
    value.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub fn is_select(field_type: &str) -> bool {
    matches!(field_type, "select" | "multi_select")
}

/// Options as given: a non-empty array of distinct non-empty strings for the
/// select types, absent for the others.
fn options_issue(issues: &mut Issues, field_type: &str, options: &Option<Value>) {
    match (is_select(field_type), options) {
        (true, Some(Value::Array(items))) if !items.is_empty() && items.len() <= MAX_OPTIONS => {
            let strings: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            let mut distinct = strings.clone();
            distinct.sort();
            distinct.dedup();
            if strings.len() != items.len() || strings.iter().any(|s| s.is_empty() || s.chars().count() > 255) {
                issues.add("options", "must be strings of 1 to 255 characters");
            } else if distinct.len() != strings.len() {
                issues.add("options", "must not repeat");
            }
        }
        (true, _) => issues.add("options", format!("required for `{field_type}`: 1 to {MAX_OPTIONS} strings")),
        (false, Some(Value::Null) | None) => {}
        (false, Some(_)) => issues.add("options", "only `select` and `multi_select` take options"),
    }
}

pub struct NewField {
    pub key: String,
    pub label: String,
    pub field_type: String,
    pub options: Option<Value>,
    pub position: Option<i32>,
    pub required: bool,
}

impl NewField {
    pub fn check(&self) -> Result<(), Invalid> {
        let mut issues = Issues::default();
        if !is_field_key(&self.key) {
            issues.add("key", "must match ^[a-z][a-z0-9_]{0,63}$");
        }
        issues.text("label", &self.label, 255);
        if !FIELD_TYPES.contains(&self.field_type.as_str()) {
            issues.add("field_type", format!("must be one of {}", FIELD_TYPES.join(", ")));
        } else {
            options_issue(&mut issues, &self.field_type, &self.options);
        }
        if self.position.is_some_and(|p| p < 0) {
            issues.add("position", "must be 0 or more");
        }
        issues.finish()
    }
}

pub async fn create(turn: &InTurn, new: NewField, limit: u64) -> Result<profile_field::Model, ProfileFieldError> {
    let scope = turn.scope();
    new.check()?;
    let mut txn = scope.begin().await?;
    txn.reserve::<profile_field::Entity>(Limit { max: limit, what: "profile fields", field: "key" }, |all| all).await?;
    let position = match new.position {
        Some(position) => position,
        None => next_position(&txn).await?,
    };
    let now = crate::clock::now();
    let field = profile_field::Model {
        id: Uuid::now_v7(),
        application_id: scope.tenant().id,
        key: new.key,
        label: new.label,
        options: if is_select(&new.field_type) { new.options } else { None },
        field_type: new.field_type,
        position,
        required: new.required,
        created_at: now,
        updated_at: now,
    };
    txn.insert(profile_field::ActiveModel::from(field.clone()))
        .await
        .map_err(unless_unique(ProfileFieldError::KeyTaken(field.key.clone())))?;
    txn.audit(EventType::ProfileFieldCreated, Some(field.id), describe(&field)).await?;
    txn.commit().await?;
    Ok(field)
}

async fn next_position(db: &impl TenantConn) -> Result<i32, DbErr> {
    let last: Option<i32> = db
        .find::<profile_field::Entity>()
        .select_only()
        .column(profile_field::Column::Position)
        .order_by_desc(profile_field::Column::Position)
        .into_tuple()
        .one(db.conn())
        .await?;
    Ok(last.map_or(0, |p| p.saturating_add(1)))
}

fn describe(field: &profile_field::Model) -> Value {
    json!({"key": field.key, "field_type": field.field_type, "required": field.required})
}

fn in_display_order(db: &impl TenantConn) -> sea_orm::Select<profile_field::Entity> {
    db.find::<profile_field::Entity>()
        .order_by_asc(profile_field::Column::Position)
        .order_by_asc(profile_field::Column::Id)
}

/// The whole schema, in display order.
pub async fn schema(db: &impl TenantConn) -> Result<Vec<profile_field::Model>, DbErr> {
    in_display_order(db).all(db.conn()).await
}

/// One page of the schema, in display order.
pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<profile_field::Model>, bool), DbErr> {
    page.fetch(in_display_order(db), db.conn()).await
}

/// Gives an application copies of another's fields (for `copy_from`), in
/// the caller's transaction, one `profile_field.created` row each.
pub async fn copy_into(txn: &mut TenantTxn, fields: &[profile_field::Model]) -> Result<(), DbErr> {
    let now = crate::clock::now();
    for field in fields {
        let copy = profile_field::Model {
            id: Uuid::now_v7(),
            application_id: txn.application_id(),
            created_at: now,
            updated_at: now,
            ..field.clone()
        };
        txn.insert(profile_field::ActiveModel::from(copy.clone())).await?;
        txn.audit(EventType::ProfileFieldCreated, Some(copy.id), describe(&copy)).await?;
    }
    Ok(())
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<profile_field::Model, ProfileFieldError> {
    db.find_by_id::<profile_field::Entity>(id).one(db.conn()).await?.ok_or(ProfileFieldError::NotFound(id))
}

#[derive(Default)]
pub struct FieldPatch {
    pub label: Option<String>,
    pub options: Option<Option<Value>>,
    pub position: Option<i32>,
    pub required: Option<bool>,
}

pub async fn update(turn: &InTurn, id: Uuid, patch: FieldPatch) -> Result<profile_field::Model, ProfileFieldError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let mut field = find(&txn, id).await?;
    let mut issues = Issues::default();
    if let Some(label) = patch.label {
        field.label = issues.text("label", &label, 255);
    }
    if let Some(options) = patch.options {
        options_issue(&mut issues, &field.field_type, &options);
        field.options = options.filter(|o| !o.is_null());
    }
    if let Some(position) = patch.position {
        if position < 0 {
            issues.add("position", "must be 0 or more");
        }
        field.position = position;
    }
    if let Some(required) = patch.required {
        field.required = required;
    }
    issues.finish()?;
    field.updated_at = crate::clock::now();
    txn.update_many(|q: UpdateMany<profile_field::Entity>| {
        q.col_expr(profile_field::Column::Label, Expr::value(field.label.clone()))
            .col_expr(profile_field::Column::Options, Expr::value(field.options.clone()))
            .col_expr(profile_field::Column::Position, Expr::value(field.position))
            .col_expr(profile_field::Column::Required, Expr::value(field.required))
            .col_expr(profile_field::Column::UpdatedAt, Expr::value(field.updated_at))
            .filter(profile_field::Column::Id.eq(id))
    })
    .await?;
    txn.audit(EventType::ProfileFieldUpdated, Some(id), describe(&field)).await?;
    txn.commit().await?;
    Ok(field)
}

pub async fn delete(turn: &InTurn, id: Uuid) -> Result<(), ProfileFieldError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let field = find(&txn, id).await?;
    txn.delete::<profile_field::Entity>(profile_field::Column::Id.eq(id)).await?;
    txn.audit(EventType::ProfileFieldDeleted, Some(id), describe(&field)).await?;
    txn.commit().await?;
    Ok(())
}

/// Checks a whole profile against the schema: no unknown keys, every
/// required field present, each value of its field's type. Issues are
/// named `profile.<key>`.
pub fn check_profile(schema: &[profile_field::Model], profile: &Map<String, Value>, issues: &mut Issues) {
    for key in profile.keys() {
        if !schema.iter().any(|f| &f.key == key) {
            issues.add(&format!("profile.{}", key.escape_debug()), "is not a profile field of this application");
        }
    }
    for field in schema {
        let name = format!("profile.{}", field.key);
        match profile.get(&field.key) {
            None | Some(Value::Null) if field.required => issues.add(&name, "is required"),
            None | Some(Value::Null) => {}
            Some(value) => {
                if let Some(problem) = value_issue(field, value) {
                    issues.add(&name, problem);
                }
            }
        }
    }
}

fn value_issue(field: &profile_field::Model, value: &Value) -> Option<String> {
    let options: Vec<&str> =
        field.options.as_ref().and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let text = |check: fn(&str) -> bool, what: &str| match value.as_str() {
        Some(s) if s.chars().count() <= MAX_VALUE_CHARS && !s.chars().any(char::is_control) && check(s) => None,
        _ => Some(format!("must be {what}")),
    };
    match field.field_type.as_str() {
        "text" => text(|s| !s.is_empty(), "a string of 1 to 1024 characters"),
        "number" => (!value.is_number()).then(|| "must be a number".to_string()),
        "boolean" => (!value.is_boolean()).then(|| "must be true or false".to_string()),
        "date" => text(|s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(), "a date (YYYY-MM-DD)"),
        "email" => text(is_email, "an email address"),
        "url" => text(is_web_url, "an http or https URL"),
        "phone" => text(is_phone, "a phone number (digits, optionally with +, spaces, dashes)"),
        "select" => match value.as_str() {
            Some(s) if options.contains(&s) => None,
            _ => Some(format!("must be one of: {}", options.join(", "))),
        },
        "multi_select" => match value.as_array() {
            Some(items) if items.iter().all(|i| i.as_str().is_some_and(|s| options.contains(&s))) => {
                let mut seen: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                seen.sort();
                seen.dedup();
                (seen.len() != items.len()).then(|| "must not repeat a value".to_string())
            }
            _ => Some(format!("must be an array of: {}", options.join(", "))),
        },
        other => Some(format!("has unknown type `{other}`")),
    }
}

/// A plausible address: one `@`, a non-empty local part, a dotted domain,
/// no spaces. Deliverability is the mail system's question.
pub fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    value.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn is_web_url(value: &str) -> bool {
    url::Url::parse(value).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

fn is_phone(value: &str) -> bool {
    let digits = value.strip_prefix('+').unwrap_or(value);
    let count = digits.chars().filter(char::is_ascii_digit).count();
    (4..=15).contains(&count) && digits.chars().all(|c| c.is_ascii_digit() || " -().".contains(c))
}
