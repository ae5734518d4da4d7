//! OAuth clients: the relying parties of the application's OpenID
//! Provider. Each is confidential (it holds a secret, shown once and
//! stored as its SHA-256) or public (a browser or native app, with PKCE
//! instead). Its id is its `client_id`. Read from the database on every
//! authentication, so a deleted client or a rotated secret is refused at
//! once on every node.
pub mod consents;
pub mod http;
pub mod redirect_uris;

use entity::oauth_client;
use sea_orm::{ActiveValue::Set, ColumnTrait, DbErr, IntoActiveModel, QueryOrder};
use serde_json::{json, Value};
use uuid::Uuid;

use super::validate::{Invalid, Issues};
use crate::{
    clock,
    crypto::{constant_time_eq, key_format, sha256},
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{Limit, Page, ReserveError, TenantConn, TenantScope},
};

#[derive(Debug, thiserror::Error)]
pub enum OAuthClientError {
    #[error("OAuth client `{0}` not found")]
    NotFound(Uuid),
    #[error("a public client has no secret to rotate")]
    PublicHasNoSecret,
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Limit(#[from] ReserveError),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<OAuthClientError> for ApiError {
    fn from(err: OAuthClientError) -> Self {
        match err {
            OAuthClientError::NotFound(id) => ApiError::not_found("OAuth client", id),
            OAuthClientError::PublicHasNoSecret => {
                ApiError::new(Code::Conflict, "A public client has no secret to rotate: it proves itself with PKCE.")
            }
            OAuthClientError::Invalid(err) => err.into(),
            OAuthClientError::Limit(err) => err.into(),
            OAuthClientError::Db(err) => err.into(),
        }
    }
}

pub const MAX_NAME: usize = 255;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientType {
    /// A server that keeps a secret.
    Confidential,
    /// A browser or native app: no secret, PKCE only.
    Public,
}

impl ClientType {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientType::Confidential => "confidential",
            ClientType::Public => "public",
        }
    }
}

/// The grants a client may use.
pub const GRANT_TYPES: &[&str] = &["authorization_code", "refresh_token"];
/// The scopes a client may ask for: OpenID Connect's, and `organization`
/// for the user's active organization and role.
pub const SCOPES: &[&str] = &["openid", "profile", "email", "offline_access", "organization"];
/// How ID tokens are signed: EdDSA, as every token of the application, or
/// RS256 (which OpenID Connect requires a provider to offer) with the
/// application's RSA key, in the same JWKS.
pub const ID_TOKEN_ALGS: &[&str] = &["EdDSA", "RS256"];

pub const DEFAULT_GRANT_TYPES: &[&str] = &["authorization_code", "refresh_token"];
pub const DEFAULT_SCOPES: &[&str] = &["openid", "profile", "email", "offline_access"];

/// A client's settings, checked.
pub struct ClientSettings {
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    pub scopes: Vec<String>,
    pub first_party: bool,
    pub id_token_signed_response_alg: String,
}

/// A change; `None` leaves a setting as it is.
#[derive(Default)]
pub struct ClientPatch {
    pub name: Option<String>,
    pub redirect_uris: Option<Vec<String>>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub grant_types: Option<Vec<String>>,
    pub scopes: Option<Vec<String>>,
    pub first_party: Option<bool>,
    pub id_token_signed_response_alg: Option<String>,
}

/// Checks a list of URIs for a client of `public` type; answers it without
/// repeats, in the given order.
pub fn uris(issues: &mut Issues, field: &str, uris: Vec<String>, public: bool) -> Vec<String> {
    if uris.len() > redirect_uris::MAX_URIS {
        issues.add(field, format!("at most {} URIs", redirect_uris::MAX_URIS));
    }
    let mut kept: Vec<String> = Vec::with_capacity(uris.len());
    for (i, uri) in uris.into_iter().enumerate() {
        if let Some(issue) = redirect_uris::issue(&uri, public) {
            issues.add(&format!("{field}[{i}]"), issue);
        } else if !kept.contains(&uri) {
            kept.push(uri);
        }
    }
    kept
}

/// Checks names against the ones allowed; answers them without repeats,
/// in the allowed list's order.
pub fn names(issues: &mut Issues, field: &str, given: Vec<String>, allowed: &[&str]) -> Vec<String> {
    if let Some(bad) = given.iter().find(|g| !allowed.contains(&g.as_str())) {
        issues.add(field, format!("`{}` is not one of {}", bad.escape_debug(), allowed.join(", ")));
    }
    allowed.iter().filter(|a| given.iter().any(|g| g == *a)).map(|a| a.to_string()).collect()
}

