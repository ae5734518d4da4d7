//! What a user allowed a third party's client, remembered: an
//! authorization request that asks for no more scopes than the user
//! allowed is not asked again (unless it says `prompt=consent`), so a third
//! party's client can sign a returning user in silently (`prompt=none`), as
//! at every OpenID Provider. The user sees and withdraws it; a withdrawal
//! ends the sessions issued to that client too.
use chrono::{DateTime, Utc};
use entity::{oauth_client, oauth_code, oauth_consent};
use sea_orm::{ActiveValue::Set, ColumnTrait, Condition, DbErr, IntoActiveModel, QueryFilter, QueryOrder};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{
    areas::sessions,
    clock,
    events::catalog::EventType,
    storage::{TenantConn, TenantScope, TenantTxn},
};

/// A client a user allowed, and what.
#[derive(Serialize, ToSchema)]
pub struct ConsentView {
    pub client_id: Uuid,
    /// The client's name (as the consent page showed it).
    pub client_name: String,
    /// The scopes allowed so far.
    pub scopes: Vec<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub granted_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

fn scopes_of(row: &oauth_consent::Model) -> Vec<String> {
    row.scope.split_whitespace().map(str::to_string).collect()
}

async fn find(db: &impl TenantConn, user_id: Uuid, client_id: Uuid) -> Result<Option<oauth_consent::Model>, DbErr> {
    db.find::<oauth_consent::Entity>()
        .filter(oauth_consent::Column::UserId.eq(user_id))
        .filter(oauth_consent::Column::ClientId.eq(client_id))
        .one(db.conn())
        .await
}

/// Whether the user allowed the client every one of `scopes`.
pub async fn covers(db: &impl TenantConn, user_id: Uuid, client_id: Uuid, scopes: &[String]) -> Result<bool, DbErr> {
    let Some(row) = find(db, user_id, client_id).await? else { return Ok(false) };
    let allowed = scopes_of(&row);
    Ok(scopes.iter().all(|scope| allowed.contains(scope)))
}

/// Remembers that the user allowed the client `scopes`, beside what they
/// allowed it before.
pub async fn remember(scope: &TenantScope, user_id: Uuid, client_id: Uuid, scopes: &[String]) -> Result<(), DbErr> {
    let mut txn = scope.begin().await?;
    let now = clock::now();
    // Two allowances at once would both insert: the application's lock
    // takes them in turn (an allowance is rare, a page away from a person).
    txn.lock_tenant().await?;
    let row = match find(&txn, user_id, client_id).await? {
        Some(row) => {
            let mut allowed = scopes_of(&row);
            let more: Vec<String> = scopes.iter().filter(|s| !allowed.contains(s)).cloned().collect();
            if more.is_empty() {
                txn.commit().await?;
                return Ok(());
            }
            allowed.extend(more);
            let mut active = row.into_active_model();
            active.scope = Set(allowed.join(" "));
            active.updated_at = Set(now);
            txn.update(active).await?
        }
        None => {
            let row = oauth_consent::Model {
                id: Uuid::now_v7(),
                application_id: txn.application_id(),
                user_id,
                client_id,
                scope: scopes.join(" "),
                created_at: now,
                updated_at: now,
            };
            txn.insert(oauth_consent::ActiveModel::from(row.clone())).await?;
            row
        }
    };
    let data = json!({"user_id": user_id, "client_id": client_id, "scopes": scopes_of(&row)});
    txn.audit(EventType::OAuthConsentGranted, Some(row.id), data).await?;
    txn.commit().await
}

/// The clients the user allowed, the newest allowance first.
pub async fn of_user(db: &impl TenantConn, user_id: Uuid) -> Result<Vec<ConsentView>, DbErr> {
    let rows = db
        .find::<oauth_consent::Entity>()
        .filter(oauth_consent::Column::UserId.eq(user_id))
        .order_by_desc(oauth_consent::Column::UpdatedAt)
        .all(db.conn())
        .await?;
    let clients = db
        .find::<oauth_client::Entity>()
        .filter(oauth_client::Column::Id.is_in(rows.iter().map(|r| r.client_id)))
        .all(db.conn())
        .await?;
    Ok(rows
        .iter()
        .map(|row| ConsentView {
            client_id: row.client_id,
            client_name: clients.iter().find(|c| c.id == row.client_id).map(|c| c.name.clone()).unwrap_or_default(),
            scopes: scopes_of(row),
            granted_at: row.created_at,
            updated_at: row.updated_at,
        })
        .collect())
}

/// Withdraws the user's consent to the client and ends the user's sessions
/// issued to it; answers how many sessions ended, or `None` when the user
/// had not allowed that client.
pub async fn withdraw(scope: &TenantScope, user_id: Uuid, client_id: Uuid) -> Result<Option<usize>, DbErr> {
    let mut txn = scope.begin().await?;
    let Some(row) = find(&txn, user_id, client_id).await? else { return Ok(None) };
    txn.delete::<oauth_consent::Entity>(oauth_consent::Column::Id.eq(row.id)).await?;
    // A code issued just before, not exchanged yet, would open a session.
    let unexchanged = Condition::all()
        .add(oauth_code::Column::UserId.eq(user_id))
        .add(oauth_code::Column::ClientId.eq(client_id))
        .add(oauth_code::Column::UsedAt.is_null());
    txn.delete::<oauth_code::Entity>(unexchanged).await?;
    let ended = sessions::revoke_of_user_and_client_in(&mut txn, user_id, client_id, "consent_withdrawn").await?;
    let data = json!({"user_id": user_id, "client_id": client_id, "sessions_ended": ended});
    txn.audit(EventType::OAuthConsentWithdrawn, Some(row.id), data).await?;
    txn.commit().await?;
    Ok(Some(ended))
}

/// Forgets every consent to a client (the client deleted), in its
/// transaction; answers how many.
pub async fn forget_client(txn: &mut TenantTxn, client_id: Uuid) -> Result<u64, DbErr> {
    txn.delete::<oauth_consent::Entity>(oauth_consent::Column::ClientId.eq(client_id)).await
}
