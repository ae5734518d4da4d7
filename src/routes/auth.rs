//! End users' own routes (contract §5): sign-up, sign-in, refresh,
//! sign-out, the signed-in user, organization activation, and personal API
//! keys (operation 7).
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use chrono::Duration;
use entity::{session, user};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    api_keys::ApiKeyView,
    users::{SessionView, UserView},
};
use crate::{
    audit::{self, Actor},
    auth::end_user::EndUser,
    error::{ApiError, ApiResult, Code},
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
    service::{
        api_keys::NewApiKey,
        hooks, organizations,
        sessions::{self, Opened},
        user_api_keys, users,
        validate::Issues,
    },
    state::AppState,
    storage::Db,
    tenancy::Tenant,
    tokens::{Issued, Signer},
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/sign-up").route(web::post().to(sign_up)))
        .service(web::resource("/auth/sign-in").route(web::post().to(sign_in)))
        .service(web::resource("/auth/token").route(web::post().to(refresh)))
        .service(web::resource("/auth/sign-out").route(web::post().to(sign_out)))
        .service(web::resource("/auth/me").route(web::get().to(me)))
        .service(web::resource("/auth/organizations/{organization_id}/activate").route(web::post().to(activate)))
        .service(
            web::resource("/auth/me/api-keys")
                .route(web::post().to(create_personal_key))
                .route(web::get().to(list_personal_keys)),
        )
        .service(web::resource("/auth/me/api-keys/{key_id}/revoke").route(web::post().to(revoke_personal_key)));
}

/// The application of an unauthenticated end-user request, from
/// `x-application-id`; unknown or missing is 401 like a bad credential.
fn tenant_of(req: &HttpRequest, state: &AppState) -> ApiResult<(Tenant, Db)> {
    let tenant = req.extensions().get::<Tenant>().cloned().ok_or_else(ApiError::unauthenticated)?;
    let shard = state.storage.shard(tenant.region).ok_or_else(ApiError::unauthenticated)?.clone();
    Ok((tenant, shard))
}

/// Takes one attempt from a per-minute bucket (0: no limit).
async fn limit(state: &AppState, req: &HttpRequest, key: String, per_minute: u32) -> ApiResult<()> {
    state.limiter.take_for(req, &key, f64::from(per_minute) / 60.0, f64::from(per_minute)).await
}

fn client_ip(req: &HttpRequest) -> String {
    req.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default()
}

#[derive(Serialize, ToSchema)]
pub struct SignedInView {
    pub user: UserView,
    pub session: SessionView,
    /// EdDSA JWT; verify against the application's JWKS.
    pub access_token: String,
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// Opaque; rotated on every use of `POST /v1/auth/token`.
    pub refresh_token: String,
}

fn signed_in(signer: &Signer, user: &user::Model, opened: Opened) -> SignedInView {
    let access = signer.issue(&opened.session, None);
    SignedInView {
        user: user.into(),
        session: (&opened.session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        refresh_token: opened.refresh_token,
    }
}

fn session_ttl(state: &AppState) -> Duration {
    Duration::seconds(state.settings.tokens.refresh_ttl_seconds as i64)
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignUpRequest {
    pub email: String,
    /// 8 to 256 characters.
    pub password: String,
    /// Values for the application's profile fields.
    #[schema(value_type = Option<Object>)]
    pub profile: Option<serde_json::Value>,
}

/// Sign up: checks the profile against the schema, runs the `pre_sign_up`
/// hooks, creates the user and a session.
#[utoipa::path(post, path = "/v1/auth/sign-up", tag = "auth", request_body = SignUpRequest,
    responses((status = 201, body = SignedInView), (status = 403, description = "sign_up_denied"),
        (status = 409, description = "email in use"), (status = 422), (status = 429), (status = 503, description = "hook_unavailable")))]
