//! Team invitations (operation 13, with list, revoke and accept), called
//! by end users from a customer's dashboard with their access token.
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::invitation;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::{
        invitations::{self, NewInvitation},
        memberships::{self, view::MembershipView},
        users,
    },
    auth::end_user::EndUser,
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

pub const AREA: Area = Area {
    segments: &["auth", "dashboard"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(invite_member, list_invitations, revoke_invitation, accept_invitation))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/dashboard/team").route(web::post().to(invite_member)))
        .service(web::resource("/dashboard/team/invitations").route(web::get().to(list_invitations)))
        .service(
            web::resource("/dashboard/team/invitations/{invitation_id}/revoke")
                .route(web::post().to(revoke_invitation)),
        )
        .service(web::resource("/auth/invitations/accept").route(web::post().to(accept_invitation)));
}

/// An invited member, as the invitation routes answer it.
#[derive(Serialize, ToSchema)]
pub struct InvitationView {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub email: String,
    pub name: Option<String>,
    pub role: String,
    /// `pending`, `accepted`, `revoked` or `expired`.
    pub status: String,
    /// The inviting user's id.
    pub invited_by: Uuid,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub expires_at: DateTime<Utc>,
}

impl From<&invitation::Model> for InvitationView {
    fn from(i: &invitation::Model) -> Self {
        InvitationView {
            id: i.id,
            organization_id: i.organization_id,
            email: i.email.clone(),
            name: i.name.clone(),
            role: i.role.clone(),
            status: invitations::status_now(i).to_string(),
            invited_by: i.invited_by,
            created_at: i.created_at,
            expires_at: i.expires_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    #[schema(schema_with = crate::openapi::fields::email)]
    pub email: String,
    /// `owner`, `admin`, `member` or a custom role; an admin may invite only `member`.
    #[schema(schema_with = crate::openapi::fields::text::<64>)]
    pub role: String,
    #[schema(schema_with = crate::openapi::fields::optional_text::<255>)]
    pub name: Option<String>,
}

/// Invite a member into the caller's active organization.
/// The invitation email goes out through the application's email provider.
#[utoipa::path(post, path = "/v1/dashboard/team", tag = "team", request_body = InviteRequest,
    responses((status = 201, body = InvitationView),
        (status = 403, description = "no_active_organization; or insufficient_role: an owner may invite any role, an admin only members"),
        (status = 409, description = "already_member, or already_invited"), (status = 422)),
    security(("access_token" = [])))]
pub async fn invite_member(state: web::Data<AppState>, user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    let request: InviteRequest = body.json().await?;
    let inviter = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let new = NewInvitation { email: request.email, role: request.role, name: request.name };
    let invited = invitations::invite(&user.scope, &state.master_key, &inviter, new).await?;
    Ok(envelope::created(InvitationView::from(&invited)))
}

/// The active organization's pending invitations, newest first (owners and admins).
#[utoipa::path(get, path = "/v1/dashboard/team/invitations", tag = "team",
    responses((status = 200, body = [InvitationView]), (status = 403)), security(("access_token" = [])))]
pub async fn list_invitations(user: EndUser) -> ApiResult<HttpResponse> {
    let inviter = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let pending = invitations::pending(&user.scope, &inviter).await?;
    Ok(envelope::ok(pending.iter().map(InvitationView::from).collect::<Vec<_>>()))
}

/// Revoke a pending invitation of the active organization (owners and admins).
#[utoipa::path(post, path = "/v1/dashboard/team/invitations/{invitation_id}/revoke", tag = "team",
    params(("invitation_id" = Uuid, Path, description = "The invitation's id.")),
    responses((status = 200, body = InvitationView), (status = 403), (status = 404), (status = 409, description = "accepted or revoked already")),
    security(("access_token" = [])))]
pub async fn revoke_invitation(user: EndUser, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Invitation", &path)?;
    body.no_fields().await?;
    let inviter = memberships::manager(&user.scope, user.claims.sub, user.claims.org).await?;
    let revoked = invitations::revoke(&user.scope, &inviter, id).await?;
    Ok(envelope::ok(InvitationView::from(&revoked)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptRequest {
    /// The code the invitation email carries.
    #[schema(min_length = 1, max_length = 256)]
    pub token: String,
}

/// Accept an invitation as the signed-in user, whose email must be the
/// invited one: the membership is created (separation of duties applies).
#[utoipa::path(post, path = "/v1/auth/invitations/accept", tag = "team", request_body = AcceptRequest,
    responses((status = 200, body = MembershipView),
        (status = 400, description = "invalid_grant: unknown, expired, revoked or used"),
        (status = 403, description = "invitation_email_mismatch; or insufficient_role: the inviter may no longer grant the role (an owner since demoted)"),
        (status = 409, description = "already_member, or sod_violation")),
    security(("access_token" = [])))]
pub async fn accept_invitation(state: web::Data<AppState>, user: EndUser, body: Body) -> ApiResult<HttpResponse> {
    let request: AcceptRequest = body.json().await?;
    let account = users::find(&user.scope, user.claims.sub).await?;
    let policies = state.tenants.state(&user.scope).await?.part::<crate::areas::sod::Policies>();
    let (_, membership) = invitations::accept(&user.scope, &policies, &account, &request.token).await?;
    Ok(envelope::ok(MembershipView::from(&membership)))
}
