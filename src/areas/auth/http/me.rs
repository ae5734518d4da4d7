//! The signed-in user and organization activation.
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    areas::{
        auth, memberships,
        users::{
            self,
            view::{SessionView, UserView},
        },
    },
    auth::end_user::EndUser,
    error::ApiResult,
    http::{body::Body, envelope, path_id},
    state::AppState,
};

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
    let found = users::find(&user.scope, user.claims.sub).await?;
    let organizations = memberships::of_user(&user.scope, user.claims.sub)
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
    params(("organization_id" = Uuid, Path, description = "The organization's id.")),
    responses((status = 200, body = ActivatedView), (status = 401), (status = 404)), security(("access_token" = [])))]
pub async fn activate(
    state: web::Data<AppState>,
    user: EndUser,
    path: web::Path<String>,
    body: Body,
) -> ApiResult<HttpResponse> {
    let organization_id = path_id("Organization", &path)?;
    body.no_fields().await?;
    let (session, access) =
        auth::activate_organization(&user.scope, &state.issuer(), user.session, organization_id).await?;
    Ok(envelope::ok(ActivatedView {
        session: (&session).into(),
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
    }))
}
