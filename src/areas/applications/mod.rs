//! Applications: creation (with the first secret key), the account's list,
//! and settings changes. The application row lives in the catalog; its data
//! and audit chain live in its region.
pub mod http;

use std::sync::Arc;

use entity::{application, audit_event, pending_audit_event};
use sea_orm::{ActiveValue::Set, DbErr, IntoActiveModel, SqlErr};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{
    api_keys::{self, ApiKeyError, Issued, NewApiKey, ADMIN_SCOPE},
    validate::{Invalid, Issues},
};
use crate::{
    audit::{self, Actor, ActorKind, Entry},
    error::ApiError,
    events::catalog::EventType,
    events::url_safety,
    region::Region,
    storage::{catalog, Page, Storage, TenantConn, TenantScope},
    tenancy::{Environment, InTurn, Tenant, TenantSnapshot},
};

/// What went wrong with an application (its catalog row, its creation, its
/// settings, the relay of its settings' audit rows).
#[derive(Debug, thiserror::Error)]
pub enum ApplicationError {
    /// Absent, or of another account.
    #[error("application `{0}` not found")]
    NotFound(Uuid),
    /// A new application's region is not one this node holds.
    #[error("region `{0}` is not held by this node")]
    RegionNotHeld(Region),
    /// `copy_from` names no application of the caller's account.
    #[error("the application to copy is not of the same account")]
    CopyFromOtherAccount,
    #[error("the application to copy is of a region this node does not hold")]
    CopyFromRegionNotHeld,
    /// A catalog audit row's region is not held here (its relay waits).
    #[error("the region {0} is not held here")]
    RelayRegionNotHeld(Region),
    /// A catalog row this code would not have written (edited by hand).
    #[error("a catalog row does not convert: {0}")]
    CatalogRow(String),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Issuing the first key.
    #[error(transparent)]
    FirstKey(#[from] ApiKeyError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<ApplicationError> for ApiError {
    fn from(err: ApplicationError) -> Self {
        match err {
            ApplicationError::NotFound(id) => ApiError::not_found("Application", id),
            ApplicationError::RegionNotHeld(region) => {
                ApiError::invalid("region", format!("region `{region}` is not held by this node"))
            }
            ApplicationError::CopyFromOtherAccount => {
                ApiError::invalid("copy_from", "must be an application of the same account")
            }
            ApplicationError::CopyFromRegionNotHeld => {
                ApiError::invalid("copy_from", "must be an application of a region this node holds")
            }
            ApplicationError::RelayRegionNotHeld(_) => ApiError::unavailable("The region is not held here."),
            ApplicationError::CatalogRow(_) => ApiError::internal_error(&err),
            ApplicationError::Invalid(err) => err.into(),
            ApplicationError::FirstKey(err) => err.into(),
            ApplicationError::Db(err) => err.into(),
        }
    }
}

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
    pub refresh_reuse_interval_seconds: u32,
    pub entitlement_claims: Vec<String>,
    pub require_verified_email: bool,
    pub hosted_pages_in_frames: bool,
    pub require_aal2_for: Vec<String>,
    pub passkey_rp_id: Option<String>,
    /// Copied from `copy_from`'s schema (new ids, this application's).
    pub profile_fields: Vec<entity::profile_field::Model>,
}

/// A validated change of settings; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct SettingsPatch {
    pub name: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub branding: Option<Value>,
    pub refresh_reuse_interval_seconds: Option<u32>,
    pub entitlement_claims: Option<Vec<String>>,
    pub require_verified_email: Option<bool>,
    pub hosted_pages_in_frames: Option<bool>,
    pub require_aal2_for: Option<Vec<String>>,
    /// `Some(None)`: passkeys off.
    pub passkey_rp_id: Option<Option<String>>,
}

/// The longest reuse interval of a refresh token (as Auth0 and Okta bound theirs).
pub const MAX_REFRESH_REUSE_INTERVAL: i64 = 60;