/// The rules that hold between settings, checked on a whole client (a
/// change is checked as the client it makes).
pub fn check_together(issues: &mut Issues, settings: &ClientSettings) {
    let has = |grant: &str| settings.grant_types.iter().any(|g| g == grant);
    if settings.grant_types.is_empty() {
        issues.add("grant_types", "must name at least one grant");
    }
    if has("refresh_token") && !has("authorization_code") {
        issues.add("grant_types", "`refresh_token` comes with `authorization_code`");
    }
    if has("authorization_code") && settings.redirect_uris.is_empty() {
        issues.add("redirect_uris", "`authorization_code` needs at least one redirect URI");
    }
    if !settings.scopes.iter().any(|s| s == "openid") {
        issues.add("scopes", "must include `openid`");
    }
    if !ID_TOKEN_ALGS.contains(&settings.id_token_signed_response_alg.as_str()) {
        issues.add("id_token_signed_response_alg", format!("must be one of {}", ID_TOKEN_ALGS.join(", ")));
    }
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// A stored client's settings.
pub fn settings_of(row: &oauth_client::Model) -> ClientSettings {
    ClientSettings {
        name: row.name.clone(),
        redirect_uris: strings(&row.redirect_uris),
        post_logout_redirect_uris: strings(&row.post_logout_redirect_uris),
        grant_types: strings(&row.grant_types),
        scopes: strings(&row.scopes),
        first_party: row.first_party,
        id_token_signed_response_alg: row.id_token_signed_response_alg.clone(),
    }
}

pub fn client_type(row: &oauth_client::Model) -> ClientType {
    if row.client_type == ClientType::Public.as_str() {
        ClientType::Public
    } else {
        ClientType::Confidential
    }
}

fn new_secret(scope: &TenantScope) -> (String, Vec<u8>, String) {
    let secret = key_format::generate(key_format::KeyKind::OAuthClient, scope.tenant().environment.is_live());
    let hash = sha256(&secret).to_vec();
    (key_format::display_prefix(&secret), hash, secret)
}

/// Registers a client; answers it and, for a confidential client, its
/// secret (the one time it is shown).
pub async fn create(
    scope: &TenantScope,
    kind: ClientType,
    settings: ClientSettings,
    limit: u64,
) -> Result<(oauth_client::Model, Option<String>), OAuthClientError> {
    let mut txn = scope.begin().await?;
    txn.reserve::<oauth_client::Entity>(Limit { max: limit, what: "OAuth clients", field: "name" }, |all| all).await?;
    let (prefix, hash, secret) = match kind {
        ClientType::Confidential => {
            let (prefix, hash, secret) = new_secret(scope);
            (Some(prefix), Some(hash), Some(secret))
        }
        ClientType::Public => (None, None, None),
    };
    let now = clock::now();
    let row = oauth_client::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        name: settings.name,
        client_type: kind.as_str().to_string(),
        redirect_uris: json!(settings.redirect_uris),
        post_logout_redirect_uris: json!(settings.post_logout_redirect_uris),
        grant_types: json!(settings.grant_types),
        scopes: json!(settings.scopes),
        first_party: settings.first_party,
        id_token_signed_response_alg: settings.id_token_signed_response_alg,
        secret_hash: hash,
        secret_prefix: prefix,
        created_at: now,
        updated_at: now,
    };
    txn.insert(oauth_client::ActiveModel::from(row.clone())).await?;
    txn.audit(EventType::OAuthClientCreated, Some(row.id), audit_data(&row)).await?;
    txn.commit().await?;
    Ok((row, secret))
}

/// What an audit row says of a client: its settings, never its secret.
fn audit_data(row: &oauth_client::Model) -> Value {
    json!({
        "name": row.name,
        "type": row.client_type,
        "redirect_uris": row.redirect_uris,
        "post_logout_redirect_uris": row.post_logout_redirect_uris,
        "grant_types": row.grant_types,
        "scopes": row.scopes,
        "first_party": row.first_party,
        "id_token_signed_response_alg": row.id_token_signed_response_alg,
    })
}