pub async fn sign_up(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let (tenant, shard) = tenant_of(&req, &state)?;
    let per_ip = state.settings.rate_limits.sign_up_per_ip_per_minute;
    limit(&state, &req, format!("sign_up:ip:{}:{}", tenant.id, client_ip(&req)), per_ip).await?;
    let request: SignUpRequest = body.json().await?;
    let mut issues = Issues::default();
    let email = users::email(&mut issues, &request.email);
    users::password(&mut issues, &request.password);
    let profile = users::profile(&shard.conn, tenant.id, &mut issues, request.profile).await?;
    issues.finish()?;
    let caller = hooks::Caller { shard: &shard, master_key: &state.master_key, clients: &state.webhooks };
    hooks::pre_sign_up(&caller, &tenant, &email, &serde_json::Value::Object(profile.clone())).await?;
    let password_hash = state.passwords.hash(request.password).await?;
    let signer = state.tokens.signer(&shard, tenant.id).await?;
    let txn = shard.begin_write().await?;
    let user = users::insert(&*txn, tenant.id, email, Some(password_hash), profile, &Actor::public()).await?;
    let opened = sessions::open(&*txn, tenant.id, user.id, session_ttl(&state), &Actor::public()).await?;
    txn.commit().await?;
    Ok(envelope::created(signed_in(&signer, &user, opened)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInRequest {
    pub email: String,
    pub password: String,
}

/// Sign in with email and password. A wrong password and an unknown email
/// get the same 401 `invalid_credentials`, after the same work.
#[utoipa::path(post, path = "/v1/auth/sign-in", tag = "auth", request_body = SignInRequest,
    responses((status = 200, body = SignedInView), (status = 401, description = "invalid_credentials"), (status = 429)))]
pub async fn sign_in(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let (tenant, shard) = tenant_of(&req, &state)?;
    let limits = &state.settings.rate_limits;
    limit(&state, &req, format!("sign_in:ip:{}:{}", tenant.id, client_ip(&req)), limits.sign_in_per_ip_per_minute)
        .await?;
    let request: SignInRequest = body.json().await?;
    let email = users::normalize_email(&request.email);
    if email.is_empty() || email.chars().count() > 254 || request.password.len() > 4 * users::MAX_PASSWORD {
        let shown: String = email.chars().take(254).collect();
        return failed_sign_in(&shard, tenant.id, &shown, None, "malformed").await;
    }
    limit(&state, &req, format!("sign_in:email:{}:{email}", tenant.id), limits.sign_in_per_email_per_minute).await?;
    // A place in the hashing queue first: past its bound the answer is an
    // immediate 503 that has touched nothing.
    let admission = state.passwords.admit()?;
    let signer = state.tokens.signer(&shard, tenant.id).await?;
    let found = users::find_by_email(&shard.conn, tenant.id, &email).await?;
    let stored = found.as_ref().and_then(|u| u.password_hash.clone());
    let matches = admission.verify(request.password, stored).await?;
    let user = match found {
        Some(user) if matches => user,
        Some(user) => return failed_sign_in(&shard, tenant.id, &email, Some(user.id), "wrong_password").await,
        None => return failed_sign_in(&shard, tenant.id, &email, None, "unknown_email").await,
    };
    let txn = shard.begin_write().await?;
    let now = crate::clock::now();
    // Deleted while its password was being checked: no session for it.
    if !users::touch_sign_in(&*txn, tenant.id, user.id, now).await? {
        drop(txn);
        return failed_sign_in(&shard, tenant.id, &email, None, "unknown_email").await;
    }
    let actor = Actor::user(user.id);
    let opened = sessions::open(&*txn, tenant.id, user.id, session_ttl(&state), &actor).await?;
    audit::record(
        &*txn,
        tenant.id,
        &actor,
        "sign_in.succeeded",
        Some(user.id),
        json!({"session_id": opened.session.id}),
    )
    .await?;
    txn.commit().await?;
    let user = user::Model { last_sign_in_at: Some(now), ..user };
    Ok(envelope::ok(signed_in(&signer, &user, opened)))
}

/// Records a failed sign-in (the reason is for the operator) and answers
/// the one 401 every failure gets.
async fn failed_sign_in(
    shard: &Db,
    application_id: Uuid,
    email: &str,
    user_id: Option<Uuid>,
    reason: &str,
) -> ApiResult<HttpResponse> {
    let txn = shard.begin_write().await?;
    let data = json!({"email": email, "reason": reason});
    audit::record(&*txn, application_id, &Actor::public(), "sign_in.failed", user_id, data).await?;
    txn.commit().await?;
    Err(ApiError::new(Code::InvalidCredentials, "The email or password is wrong."))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRequest {
    pub refresh_token: String,
}

#[derive(Serialize, ToSchema)]
pub struct RefreshedView {
    pub session: SessionView,
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
}

/// The token of a session: its active organization's id and the user's
/// role there, when the user is still a member.
async fn access_token(signer: &Signer, shard: &Db, session: &session::Model) -> ApiResult<Issued> {
    let organization = sessions::active_membership(&shard.conn, session).await?.map(|m| (m.organization_id, m.role));
    Ok(signer.issue(session, organization))
}

/// Exchange a refresh token for a new access token and a new refresh token.
/// A refresh token already exchanged once revokes its whole session.
#[utoipa::path(post, path = "/v1/auth/token", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, body = RefreshedView), (status = 401)))]
pub async fn refresh(state: web::Data<AppState>, req: HttpRequest, body: Body) -> ApiResult<HttpResponse> {
    let (tenant, shard) = tenant_of(&req, &state)?;
    let request: RefreshRequest = body.json().await?;
    let signer = state.tokens.signer(&shard, tenant.id).await?;
    let opened = match state.rotations.rotate(&shard, tenant.region, tenant.id, &request.refresh_token).await? {
        Ok(opened) => opened,
        Err(refused) => {
            metrics::counter!("refresh_refused_total", "reason" => format!("{refused:?}")).increment(1);
            return Err(ApiError::unauthenticated());
        }
    };
    let access = access_token(&signer, &shard, &opened.session).await?;
    Ok(envelope::ok(RefreshedView {
        session: (&opened.session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        refresh_token: opened.refresh_token,
    }))
}

/// Sign out: ends the session of the access token.
#[utoipa::path(post, path = "/v1/auth/sign-out", tag = "auth",
    responses((status = 200, body = SessionView), (status = 401)), security(("access_token" = [])))]
pub async fn sign_out(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    body.no_fields().await?;
    let session = sessions::revoke(&user.shard, user.tenant.id, user.session.id, "sign_out", &user.actor()).await?;
    Ok(envelope::ok(SessionView::from(&session)))
}

#[derive(Serialize, ToSchema)]
pub struct MeView {
    pub user: UserView,
    pub session: SessionView,
    pub organizations: Vec<MembershipOfUserView>,
}

#[derive(Serialize, ToSchema)]
pub struct MembershipOfUserView {
    pub organization_id: Uuid,
    pub name: String,
    pub slug: String,
    pub role: String,
}

/// The signed-in user, their session and their organizations.
#[utoipa::path(get, path = "/v1/auth/me", tag = "auth",
    responses((status = 200, body = MeView), (status = 401)), security(("access_token" = [])))]
