//! What other areas need of connections without the area itself (which
//! reads organizations, whose deletion comes here): the provider name a
//! connection's sign-ins go by, a connection's removal with its linked
//! identities, and the session of a sign-in that finished at a second
//! factor.
use entity::{sso_connection, user_identity};
use sea_orm::{ColumnTrait, DbErr, QueryFilter};
use uuid::Uuid;

use crate::{
    areas::sessions::SsoSignIn,
    storage::{TenantConn, TenantTxn},
};

const PROVIDER_PREFIX: &str = "sso:";

/// The provider name a connection's sign-ins go by (in their flows, their
/// linked identities and their audit rows).
pub fn provider_name(connection_id: Uuid) -> String {
    format!("{PROVIDER_PREFIX}{connection_id}")
}

/// The connection a provider name stands for, if it is one's.
pub fn connection_of_provider(provider: &str) -> Option<Uuid> {
    provider.strip_prefix(PROVIDER_PREFIX).and_then(|id| Uuid::try_parse(id).ok())
}

/// Deletes a connection and the identities linked through it (the users
/// keep their accounts and memberships).
pub async fn forget(txn: &mut TenantTxn, row: &sso_connection::Model) -> Result<(), DbErr> {
    txn.delete::<user_identity::Entity>(user_identity::Column::Provider.eq(provider_name(row.id))).await?;
    txn.delete::<sso_connection::Entity>(sso_connection::Column::Id.eq(row.id)).await?;
    Ok(())
}

/// Deletes an organization's connections with it (in its deletion's
/// transaction); answers how many.
pub async fn forget_organization(txn: &mut TenantTxn, organization_id: Uuid) -> Result<u64, DbErr> {
    let rows = txn
        .find::<sso_connection::Entity>()
        .filter(sso_connection::Column::OrganizationId.eq(organization_id))
        .all(txn.conn())
        .await?;
    for row in &rows {
        forget(txn, row).await?;
    }
    Ok(rows.len() as u64)
}

/// The session of a sign-in through `provider` when it is a connection
/// that still exists: in its organization, with `amr`.
pub async fn session_of(db: &impl TenantConn, provider: &str, amr: &str) -> Result<Option<SsoSignIn>, DbErr> {
    let Some(id) = connection_of_provider(provider) else { return Ok(None) };
    let row = db.find_by_id::<sso_connection::Entity>(id).one(db.conn()).await?;
    Ok(row.map(|row| SsoSignIn { organization_id: row.organization_id, amr: amr.to_string() }))
}
