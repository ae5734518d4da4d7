//! Creating an account with a first application and admin key: the
//! `bootstrap` command, and the first start of `serve` on an empty catalog.
use serde::Serialize;
use uuid::Uuid;

use crate::{
    audit::Actor,
    error::ApiResult,
    region::Region,
    service::{
        applications::{self, NewApplication},
        validate::Issues,
    },
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
        require_aal2_for: Vec::new(),
        passkey_rp_id: None,
        profile_fields: Vec::new(),
    };
    let (app, key) = applications::create(storage, new, &Actor::system()).await?;
    Ok(Bootstrapped { account_id, application_id: app.id, secret_key: key.secret })
}

/// On first start: a development application, when the catalog has none,
/// in the first region this node holds (`us` unless the node holds only
/// others). Nodes starting together take turns on the catalog, so one of
/// them makes it.
pub async fn first_start(storage: &Storage) -> ApiResult<Option<Bootstrapped>> {
    let Some(region) = Region::ALL.into_iter().find(|r| storage.holds(*r)) else { return Ok(None) };
    storage
        .catalog
        .exclusively(async {
            if catalog::count_applications(&storage.catalog).await? > 0 {
                return Ok(None);
            }
            let request = BootstrapRequest {
                name: "Development".to_string(),
                environment: Environment::Development,
                region,
                allowed_origins: Vec::new(),
            };
            bootstrap(storage, request).await.map(Some)
        })
        .await
}
