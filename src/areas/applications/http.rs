//! Applications of the caller's account (operations 9 and 16, with list and
//! settings changes).
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        applications::{self, NewApplication, SettingsPatch},
        validate::Issues,
    },
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    region::Region,
    state::AppState,
    tenancy::{Environment, Tenant},
};

pub const AREA: Area = Area {
    segments: &["applications"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(create_application, list_applications, get_application, update_application))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/applications")
            .route(web::post().to(create_application))
            .route(web::get().to(list_applications)),
    )
    .service(
        web::resource("/applications/{application_id}")
            .route(web::get().to(get_application))
            .route(web::patch().to(update_application)),
    );
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApplicationRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// Default `development`.
    #[schema(value_type = Option<Environment>)]
    pub environment: Option<String>,
    /// Copy settings (allowed origins, branding) from this application of the same account.
    pub copy_from: Option<Uuid>,
    /// Defaults to the caller's application's region.
    #[schema(value_type = Option<Region>)]
    pub region: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateApplicationRequest {
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
    /// Origins (`scheme://host[:port]`) allowed to call end-user routes from a browser.
    #[schema(schema_with = crate::openapi::fields::origins)]
    pub allowed_origins: Option<Vec<String>>,
    /// A JSON object of at most 16 KiB.
    #[schema(value_type = Option<Object>)]
    pub branding: Option<Value>,
    /// Default 0: seconds in which a just-rotated refresh token may
    /// be presented again (two tabs refreshing at once) for a new pair of the
    /// same session instead of revoking it as reuse.
    #[schema(minimum = 0, maximum = 60)]
    pub refresh_reuse_interval_seconds: Option<i64>,
    /// Feature keys whose resolved values an access token with an active
    /// organization carries as its `ent` claim (`{feature_key: value}`), so
    /// a UI can gate features with no call. At most 20, distinct.
    #[schema(schema_with = crate::openapi::fields::entitlement_claims)]
    pub entitlement_claims: Option<Vec<String>>,
    /// Sign-in refuses a user whose email is not verified (403
    /// `email_not_verified`, and a fresh code is sent). Default false.
    pub require_verified_email: Option<bool>,
    /// The allowed origins may show the hosted sign-in pages
    /// (`/v1/applications/{id}/oauth/…`) in a frame: their
    /// `frame-ancestors` lists them. Default false: no page may. A frame's
    /// cookies reach the pages only when the frame's page and this service
    /// are one site (a custom domain such as `auth.example.com` framed by
    /// `app.example.com`).
    pub hosted_pages_in_frames: Option<bool>,
    /// End-user actions that need a session at `aal2` (a sign-in or a
    /// step-up that proved a second factor), else 403 `aal2_required`:
    /// `create_personal_key`, `revoke_personal_key`. Default none.
    #[schema(schema_with = crate::openapi::fields::aal2_actions)]
    pub require_aal2_for: Option<Vec<String>>,
    /// The WebAuthn relying-party id of the application's passkeys: a
    /// domain (`example.com`) that the allowed origins the passkey pages are
    /// served on are on (`https://app.example.com`). Null turns passkeys off
    /// (default); registered passkeys only work under the id they were made for.
    #[serde(default, deserialize_with = "crate::http::body::present")]
    #[schema(schema_with = crate::openapi::fields::optional_text::<253>)]
    pub passkey_rp_id: Option<Option<String>>,
}

