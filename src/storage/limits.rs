//! Per-application count limits (contract §7: active secret keys, webhook
//! endpoints, hooks, profile fields; personal keys per user), exact on every
//! backend and across nodes through one mechanism, [`TenantTxn::reserve`]:
//! the application's tenant lock is taken before the count, so two creators
//! at the limit take turns and the second counts the first's row. (Counting
//! first, as PostgreSQL's READ COMMITTED allows, let twenty concurrent
//! creators end with 114 keys of 100.)
use sea_orm::{PaginatorTrait, Select};

use super::{TenantConn, TenantEntity, TenantTxn};
use crate::error::ApiError;

/// A limit on the rows a creation counts.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub max: u64,
    /// What is counted, plural: "active keys", "webhook endpoints".
    pub what: &'static str,
    /// The request field a refusal names.
    pub field: &'static str,
}

/// Past a limit: 422 `validation_failed` naming it.
#[derive(Debug, thiserror::Error)]
#[error("the limit of {} {} is reached", .0.max, .0.what)]
pub struct LimitReached(pub Limit);

impl From<LimitReached> for ApiError {
    fn from(reached: LimitReached) -> Self {
        ApiError::invalid(reached.0.field, reached.to_string())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    #[error(transparent)]
    Reached(#[from] LimitReached),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

impl From<ReserveError> for ApiError {
    fn from(err: ReserveError) -> Self {
        match err {
            ReserveError::Reached(reached) => reached.into(),
            ReserveError::Db(err) => err.into(),
        }
    }
}

impl TenantTxn {
    /// Room for one more of the rows `counted` selects (from the
    /// application's rows of `E`), within `limit`. Holds the tenant lock
    /// until the transaction ends, so the row the caller then inserts is
    /// counted by every later creator.
    pub async fn reserve<E: TenantEntity>(
        &mut self,
        limit: Limit,
        counted: impl FnOnce(Select<E>) -> Select<E>,
    ) -> Result<(), ReserveError>
    where
        E::Model: Sync,
    {
        self.lock_tenant().await?;
        let count = counted(self.find::<E>()).count(self.conn()).await?;
        if count >= limit.max {
            return Err(LimitReached(limit).into());
        }
        Ok(())
    }
}