impl SettingsPatch {
    #[allow(clippy::too_many_arguments)] // one per setting, each checked here
    pub fn parse(
        name: Option<String>,
        allowed_origins: Option<Vec<String>>,
        branding: Option<Value>,
        refresh_reuse_interval_seconds: Option<i64>,
        entitlement_claims: Option<Vec<String>>,
        require_verified_email: Option<bool>,
        hosted_pages_in_frames: Option<bool>,
        require_aal2_for: Option<Vec<String>>,
        passkey_rp_id: Option<Option<String>>,
    ) -> Result<Self, Invalid> {
        let mut issues = Issues::default();
        let name = name.map(|n| issues.text("name", &n, 255));
        let allowed_origins = allowed_origins.map(|o| origins(&mut issues, o));
        if let Some(b) = &branding {
            branding_issue(&mut issues, b);
        }
        let refresh_reuse_interval_seconds = refresh_reuse_interval_seconds.map(|seconds| {
            if !(0..=MAX_REFRESH_REUSE_INTERVAL).contains(&seconds) {
                issues.add("refresh_reuse_interval_seconds", format!("must be 0 to {MAX_REFRESH_REUSE_INTERVAL}"));
            }
            seconds.clamp(0, MAX_REFRESH_REUSE_INTERVAL) as u32
        });
        if let Some(keys) = &entitlement_claims {
            entitlement_claims_issue(&mut issues, keys);
        }
        if let Some(actions) = &require_aal2_for {
            aal2_actions_issue(&mut issues, actions);
        }
        if let Some(Some(rp_id)) = &passkey_rp_id {
            if !is_relying_party_id(rp_id) {
                issues.add(
                    "passkey_rp_id",
                    "must be a domain name in lower case (`example.com`, `localhost`), not an address",
                );
            }
        }
        issues.finish()?;
        Ok(SettingsPatch {
            name,
            allowed_origins,
            branding,
            refresh_reuse_interval_seconds,
            entitlement_claims,
            require_verified_email,
            hosted_pages_in_frames,
            require_aal2_for,
            passkey_rp_id,
        })
    }
}

/// Whether `id` can be a WebAuthn relying-party id: a domain name in ASCII
/// lower case (IDNs in their `xn--` form), not an IP address.
pub fn is_relying_party_id(id: &str) -> bool {
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let last_is_name = id.rsplit('.').next().is_some_and(|l| l.bytes().any(|b| b.is_ascii_lowercase()));
    id.len() <= 253 && id.split('.').all(label_ok) && last_is_name
}

/// The end-user actions `require_aal2_for` may name.
pub const AAL2_ACTIONS: [&str; 3] = ["create_personal_key", "revoke_personal_key", "register_passkey"];

fn aal2_actions_issue(issues: &mut Issues, actions: &[String]) {
    let distinct: std::collections::HashSet<&String> = actions.iter().collect();
    if distinct.len() != actions.len() {
        issues.add("require_aal2_for", "must not repeat an action");
    }
    if let Some(unknown) = actions.iter().find(|a| !AAL2_ACTIONS.contains(&a.as_str())) {
        issues
            .add("require_aal2_for", format!("`{}` is not one of {}", unknown.escape_debug(), AAL2_ACTIONS.join(", ")));
    }
}

/// The most feature keys a token may carry (each adds to every token of a
/// session with an organization).
pub const MAX_ENTITLEMENT_CLAIMS: usize = 20;

