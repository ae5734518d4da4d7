//! Sessions and their refresh tokens. A refresh token is opaque (`rt_` and
//! 256 random bits), kept only as its SHA-256, and replaced on every use.
//! Presenting a token that was already replaced means it leaked or was
//! stolen: the whole session is revoked (as OAuth 2.0 Security BCP §4.14).
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use chrono::{DateTime, Duration, Utc};
use entity::{refresh_token, session, user};
use rand::{rngs::OsRng, RngCore};
use sea_orm::{
    sea_query::{Expr, IntoCondition},
    ColumnTrait, Condition, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Select, UpdateMany,
};
use serde_json::json;
use uuid::Uuid;

use crate::{
    audit::Actor,
    crypto::sha256,
    error::ApiError,
    events::catalog::EventType,
    storage::{Page, TenantConn, TenantScope, TenantTxn},
};

const PREFIX: &str = "rt_";

/// What went wrong with a session (a refused refresh is not an error:
/// see [`RefreshRefused`]).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session `{0}` not found")]
    NotFound(Uuid),
    #[error(transparent)]
    Db(#[from] DbErr),
}

impl From<SessionError> for ApiError {
    fn from(err: SessionError) -> Self {
        match err {
            SessionError::NotFound(id) => ApiError::not_found("Session", id),
            SessionError::Db(err) => err.into(),
        }
    }
}

/// A session with the refresh token just issued for it (shown once).
pub struct Opened {
    pub session: session::Model,
    pub refresh_token: String,
}

/// A new refresh token for a session: the secret (shown once) and its row.
pub fn new_refresh_token(
    application_id: Uuid,
    session_id: Uuid,
    now: chrono::DateTime<chrono::Utc>,
) -> (String, refresh_token::Model) {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let token = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let row = refresh_token::Model {
        token_hash: sha256(&token).to_vec(),
        application_id,
        session_id,
        created_at: now,
        rotated_at: None,
    };
    (token, row)
}

/// Opens a session for a user, in the caller's transaction;
/// `email_verified` is the user's as it is now; `aal` is `aal1`, or `aal2`
/// when a second factor was proven.
pub async fn open(
    txn: &mut TenantTxn,
    user_id: Uuid,
    email_verified: bool,
    aal: &str,
    ttl: Duration,
) -> Result<Opened, DbErr> {
    open_as(txn, user_id, email_verified, aal, ttl, Origin::Api).await
}

/// What an OAuth client's session is issued with.
pub struct ClientGrant<'a> {
    /// The session's id, chosen before it opens (its code's row names it).
    pub session_id: Uuid,
    pub client_id: Uuid,
    /// The granted scopes, space-separated.
    pub scope: &'a str,
    /// The organization the user chose for it: the session's active one.
    pub organization_id: Option<Uuid>,
}

/// [`open`], for an OAuth client: the session is issued to it with what
/// it was granted.
pub async fn open_for_client(
    txn: &mut TenantTxn,
    user_id: Uuid,
    email_verified: bool,
    aal: &str,
    ttl: Duration,
    grant: ClientGrant<'_>,
) -> Result<Opened, DbErr> {
    open_as(txn, user_id, email_verified, aal, ttl, Origin::Client(grant)).await
}

/// An enterprise SSO sign-in: the session opens in the connection's
/// organization, and its tokens say how the user signed in.
pub struct SsoSignIn {
    pub organization_id: Uuid,
    /// RFC 8176 values, space-separated.
    pub amr: String,
}

/// [`open`], for an SSO sign-in.
pub async fn open_for_sso(
    txn: &mut TenantTxn,
    user_id: Uuid,
    email_verified: bool,
    aal: &str,
    ttl: Duration,
    sso: SsoSignIn,
) -> Result<Opened, DbErr> {
    open_as(txn, user_id, email_verified, aal, ttl, Origin::Sso(sso)).await
}

/// Where a session comes from, beyond the user.
enum Origin<'a> {
    Api,
    Client(ClientGrant<'a>),
    Sso(SsoSignIn),
}

