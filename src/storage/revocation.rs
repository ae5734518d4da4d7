//! Revoking once: every revocable credential (secret keys, user keys,
//! service-account keys, enrollment tokens) is revoked by the same
//! conditional update, so of two concurrent revokers exactly one changes
//! the row and writes the audit row; the other answers the row as it is.
use chrono::{DateTime, Utc};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, QueryFilter, UpdateMany};
use uuid::Uuid;

use super::{TenantEntity, TenantTxn};

/// A tenant table whose rows carry `revoked_at`.
pub trait Revocable: TenantEntity {
    const ID: Self::Column;
    const REVOKED_AT: Self::Column;
}

impl TenantTxn {
    /// `UPDATE … SET revoked_at = now WHERE id = ? AND revoked_at IS NULL`
    /// (within the application); whether this call revoked the row.
    pub async fn revoke<E: Revocable>(&mut self, id: Uuid, now: DateTime<Utc>) -> Result<bool, DbErr> {
        let revoked = self
            .update_many(|q: UpdateMany<E>| {
                q.col_expr(E::REVOKED_AT, Expr::value(now)).filter(E::ID.eq(id)).filter(E::REVOKED_AT.is_null())
            })
            .await?;
        Ok(revoked > 0)
    }
}

macro_rules! revocable {
    ($($entity:ident),* $(,)?) => {$(
        impl Revocable for entity::$entity::Entity {
            const ID: Self::Column = entity::$entity::Column::Id;
            const REVOKED_AT: Self::Column = entity::$entity::Column::RevokedAt;
        }
    )*};
}

revocable!(api_key, user_api_key, service_account_key, enrollment_token);