pub async fn me(user: EndUser) -> ApiResult<HttpResponse> {
    let found = users::find(&user.shard.conn, user.tenant.id, user.claims.sub).await?;
    let organizations = organizations::of_user(&user.shard.conn, user.tenant.id, user.claims.sub)
        .await?
        .into_iter()
        .map(|(m, o)| MembershipOfUserView { organization_id: o.id, name: o.name, slug: o.slug, role: m.role })
        .collect();
    Ok(envelope::ok(MeView { user: (&found).into(), session: (&user.session).into(), organizations }))
}

#[derive(Serialize, ToSchema)]
pub struct ActivatedView {
    pub session: SessionView,
    /// A new access token carrying `org` and `org_role`.
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
}

/// Make one of the user's organizations the session's active one.
#[utoipa::path(post, path = "/v1/auth/organizations/{organization_id}/activate", tag = "auth",
    responses((status = 200, body = ActivatedView), (status = 401), (status = 404)), security(("access_token" = [])))]
pub async fn activate(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    body.no_fields().await?;
    // Not a member looks like no such organization.
    let membership = organizations::find_membership(&user.shard.conn, user.tenant.id, organization_id, user.claims.sub)
        .await?
        .ok_or_else(|| ApiError::not_found("Organization", organization_id))?;
    let signer = state.tokens.signer(&user.shard, user.tenant.id).await?;
    sessions::activate_organization(&user.shard, user.tenant.id, user.session.id, organization_id, &user.actor())
        .await?;
    let session = session::Model { active_organization_id: Some(organization_id), ..user.session };
    let access = signer.issue(&session, Some((organization_id, membership.role)));
    Ok(envelope::ok(ActivatedView {
        session: (&session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePersonalKeyRequest {
    pub name: String,
    pub scopes: Option<Vec<String>>,
    /// 1 to 3650; omitted or null: never expires.
    pub expires_in_days: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct IssuedPersonalKeyView {
    #[serde(flatten)]
    pub key: ApiKeyView,
    /// `uk_…`, shown this once.
    pub secret: String,
}

/// Create a personal API key for the signed-in user (operation 7).
#[utoipa::path(post, path = "/v1/auth/me/api-keys", tag = "auth", request_body = CreatePersonalKeyRequest,
    responses((status = 201, body = IssuedPersonalKeyView), (status = 401), (status = 422)), security(("access_token" = [])))]
pub async fn create_personal_key(user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    let request: CreatePersonalKeyRequest = body.json().await?;
    let new = NewApiKey::parse(&request.name, request.scopes, request.expires_in_days)?;
    let live = user.tenant.environment.is_live();
    let (key, secret) = user_api_keys::create(&user.shard, user.tenant.id, user.claims.sub, live, &new).await?;
    Ok(envelope::created(IssuedPersonalKeyView { key: (&key).into(), secret }))
}

/// The signed-in user's personal keys, newest first.
#[utoipa::path(get, path = "/v1/auth/me/api-keys", tag = "auth", params(ListQuery),
    responses((status = 200, body = [ApiKeyView]), (status = 401)), security(("access_token" = [])))]
pub async fn list_personal_keys(user: EndUser, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.0.page()?;
    let (keys, has_more) = user_api_keys::list(&user.shard.conn, user.tenant.id, user.claims.sub, page).await?;
    Ok(envelope::page(keys.iter().map(ApiKeyView::from).collect(), has_more))
}

/// Revoke one of the signed-in user's personal keys.
#[utoipa::path(post, path = "/v1/auth/me/api-keys/{key_id}/revoke", tag = "auth",
    responses((status = 200, body = ApiKeyView), (status = 401), (status = 404)), security(("access_token" = [])))]
pub async fn revoke_personal_key(user: EndUser, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("API key", &path)?;
    body.no_fields().await?;
    let key = user_api_keys::revoke(&user.shard, user.tenant.id, user.claims.sub, id).await?;
    Ok(envelope::ok(ApiKeyView::from(&key)))
}
