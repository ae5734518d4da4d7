//! Step-up: a signed-in session proves a second factor (a TOTP code, a
//! recovery code or a passkey) and continues at `aal2`: the same session, its `aal2_at`
//! set to now, so new tokens (from now and from its refreshes) say `aal2`.
use entity::session;
use sea_orm::{sea_query::Expr, ColumnTrait, QueryFilter, UpdateMany};
use serde_json::json;

use super::{Proof, Proved, SecondFactorError};
use crate::{crypto::master_key::MasterKey, events::catalog::EventType, storage::TenantScope};

/// Proves `proof` for the session's user and raises the session to `aal2`;
/// answers the session as it is now.
pub async fn step_up(
    scope: &TenantScope,
    master_key: &MasterKey,
    session: &session::Model,
    proof: &Proof,
) -> Result<session::Model, SecondFactorError> {
    let user_id = session.user_id;
    let mut txn = scope.begin().await?;
    let factor = match super::prove(&mut txn, scope.tenant(), master_key, user_id, proof).await? {
        Proved::Factor(factor) => factor,
        Proved::Not { reason } => {
            let data = Proved::failure(reason, json!({"method": "step_up", "session_id": session.id}));
            txn.audit(EventType::MfaChallengeFailed, Some(user_id), data).await?;
            txn.commit().await?;
            return Err(SecondFactorError::InvalidCode);
        }
    };
    let now = crate::clock::now();
    let raised = txn
        .update_many(|q: UpdateMany<session::Entity>| {
            q.col_expr(session::Column::Aal, Expr::value("aal2"))
                .col_expr(session::Column::Aal2At, Expr::value(now))
                .filter(session::Column::Id.eq(session.id))
                .filter(session::Column::RevokedAt.is_null())
        })
        .await?;
    if raised == 0 {
        return Err(SecondFactorError::SessionEnded);
    }
    txn.audit(EventType::SessionSteppedUp, Some(session.id), json!({"user_id": user_id, "second_factor": factor}))
        .await?;
    txn.commit().await?;
    Ok(session::Model { aal: "aal2".into(), aal2_at: Some(now), ..session.clone() })
}