async fn open_as(
    txn: &mut TenantTxn,
    user_id: Uuid,
    email_verified: bool,
    aal: &str,
    ttl: Duration,
    origin: Origin<'_>,
) -> Result<Opened, DbErr> {
    let application_id = txn.application_id();
    let now = crate::clock::now();
    let client = match &origin {
        Origin::Client(grant) => Some(grant),
        _ => None,
    };
    let (active_organization_id, amr) = match &origin {
        Origin::Api => (None, None),
        Origin::Client(grant) => (grant.organization_id, None),
        Origin::Sso(sso) => (Some(sso.organization_id), Some(sso.amr.clone())),
    };
    let session = session::Model {
        id: client.map_or_else(Uuid::now_v7, |c| c.session_id),
        application_id,
        user_id,
        aal: aal.into(),
        aal2_at: (aal == "aal2").then_some(now),
        active_organization_id,
        email_verified,
        created_at: now,
        refreshed_at: now,
        expires_at: now + ttl,
        revoked_at: None,
        revoked_reason: None,
        oauth_client_id: client.map(|c| c.client_id),
        oauth_scope: client.map(|c| c.scope.to_string()),
        amr,
    };
    txn.insert(session::ActiveModel::from(session.clone())).await?;
    let (refresh_token, row) = new_refresh_token(application_id, session.id, now);
    txn.insert(refresh_token::ActiveModel::from(row)).await?;
    let data = match origin {
        Origin::Client(ClientGrant { client_id, .. }) => json!({"user_id": user_id, "oauth_client_id": client_id}),
        Origin::Sso(SsoSignIn { organization_id, .. }) => {
            json!({"user_id": user_id, "organization_id": organization_id})
        }
        Origin::Api => json!({"user_id": user_id}),
    };
    txn.audit(EventType::SessionCreated, Some(session.id), data).await?;
    Ok(Opened { session, refresh_token })
}

/// Why a refresh was refused. Every one answers the same 401.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefreshRefused {
    Unknown,
    /// An already-rotated token: the session is now revoked.
    Reused,
    SessionEnded,
}

impl RefreshRefused {
    /// The `reason` label of `gatehouse_refresh_refused_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshRefused::Unknown => "unknown",
            RefreshRefused::Reused => "reused",
            RefreshRefused::SessionEnded => "session_ended",
        }
    }
}

/// Whether a presented value can be a refresh token at all.
pub fn is_refresh_token_shape(presented: &str) -> bool {
    presented.starts_with(PREFIX) && presented.len() == PREFIX.len() + 43
}

/// A presented token that is not current: unknown; rotated within the
/// application's `refresh_reuse_interval_seconds` (two tabs refreshing at
/// once, as Auth0's leeway and Okta's grace period allow), which gets a new
/// pair for the same session; or rotated before that, which means it was
/// stolen or leaked, and its whole session is revoked.
pub async fn not_current(
    scope: &TenantScope,
    hash: Vec<u8>,
    ttl: Duration,
) -> Result<Result<Opened, RefreshRefused>, DbErr> {
    let earlier = scope
        .find::<refresh_token::Entity>()
        .filter(refresh_token::Column::TokenHash.eq(hash))
        .one(scope.conn())
        .await?;
    let Some(earlier) = earlier else {
        return Ok(Err(RefreshRefused::Unknown));
    };
    let now = crate::clock::now();
    let interval = Duration::seconds(i64::from(scope.tenant().refresh_reuse_interval_seconds));
    if let Some(rotated_at) = earlier.rotated_at.filter(|at| interval > Duration::zero() && now - *at <= interval) {
        return reissue(scope, &earlier.token_hash, rotated_at, earlier.session_id, ttl, now, interval).await;
    }
    let mut txn = scope.acting_as(Actor::system()).begin().await?;
    if revoke_in(&mut txn, earlier.session_id, "refresh_token_reuse").await?.is_some() {
        txn.commit().await?;
    }
    Ok(Err(RefreshRefused::Reused))
}

