//! Access reviews (operation 15, with create, list, get, items and close).
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use entity::{access_review, access_review_item};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    area::Area,
    areas::access_reviews::{self, APPROVED},
    auth::secret_key::SecretKey,
    error::ApiResult,
    http::{
        body::Body,
        envelope, path_id,
        query::{ListQuery, Query},
    },
};

pub const AREA: Area = Area {
    segments: &["access-reviews", "access-review-items"],
    routes: configure,
    operations: <Operations as utoipa::OpenApi>::openapi,
    parts: Area::no_parts,
};

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_access_review,
    list_access_reviews,
    find_access_review,
    list_review_items,
    decide_review_item,
    close_access_review
))]
struct Operations;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/access-reviews")
            .route(web::post().to(create_access_review))
            .route(web::get().to(list_access_reviews)),
    )
    .service(web::resource("/access-reviews/{review_id}").route(web::get().to(find_access_review)))
    .service(web::resource("/access-reviews/{review_id}/items").route(web::get().to(list_review_items)))
    .service(web::resource("/access-reviews/{review_id}/close").route(web::post().to(close_access_review)))
    .service(web::resource("/access-review-items/{item_id}/decide").route(web::post().to(decide_review_item)));
}

#[derive(Serialize, ToSchema)]
pub struct AccessReviewView {
    pub id: Uuid,
    pub name: String,
    /// The organization reviewed; null: every organization.
    pub organization_id: Option<Uuid>,
    /// `open`, or `closed` (every item decided).
    pub status: String,
    /// Memberships in the snapshot.
    pub item_count: i64,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub closed_at: Option<DateTime<Utc>>,
}

impl From<&access_review::Model> for AccessReviewView {
    fn from(r: &access_review::Model) -> Self {
        AccessReviewView {
            id: r.id,
            name: r.name.clone(),
            organization_id: r.organization_id,
            status: r.status.clone(),
            item_count: r.item_count,
            created_at: r.created_at,
            closed_at: r.closed_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AccessReviewItemView {
    pub id: Uuid,
    pub review_id: Uuid,
    pub user_id: Uuid,
    pub organization_id: Uuid,
    /// The role at the snapshot.
    pub role: String,
    /// `approved` or `revoked`; null while pending.
    pub decision: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub decided_at: Option<DateTime<Utc>>,
    /// The id of the secret key that decided (or closed the review).
    pub decided_by: Option<String>,
}

impl From<&access_review_item::Model> for AccessReviewItemView {
    fn from(i: &access_review_item::Model) -> Self {
        AccessReviewItemView {
            id: i.id,
            review_id: i.review_id,
            user_id: i.user_id,
            organization_id: i.organization_id,
            role: i.role.clone(),
            decision: i.decision.clone(),
            decided_at: i.decided_at,
            decided_by: i.decided_by.clone(),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAccessReviewRequest {
    #[schema(schema_with = crate::openapi::fields::text::<255>)]
    pub name: String,
    /// Review this organization's memberships; omitted: every membership.
    pub organization_id: Option<Uuid>,
}

/// Start a review: one item per membership as it is now.
#[utoipa::path(post, path = "/v1/access-reviews", tag = "governance", request_body = CreateAccessReviewRequest,
    responses((status = 201, body = AccessReviewView), (status = 404, description = "no such organization"), (status = 422)),
    security(("secret_key" = ["access_reviews:write"])))]
pub async fn create_access_review(key: SecretKey, body: Body) -> ApiResult<HttpResponse> {
    let request: CreateAccessReviewRequest = body.json().await?;
    let review = access_reviews::create(&key.scope, &request.name, request.organization_id).await?;
    Ok(envelope::created(AccessReviewView::from(&review)))
}

/// List access reviews, newest first.
#[utoipa::path(get, path = "/v1/access-reviews", tag = "governance", params(ListQuery),
    responses((status = 200, body = [AccessReviewView])), security(("secret_key" = ["access_reviews:read"])))]
pub async fn list_access_reviews(key: SecretKey, query: Query<ListQuery>) -> ApiResult<HttpResponse> {
    let page = query.parsed()?.page()?;
    let (found, has_more) = access_reviews::list(&key.scope, page).await?;
    Ok(envelope::page(found.iter().map(AccessReviewView::from).collect(), has_more))
}

/// Get an access review with its progress.
#[utoipa::path(get, path = "/v1/access-reviews/{review_id}", tag = "governance",
    params(("review_id" = Uuid, Path, description = "The review's id.")),
    responses((status = 200, body = AccessReviewView), (status = 404)), security(("secret_key" = ["access_reviews:read"])))]