pub async fn list(db: &impl TenantConn, page: Page) -> Result<(Vec<oauth_client::Model>, bool), DbErr> {
    page.fetch(
        db.find::<oauth_client::Entity>()
            .order_by_desc(oauth_client::Column::CreatedAt)
            .order_by_desc(oauth_client::Column::Id),
        db.conn(),
    )
    .await
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<oauth_client::Model, OAuthClientError> {
    db.find_by_id::<oauth_client::Entity>(id).one(db.conn()).await?.ok_or(OAuthClientError::NotFound(id))
}

/// Changes a client. The change is checked as the whole client it makes
/// (a public client's URIs against the public rules, the grants against
/// the redirect URIs), inside the transaction that writes it.
pub async fn update(
    scope: &TenantScope,
    id: Uuid,
    patch: ClientPatch,
) -> Result<oauth_client::Model, OAuthClientError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    let public = client_type(&row) == ClientType::Public;
    let mut settings = settings_of(&row);
    let mut issues = Issues::default();
    let mut changed = Vec::new();
    if let Some(name) = patch.name {
        settings.name = name;
        changed.push("name");
    }
    if let Some(list) = patch.redirect_uris {
        settings.redirect_uris = uris(&mut issues, "redirect_uris", list, public);
        changed.push("redirect_uris");
    }
    if let Some(list) = patch.post_logout_redirect_uris {
        settings.post_logout_redirect_uris = uris(&mut issues, "post_logout_redirect_uris", list, public);
        changed.push("post_logout_redirect_uris");
    }
    if let Some(grants) = patch.grant_types {
        settings.grant_types = grants;
        changed.push("grant_types");
    }
    if let Some(scopes) = patch.scopes {
        settings.scopes = scopes;
        changed.push("scopes");
    }
    if let Some(first_party) = patch.first_party {
        settings.first_party = first_party;
        changed.push("first_party");
    }
    if let Some(alg) = patch.id_token_signed_response_alg {
        settings.id_token_signed_response_alg = alg;
        changed.push("id_token_signed_response_alg");
    }
    check_together(&mut issues, &settings);
    issues.finish()?;
    let mut active = row.into_active_model();
    active.name = Set(settings.name);
    active.redirect_uris = Set(json!(settings.redirect_uris));
    active.post_logout_redirect_uris = Set(json!(settings.post_logout_redirect_uris));
    active.grant_types = Set(json!(settings.grant_types));
    active.scopes = Set(json!(settings.scopes));
    active.first_party = Set(settings.first_party);
    active.id_token_signed_response_alg = Set(settings.id_token_signed_response_alg);
    active.updated_at = Set(clock::now());
    let updated = txn.update(active).await?;
    let mut data = audit_data(&updated);
    data["changed"] = json!(changed);
    txn.audit(EventType::OAuthClientUpdated, Some(id), data).await?;
    txn.commit().await?;
    Ok(updated)
}

pub async fn delete(scope: &TenantScope, id: Uuid) -> Result<(), OAuthClientError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    consents::forget_client(&mut txn, id).await?;
    txn.delete::<oauth_client::Entity>(oauth_client::Column::Id.eq(id)).await?;
    txn.audit(EventType::OAuthClientDeleted, Some(id), json!({"name": row.name, "type": row.client_type})).await?;
    txn.commit().await?;
    Ok(())
}

/// Replaces a confidential client's secret; the old one stops
/// authenticating at the commit. Answers the client and its new secret.
pub async fn rotate_secret(scope: &TenantScope, id: Uuid) -> Result<(oauth_client::Model, String), OAuthClientError> {
    let mut txn = scope.begin().await?;
    let row = find(&txn, id).await?;
    if client_type(&row) == ClientType::Public {
        return Err(OAuthClientError::PublicHasNoSecret);
    }
    let (prefix, hash, secret) = new_secret(scope);
    let mut active = row.into_active_model();
    active.secret_hash = Set(Some(hash));
    active.secret_prefix = Set(Some(prefix.clone()));
    active.updated_at = Set(clock::now());
    let updated = txn.update(active).await?;
    txn.audit(EventType::OAuthClientSecretRotated, Some(id), json!({"name": updated.name, "secret_prefix": prefix}))
        .await?;
    txn.commit().await?;
    Ok((updated, secret))
}

/// How a client proved itself at an endpoint of the provider.
pub enum Presented<'a> {
    /// `client_secret_basic` or `client_secret_post`.
    Secret { client_id: &'a str, secret: &'a str },
    /// Only the id: a public client (`none`).
    IdOnly { client_id: &'a str },
}

/// The client that `presented` proves, or `None`: an unknown id, a wrong
/// secret, a confidential client without its secret, or a secret for a
/// public client. Every refusal is the same to the caller (RFC 6749
/// section 5.2, `invalid_client`).
pub async fn authenticate(
    db: &impl TenantConn,
    presented: Presented<'_>,
) -> Result<Option<oauth_client::Model>, DbErr> {
    let client_id = match presented {
        Presented::Secret { client_id, .. } | Presented::IdOnly { client_id } => client_id,
    };
    let Ok(id) = Uuid::parse_str(client_id) else { return Ok(None) };
    let Some(client) = db.find_by_id::<oauth_client::Entity>(id).one(db.conn()).await? else {
        return Ok(None);
    };
    let proven = match (&presented, &client.secret_hash) {
        (Presented::Secret { secret, .. }, Some(hash)) => constant_time_eq(&sha256(secret), hash),
        (Presented::IdOnly { .. }, None) => true,
        _ => false,
    };
    Ok(proven.then_some(client))
}