/// A new refresh token for a live session, whose expiry slides forward as
/// at a rotation; the token the other tab got stays current beside it. A
/// rotated token is reissued once: its rotation time moves out of the
/// interval (compare-and-set), so a replay of it is reuse again.
#[allow(clippy::too_many_arguments)]
async fn reissue(
    scope: &TenantScope,
    hash: &[u8],
    rotated_at: chrono::DateTime<chrono::Utc>,
    session_id: Uuid,
    ttl: Duration,
    now: chrono::DateTime<chrono::Utc>,
    interval: Duration,
) -> Result<Result<Opened, RefreshRefused>, DbErr> {
    let Some(session) = find_active(scope, session_id).await? else {
        return Ok(Err(RefreshRefused::SessionEnded));
    };
    let mut txn = scope.acting_as(Actor::user(session.user_id)).begin().await?;
    let claimed = txn
        .update_many(|q: UpdateMany<refresh_token::Entity>| {
            q.col_expr(refresh_token::Column::RotatedAt, Expr::value(rotated_at - interval - Duration::seconds(1)))
                .filter(refresh_token::Column::TokenHash.eq(hash.to_vec()))
                .filter(refresh_token::Column::RotatedAt.eq(rotated_at))
        })
        .await?;
    if claimed == 0 {
        return Ok(Err(RefreshRefused::Reused)); // another presentation took the one reissue
    }
    let slid = txn
        .update_many(|q: UpdateMany<session::Entity>| {
            q.col_expr(session::Column::RefreshedAt, Expr::value(now))
                .col_expr(session::Column::ExpiresAt, Expr::value(now + ttl))
                .filter(session::Column::Id.eq(session_id))
                .filter(session::Column::RevokedAt.is_null())
        })
        .await?;
    if slid == 0 {
        return Ok(Err(RefreshRefused::SessionEnded)); // revoked since it was read
    }
    let (refresh_token, row) = new_refresh_token(scope.tenant().id, session_id, now);
    txn.insert(refresh_token::ActiveModel::from(row)).await?;
    txn.audit(
        EventType::SessionRefreshed,
        Some(session_id),
        json!({"user_id": session.user_id, "reused_within_interval": true}),
    )
    .await?;
    txn.commit().await?;
    Ok(Ok(Opened { session: session::Model { refreshed_at: now, expires_at: now + ttl, ..session }, refresh_token }))
}

pub async fn find(db: &impl TenantConn, id: Uuid) -> Result<session::Model, SessionError> {
    db.find_by_id::<session::Entity>(id).one(db.conn()).await?.ok_or(SessionError::NotFound(id))
}

/// What makes a session active at `now`: neither revoked nor expired.
pub fn active_at(now: DateTime<Utc>) -> Condition {
    Condition::all().add(session::Column::RevokedAt.is_null()).add(session::Column::ExpiresAt.gt(now))
}

/// The session if it is neither revoked nor expired.
pub async fn find_active(db: &impl TenantConn, id: Uuid) -> Result<Option<session::Model>, DbErr> {
    db.find_by_id::<session::Entity>(id).filter(active_at(crate::clock::now())).one(db.conn()).await
}

/// [`find_active`] with the session's user, in one query.
pub async fn find_active_with_user(
    db: &impl TenantConn,
    id: Uuid,
) -> Result<Option<(session::Model, user::Model)>, DbErr> {
    let active = db.find_by_id::<session::Entity>(id).filter(active_at(crate::clock::now()));
    one_with_parent::<_, user::Entity>(db, active, session::Column::UserId, user::Column::Id).await
}

/// A presented refresh token's row, rotated or not, with its session
/// (ended or not), in one query.
async fn refresh_token_with_session(
    db: &impl TenantConn,
    presented: &str,
) -> Result<Option<(refresh_token::Model, session::Model)>, DbErr> {
    let token =
        db.find::<refresh_token::Entity>().filter(refresh_token::Column::TokenHash.eq(sha256(presented).to_vec()));
    one_with_parent::<_, session::Entity>(db, token, refresh_token::Column::SessionId, session::Column::Id).await
}

/// The first row `query` finds with the row of `P` it belongs to
/// (`child_key` = `parent_key`), in one query (an inner join).
async fn one_with_parent<C: EntityTrait, P: EntityTrait>(
    db: &impl TenantConn,
    query: Select<C>,
    child_key: C::Column,
    parent_key: P::Column,
) -> Result<Option<(C::Model, P::Model)>, DbErr> {
    let found = crate::storage::with_parent::<C, P>(query, child_key, parent_key).one(db.conn()).await?;
    Ok(found.and_then(|(child, parent)| Some((child, parent?))))
}

/// The OAuth client a refresh token's session was issued to: `None` for
/// an unknown token, `Some(None)` for the API's own sign-in. Any token of
/// the session counts (a rotated one too: its use is reuse, which the
/// rotation itself detects).
pub async fn client_of_refresh_token(db: &impl TenantConn, presented: &str) -> Result<Option<Option<Uuid>>, DbErr> {
    Ok(refresh_token_with_session(db, presented).await?.map(|(_, session)| session.oauth_client_id))
}

/// The active session a presented refresh token is the current token of,
/// with that token's row; `None` for anything else (unknown, rotated, or
/// of an ended session). Presenting it here is not a use: nothing rotates,
/// and a rotated token is not taken for reuse.
pub async fn of_current_refresh_token(
    db: &impl TenantConn,
    presented: &str,
) -> Result<Option<(refresh_token::Model, session::Model)>, DbErr> {
    if !is_refresh_token_shape(presented) {
        return Ok(None);
    }
    let now = crate::clock::now();
    let found = refresh_token_with_session(db, presented).await?;
    Ok(found.filter(|(token, session)| {
        token.rotated_at.is_none() && session.revoked_at.is_none() && session.expires_at > now
    }))
}