#[derive(Serialize, ToSchema)]
pub struct ApplicationView {
    pub id: Uuid,
    pub name: String,
    pub environment: Environment,
    pub is_live: bool,
    pub sandbox: bool,
    pub region: Region,
    pub allowed_origins: Vec<String>,
    #[schema(value_type = Object)]
    pub branding: Value,
    pub refresh_reuse_interval_seconds: u32,
    pub entitlement_claims: Vec<String>,
    pub require_verified_email: bool,
    pub hosted_pages_in_frames: bool,
    pub require_aal2_for: Vec<String>,
    pub passkey_rp_id: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&Tenant> for ApplicationView {
    fn from(app: &Tenant) -> Self {
        ApplicationView {
            id: app.id,
            name: app.name.clone(),
            environment: app.environment,
            is_live: app.environment.is_live(),
            sandbox: app.environment == Environment::Development,
            region: app.region,
            allowed_origins: app.allowed_origins.clone(),
            branding: app.branding.clone(),
            refresh_reuse_interval_seconds: app.refresh_reuse_interval_seconds,
            entitlement_claims: app.entitlement_claims.clone(),
            require_verified_email: app.require_verified_email,
            hosted_pages_in_frames: app.hosted_pages_in_frames,
            require_aal2_for: app.require_aal2_for.clone(),
            passkey_rp_id: app.passkey_rp_id.clone(),
            created_at: app.created_at,
            updated_at: app.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CreatedApplicationView {
    #[serde(flatten)]
    pub application: ApplicationView,
    /// The new application's first admin key, shown this once.
    pub secret_key: String,
}

/// Create an application in the caller's account, with a first admin key.
#[utoipa::path(post, path = "/v1/applications", tag = "applications", request_body = CreateApplicationRequest,
    responses((status = 201, body = CreatedApplicationView), (status = 422)), security(("secret_key" = ["admin"])))]
pub async fn create_application(state: web::Data<AppState>, key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateApplicationRequest = body.json().await?;
    let mut issues = Issues::default();
    let name = issues.text("name", &request.name, 255);
    let environment = match request.environment.as_deref() {
        None => Environment::Development,
        Some(value) => Environment::parse(value).unwrap_or_else(|| {
            issues.add("environment", "must be development, staging or production");
            Environment::Development
        }),
    };
    issues.finish()?;
    let region = match request.region.as_deref() {
        None => key.tenant().region,
        Some(value) => state.settings.requested_region(value)?,
    };
    let mut new = NewApplication {
        account_id: key.tenant().account_id,
        name,
        environment,
        region,
        allowed_origins: Vec::new(),
        branding: Value::Object(Default::default()),
        refresh_reuse_interval_seconds: 0,
        entitlement_claims: Vec::new(),
        require_verified_email: false,
        hosted_pages_in_frames: false,
        require_aal2_for: Vec::new(),
        passkey_rp_id: None,
        profile_fields: Vec::new(),
    };
    if let Some(source) = request.copy_from {
        let (source, fields) = applications::copy_source(&state.storage, &key.scope, source).await?;
        new.allowed_origins = source.allowed_origins.clone();
        new.branding = source.branding.clone();
        new.refresh_reuse_interval_seconds = source.refresh_reuse_interval_seconds;
        new.entitlement_claims = source.entitlement_claims.clone();
        new.require_verified_email = source.require_verified_email;
        new.hosted_pages_in_frames = source.hosted_pages_in_frames;
        new.require_aal2_for = source.require_aal2_for.clone();
        new.passkey_rp_id = source.passkey_rp_id.clone();
        new.profile_fields = fields;
    }
    let (app, first_key) = applications::create(&state.storage, new, key.scope.actor()).await?;
    Ok(envelope::created(CreatedApplicationView { application: (&app).into(), secret_key: first_key.secret }))
}

/// List the account's applications, oldest first.
#[utoipa::path(get, path = "/v1/applications", tag = "applications", params(ListQuery),
    responses((status = 200, body = [ApplicationView])), security(("secret_key" = ["applications:read"])))]
pub async fn list_applications(
    state: web::Data<AppState>,
    key: SecretKey,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (apps, has_more) = applications::list(&state.storage, key.tenant().account_id, page).await?;
    Ok(envelope::page(apps.iter().map(ApplicationView::from).collect(), has_more))
}

/// Get an application of the caller's account.
#[utoipa::path(get, path = "/v1/applications/{application_id}", tag = "applications",
    params(("application_id" = Uuid, Path, description = "The application's id.")),
    responses((status = 200, body = ApplicationView), (status = 404)), security(("secret_key" = ["applications:read"])))]
pub async fn get_application(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Application", &path)?;
    let app = if id == key.tenant().id {
        key.tenant().clone()
    } else {
        applications::find_in_account(&state.storage, key.tenant().account_id, id).await?
    };
    Ok(envelope::ok(ApplicationView::from(&app)))
}

/// Change the caller's application's name, allowed origins, branding or
/// refresh-token reuse interval.
#[utoipa::path(patch, path = "/v1/applications/{application_id}", tag = "applications",
    params(("application_id" = Uuid, Path, description = "The application's id.")), request_body = UpdateApplicationRequest,
    responses((status = 200, body = ApplicationView), (status = 404), (status = 422)), security(("secret_key" = ["admin"])))]
pub async fn update_application(
    state: web::Data<AppState>,
    key: SecretKey,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    key.own_application(&path)?;
    let request: UpdateApplicationRequest = body.json().await?;
    let patch = SettingsPatch::parse(
        request.name,
        request.allowed_origins,
        request.branding,
        request.refresh_reuse_interval_seconds,
        request.entitlement_claims,
        request.require_verified_email,
        request.hosted_pages_in_frames,
        request.require_aal2_for,
        request.passkey_rp_id,
    )?;
    let app = state
        .tenants
        .change(&key.scope, move |turn| async move { applications::update_settings(&turn, patch).await })
        .await?;
    Ok(envelope::ok(ApplicationView::from(&app)))
}
