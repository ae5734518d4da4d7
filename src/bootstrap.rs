//! Creating an account with a first application and admin key: the
//! `bootstrap` command, and the first start of `serve` on an empty catalog.
use serde::Serialize;
use uuid::Uuid;

use crate::{
    areas::{
        applications::{self, NewApplication},
        validate::Issues,
    },
    audit::Actor,
    config::Settings,
    error::ApiResult,
    region::{Region, Shard},
    storage::{catalog, Storage},
    tenancy::Environment,
};

pub struct BootstrapRequest {
    pub name: String,
    pub environment: Environment,
    pub region: Region,
    pub allowed_origins: Vec<String>,
}

/// Printed once as JSON by `bootstrap`; no `Debug`, which could log the key.
#[derive(Serialize)]
pub struct Bootstrapped {
    pub account_id: Uuid,
    pub application_id: Uuid,
    pub secret_key: String,
}

pub async fn bootstrap(storage: &Storage, request: BootstrapRequest) -> ApiResult<Bootstrapped> {
    let mut issues = Issues::default();
    let name = issues.text("name", &request.name, 255);
    let allowed_origins = applications::origins(&mut issues, request.allowed_origins);
    issues.finish()?;
    let account_id = Uuid::now_v7();
    catalog::insert_account(&storage.catalog, account_id, name.clone()).await?;
    let new = NewApplication {
        account_id,
        name,
        environment: request.environment,
        region: request.region,
        allowed_origins,
        branding: serde_json::json!({}),
        refresh_reuse_interval_seconds: 0,
        entitlement_claims: Vec::new(),
        require_verified_email: false,
        hosted_pages_in_frames: false,
        require_aal2_for: Vec::new(),
        passkey_rp_id: None,
        profile_fields: Vec::new(),
    };
    let (app, key) = applications::create(storage, new, &Actor::system()).await?;
    Ok(Bootstrapped { account_id, application_id: app.id, secret_key: key.secret })
}

/// What the first start found and did.
pub enum FirstStart {
    /// The catalog has an application: nothing to do.
    NotEmpty,
    /// The catalog is empty and the settings create nothing
    /// (`bootstrap.first_start_application`): `gatehouse bootstrap` is the way.
    LeftEmpty,
    /// A development application, whose secret key `serve` prints once.
    Created(Bootstrapped),
}

/// On first start, when the catalog has no application: a development
/// application, in the first region this node holds (`us` unless the node
/// holds only others), if the settings ask for one
/// ([`Settings::creates_first_start_application`]: by default only on the
/// embedded SQLite default, never on PostgreSQL, where a printed admin key
/// would land in a container's logs). Nodes starting together take turns
/// on the catalog, so one of them makes it.
pub async fn first_start(storage: &Storage, settings: &Settings) -> ApiResult<FirstStart> {
    if !settings.creates_first_start_application() {
        let empty = catalog::count_applications(&storage.catalog).await? == 0;
        return Ok(if empty { FirstStart::LeftEmpty } else { FirstStart::NotEmpty });
    }
    let Some((Shard { region, .. }, _)) = storage.held().into_iter().next() else { return Ok(FirstStart::NotEmpty) };
    storage
        .catalog
        .exclusively(async {
            if catalog::count_applications(&storage.catalog).await? > 0 {
                return Ok(FirstStart::NotEmpty);
            }
            let request = BootstrapRequest {
                name: "Development".to_string(),
                environment: Environment::Development,
                region,
                allowed_origins: Vec::new(),
            };
            bootstrap(storage, request).await.map(FirstStart::Created)
        })
        .await
}