pub async fn list_of_user(
    db: &impl TenantConn,
    user_id: Uuid,
    page: Page,
) -> Result<(Vec<session::Model>, bool), DbErr> {
    page.fetch(
        db.find::<session::Entity>()
            .filter(session::Column::UserId.eq(user_id))
            .order_by_desc(session::Column::CreatedAt)
            .order_by_desc(session::Column::Id),
        db.conn(),
    )
    .await
}

/// Revokes a session in the caller's transaction: when it was revoked, or
/// `None` if it already was.
pub async fn revoke_in(
    txn: &mut TenantTxn,
    id: Uuid,
    reason: &str,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
    let now = crate::clock::now();
    let revoked = txn
        .update_many(|q: UpdateMany<session::Entity>| {
            q.col_expr(session::Column::RevokedAt, Expr::value(now))
                .col_expr(session::Column::RevokedReason, Expr::value(reason))
                .filter(session::Column::Id.eq(id))
                .filter(session::Column::RevokedAt.is_null())
        })
        .await?;
    if revoked == 0 {
        return Ok(None);
    }
    // Its current refresh token stops working with it.
    txn.update_many(|q: UpdateMany<refresh_token::Entity>| {
        q.col_expr(refresh_token::Column::RotatedAt, Expr::value(now))
            .filter(refresh_token::Column::SessionId.eq(id))
            .filter(refresh_token::Column::RotatedAt.is_null())
    })
    .await?;
    txn.audit(EventType::SessionRevoked, Some(id), json!({"reason": reason})).await?;
    Ok(Some(now))
}

/// Revokes every live session of a user in the caller's transaction (a
/// password reset, a directory's deprovisioning); answers how many.
pub async fn revoke_all_of_user_in(txn: &mut TenantTxn, user_id: Uuid, reason: &str) -> Result<usize, DbErr> {
    revoke_live_in(txn, session::Column::UserId.eq(user_id), reason).await
}

/// Revokes the live sessions of a user issued to one OAuth client (its
/// consent withdrawn), in the caller's transaction; answers how many.
pub async fn revoke_of_user_and_client_in(
    txn: &mut TenantTxn,
    user_id: Uuid,
    client_id: Uuid,
    reason: &str,
) -> Result<usize, DbErr> {
    let of =
        Condition::all().add(session::Column::UserId.eq(user_id)).add(session::Column::OauthClientId.eq(client_id));
    revoke_live_in(txn, of, reason).await
}

async fn revoke_live_in(txn: &mut TenantTxn, of: impl IntoCondition, reason: &str) -> Result<usize, DbErr> {
    let live: Vec<Uuid> = txn
        .find::<session::Entity>()
        .select_only()
        .column(session::Column::Id)
        .filter(of)
        .filter(session::Column::RevokedAt.is_null())
        .into_tuple()
        .all(txn.conn())
        .await?;
    for id in &live {
        revoke_in(txn, *id, reason).await?;
    }
    Ok(live.len())
}

/// Revokes a session; revoking a revoked session answers it unchanged.
pub async fn revoke(scope: &TenantScope, id: Uuid, reason: &str) -> Result<session::Model, SessionError> {
    let mut txn = scope.begin().await?;
    let session = find(&txn, id).await?;
    let Some(revoked_at) = revoke_in(&mut txn, id, reason).await? else {
        return Ok(session);
    };
    txn.commit().await?;
    Ok(session::Model { revoked_at: Some(revoked_at), revoked_reason: Some(reason.to_string()), ..session })
}

/// Makes an organization the session's active one (the caller checked the
/// membership).
pub async fn activate_organization(scope: &TenantScope, session_id: Uuid, organization_id: Uuid) -> Result<(), DbErr> {
    let mut txn = scope.begin().await?;
    txn.update_many(|q: UpdateMany<session::Entity>| {
        q.col_expr(session::Column::ActiveOrganizationId, Expr::value(organization_id))
            .filter(session::Column::Id.eq(session_id))
    })
    .await?;
    let data = json!({"organization_id": organization_id});
    txn.audit(EventType::SessionOrganizationActivated, Some(session_id), data).await?;
    txn.commit().await
}