/// Distinct feature keys (`^[a-z][a-z0-9_:.-]{0,63}$`), at most 20. A key
/// no feature has yet is allowed: it appears in tokens once defined.
fn entitlement_claims_issue(issues: &mut Issues, keys: &[String]) {
    let distinct: std::collections::HashSet<&String> = keys.iter().collect();
    if keys.len() > MAX_ENTITLEMENT_CLAIMS {
        issues.add("entitlement_claims", format!("at most {MAX_ENTITLEMENT_CLAIMS} feature keys"));
    } else if distinct.len() != keys.len() {
        issues.add("entitlement_claims", "must not repeat a key");
    } else if let Some(bad) = keys.iter().find(|k| !super::validate::is_scope(k)) {
        issues.add("entitlement_claims", format!("`{}` must match ^[a-z][a-z0-9_:.-]{{0,63}}$", bad.escape_debug()));
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
        let strict = url_safety::authority_issue(&value).is_none()
            && !value.chars().any(|c| c.is_whitespace() || c.is_control() || c == '\\');
        match url::Url::parse(&value) {
            Ok(url)
                if strict
                    && matches!(url.scheme(), "http" | "https")
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

/// The longest `redirect_uri` a browser flow takes.
pub const MAX_REDIRECT_URI: usize = 2048;

/// Why a `redirect_uri` (where a browser flow sends the user back: a
/// provider sign-in, a password-reset link) is refused: it must be an
/// absolute http(s) URL without user info or fragment, on one of the
/// application's origins.
pub fn redirect_uri_issue(raw: &str, allowed_origins: &[String]) -> Option<&'static str> {
    if raw.is_empty() || raw.len() > MAX_REDIRECT_URI {
        return Some("must be 1 to 2048 characters");
    }
    if url_safety::authority_issue(raw).is_some() || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("is not an absolute http(s) URL");
    }
    let Ok(url) = url::Url::parse(raw) else { return Some("is not an absolute http(s) URL") };
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Some("is not an absolute http(s) URL");
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Some("must not carry user info or a fragment");
    }
    let origin = url.origin().ascii_serialization();
    (!allowed_origins.contains(&origin)).then_some("is not on the application's allowed origins")
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
pub async fn create(
    storage: &Storage,
    new: NewApplication,
    actor: &Actor,
) -> Result<(Tenant, Issued), ApplicationError> {
    if !storage.holds(new.region) {
        return Err(ApplicationError::RegionNotHeld(new.region));
    }
    let placed = crate::storage::shards::place(storage, new.region).await?;
    let shard = storage.shard(placed).ok_or(ApplicationError::RegionNotHeld(new.region))?;
    let now = crate::clock::now();
    let row = application::Model {
        id: Uuid::now_v7(),
        account_id: new.account_id,
        name: new.name,
        environment: new.environment.as_str().to_string(),
        region: new.region.as_str().to_string(),
        allowed_origins: json!(new.allowed_origins),
        branding: new.branding,
        refresh_reuse_interval_seconds: new.refresh_reuse_interval_seconds as i32,
        entitlement_claims: Some(json!(new.entitlement_claims)),
        require_verified_email: new.require_verified_email,
        hosted_pages_in_frames: new.hosted_pages_in_frames,
        require_aal2_for: Some(json!(new.require_aal2_for)),
        passkey_rp_id: new.passkey_rp_id,
        moving_to: None,
        shard: placed.stored_name(),
        moving_to_shard: None,
        created_at: now,
        updated_at: now,
    };
    let first_key = NewApiKey {
        name: "Default secret key".to_string(),
        scopes: vec![ADMIN_SCOPE.to_string(), "audit:read".to_string()],
        expires_at: None,
    };
    let tenant = snapshot(row.clone())?;
    // The creating key's account owns the new application: it is the principal.
    let scope = TenantScope::new(tenant.clone(), shard.clone(), actor.clone());
    let mut txn = scope.begin().await?;
    audit::init_chain(&mut txn).await?;
    txn.audit(
        EventType::ApplicationCreated,
        Some(row.id),
        json!({"name": row.name, "environment": row.environment, "region": row.region}),
    )
    .await?;
    let issued = api_keys::insert(&mut txn, new.environment.is_live(), &first_key).await?;
    super::profile_fields::copy_into(&mut txn, &new.profile_fields).await?;
    txn.commit().await?;
    catalog::insert_application(&storage.catalog, row).await?;
    Ok((tenant, issued))
}

/// An application by id (an operator's command: no account to check).
pub async fn find(storage: &Storage, id: Uuid) -> Result<Tenant, ApplicationError> {
    let row = catalog::find_application(&storage.catalog, id).await?.ok_or(ApplicationError::NotFound(id))?;
    snapshot(row)
}

fn snapshot(row: application::Model) -> Result<Tenant, ApplicationError> {
    TenantSnapshot::from_model(row).map(Arc::new).map_err(ApplicationError::CatalogRow)
}

/// The application `copy_from` names (of the caller's account, in a region
/// this node holds) and its profile-field schema.
pub async fn copy_source(
    storage: &Storage,
    caller: &TenantScope,
    source: Uuid,
) -> Result<(Tenant, Vec<entity::profile_field::Model>), ApplicationError> {
    let source = find_in_account(storage, caller.tenant().account_id, source)
        .await
        .map_err(|_| ApplicationError::CopyFromOtherAccount)?;
    let shard = storage.shard(source.shard()).ok_or(ApplicationError::CopyFromRegionNotHeld)?;
    // The caller's account owns the source: the same principal reads it.
    let scope = TenantScope::new(source.clone(), shard.clone(), caller.actor().clone());
    let fields = super::profile_fields::schema(&scope).await?;
    Ok((source, fields))
}

/// An application of the account; another account's is 404.
pub async fn find_in_account(storage: &Storage, account_id: Uuid, id: Uuid) -> Result<Tenant, ApplicationError> {
    let row = catalog::find_application_in_account(&storage.catalog, account_id, id)
        .await?
        .ok_or(ApplicationError::NotFound(id))?;
    snapshot(row)
}

pub async fn list(storage: &Storage, account_id: Uuid, page: Page) -> Result<(Vec<Tenant>, bool), ApplicationError> {
    let (rows, has_more) = catalog::list_applications(&storage.catalog, account_id, page).await?;
    Ok((rows.into_iter().map(snapshot).collect::<Result<_, _>>()?, has_more))
}

/// Applies a settings change. Only the application's tenant actor calls
/// this, so changes of one application never interleave. The settings live
/// in the catalog and the audit chain in the region, so the change and its
/// audit row commit together in the catalog (an outbox row), and the row is
/// then relayed into the regional chain; a crash in between leaves the row
/// pending, and the next start (or any node's relay) appends it.
pub async fn update_settings(turn: &InTurn, patch: SettingsPatch) -> Result<Tenant, ApplicationError> {
    let (storage, id, actor) = (turn.storage(), turn.scope().tenant().id, turn.scope().actor());
    let row = catalog::find_application(&storage.catalog, id).await?.ok_or(ApplicationError::NotFound(id))?;
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
    if let Some(seconds) = patch.refresh_reuse_interval_seconds {
        active.refresh_reuse_interval_seconds = Set(seconds as i32);
        changed.push("refresh_reuse_interval_seconds");
    }
    if let Some(keys) = patch.entitlement_claims {
        active.entitlement_claims = Set(Some(json!(keys)));
        changed.push("entitlement_claims");
    }
    if let Some(actions) = patch.require_aal2_for {
        active.require_aal2_for = Set(Some(json!(actions)));
        changed.push("require_aal2_for");
    }
    if let Some(rp_id) = patch.passkey_rp_id {
        active.passkey_rp_id = Set(rp_id);
        changed.push("passkey_rp_id");
    }
    if let Some(required) = patch.require_verified_email {
        active.require_verified_email = Set(required);
        changed.push("require_verified_email");
    }
    if let Some(framed) = patch.hosted_pages_in_frames {
        active.hosted_pages_in_frames = Set(framed);
        changed.push("hosted_pages_in_frames");
    }
    let now = crate::clock::now();
    active.updated_at = Set(now);
    let audit = pending_audit_event::Model {
        id: Uuid::now_v7(),
        application_id: id,
        event_type: EventType::ApplicationUpdated.as_str().to_string(),
        actor_kind: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        aggregate_id: Some(id),
        data: json!({"changed": changed}),
        created_at: now,
    };
    let pending = audit.clone();
    let updated = catalog::update_application(&storage.catalog, active, audit).await?;
    crate::failpoint::hit("settings_committed_in_catalog");
    let tenant = snapshot(updated)?;
    // The change is committed: a failed relay leaves the row pending for
    // the background relay, and the change is answered (and published).
    if let Err(err) = relay(storage, &tenant, &pending).await {
        tracing::warn!(application_id = %id, error = %crate::error::cause_chain(&err), "audit row left pending for the relay");
    }
    // Before the actor's bus message, so the nodes that drop their copy read this one.
    turn.directory().publish(tenant.clone()).await;
    Ok(tenant)
}

/// Catalog audit rows a crash left behind (all of them at start, else
/// those older than `min_age`, which no request is relaying any more), for
/// every application whose region this node holds.
pub async fn relay_pending_audit(storage: &Storage, min_age: chrono::Duration) -> Result<usize, ApplicationError> {
    let mut relayed = 0;
    let cutoff = crate::clock::now() - min_age;
    for pending in catalog::pending_audit(&storage.catalog).await? {
        if pending.created_at > cutoff {
            continue;
        }
        let Some(row) = catalog::find_application(&storage.catalog, pending.application_id).await? else {
            continue;
        };
        let tenant = snapshot(row)?;
        // A moving application's chain is being copied: its rows wait for the new region.
        if storage.holds(tenant.region) && tenant.moving_to.is_none() {
            relay(storage, &tenant, &pending).await?;
            relayed += 1;
        }
    }
    Ok(relayed)
}

/// Appends one catalog audit row to its application's regional chain, then
/// forgets it. The row keeps its id in the chain, so a relay that crashed
/// after the regional commit (or raced another node's) finds it there and
/// only forgets the pending one.
pub(crate) async fn relay(
    storage: &Storage,
    tenant: &Tenant,
    pending: &pending_audit_event::Model,
) -> Result<(), ApplicationError> {
    let shard = storage.shard(tenant.shard()).ok_or(ApplicationError::RelayRegionNotHeld(tenant.region))?;
    let actor = Actor {
        kind: ActorKind::parse(&pending.actor_kind).unwrap_or(ActorKind::System),
        id: pending.actor_id.clone(),
    };
    let scope = TenantScope::new(tenant.clone(), shard.clone(), actor.clone());
    let mut txn = scope.begin().await?;
    if txn.find_by_id::<audit_event::Entity>(pending.id).one(txn.conn()).await?.is_none() {
        let entry = Entry {
            id: Some(pending.id),
            actor: &actor,
            event_type: &pending.event_type,
            aggregate_id: pending.aggregate_id,
            data: pending.data.clone(),
        };
        txn.audit_many(vec![entry]).await?;
        match txn.commit().await {
            Ok(()) => {}
            // Another node appended it between our check and our insert.
            Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {}
            Err(err) => return Err(err.into()),
        }
    }
    catalog::forget_pending_audit(&storage.catalog, pending.id).await?;
    Ok(())
}

#[cfg(test)]
mod redirect_uri_tests {
    use super::redirect_uri_issue;

    #[test]
    fn a_redirect_uri_must_be_on_an_allowed_origin() {
        let origins = vec!["https://app.example.com".to_string(), "http://127.0.0.1:3000".to_string()];
        assert_eq!(redirect_uri_issue("https://app.example.com/callback?x=1", &origins), None);
        assert_eq!(redirect_uri_issue("http://127.0.0.1:3000/", &origins), None);
        for refused in [
            "https://evil.example.com/callback",
            "https://app.example.com.evil.example/",
            "https://app.example.com:8443/",
            "http://app.example.com/",
            "https://user@app.example.com/",
            "https://app.example.com/#fragment",
            "javascript:alert(1)",
            "//app.example.com/",
            "/callback",
            "",
        ] {
            assert!(redirect_uri_issue(refused, &origins).is_some(), "{refused} was accepted");
        }
    }
}
