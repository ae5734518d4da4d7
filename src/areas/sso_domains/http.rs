//! SSO domains (operation 20, with claim, list and verify), managed by an
//! organization's owners and admins from a customer's dashboard with their
//! access token.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::sso_domain;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{memberships, sso_domains},
    auth::end_user::EndUser,
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["dashboard"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(claim_domain, list_domains, verify_domain, delete_domain))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/dashboard/sso/domains").route(web::post().to(claim_domain)).route(web::get().to(list_domains)),
    )
    .service(web::resource("/dashboard/sso/domains/{domain_id}").route(web::delete().to(delete_domain)))
    .service(web::resource("/dashboard/sso/domains/{domain_id}/verify").route(web::post().to(verify_domain)));
}

/// The DNS record that proves the domain.
#[derive(Serialize, ToSchema)]
pub struct VerificationRecord {
    /// `TXT`.
    #[serde(rename = "type")]
    pub record_type: &'static str,
    /// `_gatehouse-challenge.<domain>`.
    pub name: String,
    /// `gatehouse-domain-verification=<token>`.
    pub value: String,
}

#[derive(Serialize, ToSchema)]
pub struct SsoDomainView {
    pub id: Uuid,
    pub organization_id: Uuid,
    /// Lower-case ASCII (IDNA).
    pub domain: String,
    /// `pending` or `verified`.
    pub status: String,
    /// Users who sign up at the verified domain join with this role; null: they do not.
    pub auto_join_role: Option<String>,
    pub verification: VerificationRecord,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub verified_at: Option<DateTime<Utc>>,
}

impl From<&sso_domain::Model> for SsoDomainView {
    fn from(d: &sso_domain::Model) -> Self {
        let (name, value) = sso_domains::challenge(d);
        SsoDomainView {
            id: d.id,
            organization_id: d.organization_id,
            domain: d.domain.clone(),
            status: d.status.clone(),
            auto_join_role: d.auto_join_role.clone(),
            verification: VerificationRecord { record_type: "TXT", name, value },
            created_at: d.created_at,
            verified_at: d.verified_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimDomainRequest {
    /// A domain such as `example.com` (Unicode names are stored as IDNA); not a consumer mail domain.
    #[schema(schema_with = crate::openapi::fields::sso_domain)]
    pub domain: String,
    /// Users who sign up with an email at the domain, once verified, join with this role:
    /// one the caller may grant (an owner any role, an admin only `member`), as for an invitation.
    #[schema(schema_with = crate::openapi::fields::optional_text::<64>)]
    pub auto_join_role: Option<String>,
}

/// Claim a domain for the caller's active organization (owners and admins);
/// the answer names the TXT record to publish. The auto-join role is one
/// the caller may grant, as in an invitation: an admin may name only `member`.
#[utoipa::path(post, path = "/v1/dashboard/sso/domains", tag = "sso", request_body = ClaimDomainRequest,
    responses((status = 201, body = SsoDomainView), (status = 403, description = "no_active_organization; or insufficient_role: not an owner or admin, or an auto_join_role the caller may not grant (an admin may grant only member)"),
        (status = 409, description = "domain_taken: claimed by this organization, or verified by another"), (status = 422)),
    security(("access_token" = [])))]
pub async fn claim_domain(state: web::Data<AppState>, user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    let request: ClaimDomainRequest = body.json().await?;
    let manager = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let ClaimDomainRequest { domain, auto_join_role } = request;
    let claimed = state
        .tenants
        .change(
            &user.scope,
            move |turn| async move { sso_domains::claim(&turn, &manager, &domain, auto_join_role).await },
        )
        .await?;
    Ok(envelope::created(SsoDomainView::from(&claimed)))
}

/// List the active organization's SSO domains.
#[utoipa::path(get, path = "/v1/dashboard/sso/domains", tag = "sso",
    responses((status = 200, body = [SsoDomainView]), (status = 403)), security(("access_token" = [])))]
pub async fn list_domains(user: EndUser) -> ApiResult<HttpResponse> {
    let manager = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let domains = sso_domains::list(&user.scope, &manager).await?;
    Ok(envelope::ok(domains.iter().map(SsoDomainView::from).collect::<Vec<_>>()))
}

/// Look the TXT record up; verified when it carries the domain's value.
#[utoipa::path(post, path = "/v1/dashboard/sso/domains/{domain_id}/verify", tag = "sso",
    params(("domain_id" = Uuid, Path, description = "The domain's id.")),
    responses((status = 200, body = SsoDomainView), (status = 403), (status = 404),
        (status = 409, description = "domain_taken: another organization verified it first"),
        (status = 422, description = "domain_verification_failed: no TXT record with the value")),
    security(("access_token" = [])))]
pub async fn verify_domain(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let id = path_id("SSO domain", &path)?;
    body.no_fields().await?;
    let manager = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let resolver = state.domains.clone();
    let verified = state
        .tenants
        .change(&user.scope, move |turn| async move { sso_domains::verify(&turn, &resolver, &manager, id).await })
        .await?;
    Ok(envelope::ok(SsoDomainView::from(&verified)))
}

/// Remove a claimed domain; another organization's is 404.
#[utoipa::path(delete, path = "/v1/dashboard/sso/domains/{domain_id}", tag = "sso",
    params(("domain_id" = Uuid, Path, description = "The domain's id.")),
    responses((status = 200), (status = 403), (status = 404)), security(("access_token" = [])))]
pub async fn delete_domain(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id = path_id("SSO domain", &path)?;
    let manager = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    state
        .tenants
        .change(&user.scope, move |turn| async move { sso_domains::delete(&turn, &manager, id).await })
        .await?;
    Ok(envelope::ok(serde_json::json!({})))
}