pub async fn find_access_review(key: SecretKey, path: web::Path<String>) -> ApiResult<HttpResponse> {
    let id = path_id("Access review", &path)?;
    Ok(envelope::ok(AccessReviewView::from(&access_reviews::find(&key.scope, id).await?)))
}

/// List a review's items: each membership to keep or revoke.
#[utoipa::path(get, path = "/v1/access-reviews/{review_id}/items", tag = "governance",
    params(("review_id" = Uuid, Path, description = "The review's id."), ListQuery),
    responses((status = 200, body = [AccessReviewItemView]), (status = 404)), security(("secret_key" = ["access_reviews:read"])))]
pub async fn list_review_items(
    key: SecretKey,
    path: web::Path<String>,
    query: Query<ListQuery>,
) -> ApiResult<HttpResponse> {
    let id = path_id("Access review", &path)?;
    let page = query.parsed()?.page()?;
    let (found, has_more) = access_reviews::items(&key.scope, id, page).await?;
    Ok(envelope::page(found.iter().map(AccessReviewItemView::from).collect(), has_more))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideRequest {
    #[schema(schema_with = crate::openapi::fields::review_decision)]
    pub decision: String,
}

/// Decide an access review item. `revoked` removes the
/// user's membership in the organization, and ends the user's sessions that
/// have it active, in the same transaction.
#[utoipa::path(post, path = "/v1/access-review-items/{item_id}/decide", tag = "governance",
    params(("item_id" = Uuid, Path, description = "The item's id.")), request_body = DecideRequest,
    responses((status = 200, body = AccessReviewItemView), (status = 404),
        (status = 409, description = "already_decided; or last_owner: the revocation would remove the organization's last owner"),
        (status = 422)),
    security(("secret_key" = ["access_reviews:write"])))]
pub async fn decide_review_item(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Access review item", &path)?;
    let request: DecideRequest = body.json().await?;
    let item = access_reviews::decide(&key.scope, id, &request.decision).await?;
    Ok(envelope::ok(AccessReviewItemView::from(&item)))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct CloseRequest {
    /// How every pending item is decided; default `approved` (access stays
    /// as it is).
    #[schema(schema_with = crate::openapi::fields::optional_review_decision)]
    pub remaining: Option<String>,
}

/// Close a review, deciding every pending item. No body, `{}` or
/// `{"remaining": …}`.
#[utoipa::path(post, path = "/v1/access-reviews/{review_id}/close", tag = "governance",
    params(("review_id" = Uuid, Path, description = "The review's id.")), request_body(content = CloseRequest, description = "Optional: no body or `{}` approves every pending item."),
    responses((status = 200, body = AccessReviewView), (status = 404),
        (status = 409, description = "already_decided: the review is closed; or last_owner"), (status = 422)),
    security(("secret_key" = ["access_reviews:write"])))]
pub async fn close_access_review(key: SecretKey, path: web::Path<String>, body: Body) -> ApiResult<HttpResponse> {
    let id = path_id("Access review", &path)?;
    let request: CloseRequest = body.optional_json().await?;
    let remaining = request.remaining.as_deref().unwrap_or(APPROVED);
    let review = access_reviews::close(&key.scope, id, remaining).await?;
    Ok(envelope::ok(AccessReviewView::from(&review)))
}
