//! The one-time code for our session and tokens: taken once, within a
//! minute, with the application's PKCE verifier when it sent a challenge;
//! then a session opens exactly as at a password sign-in (or, for a user
//! with a second factor, a challenge is answered as there).
use chrono::Duration;
use entity::{oauth_flow, user};
use sea_orm::{sea_query::Expr, ColumnTrait, QueryFilter, UpdateMany};
use serde_json::json;

use super::{callback::method_of, ProviderSignInError};
use crate::{
    areas::{
        auth::{Issuer, SignedIn},
        second_factors::{self, challenges},
        sessions::{self, SsoSignIn},
        users,
    },
    audit::Actor,
    crypto::{constant_time_eq, sha256},
    events::catalog::EventType,
    oauth,
    storage::{TenantConn, TenantScope, Unaudited},
};

pub async fn exchange(
    scope: &TenantScope,
    issuer: &Issuer<'_>,
    code: &str,
    code_verifier: Option<&str>,
    session_ttl: Duration,
) -> Result<SignedIn, ProviderSignInError> {
    let refused = || ProviderSignInError::InvalidGrant;
    if code.is_empty() || code.len() > 256 {
        return Err(refused());
    }
    let flow = scope
        .find::<oauth_flow::Entity>()
        .filter(oauth_flow::Column::CodeHash.eq(sha256(code).to_vec()))
        .one(scope.conn())
        .await?
        .ok_or_else(refused)?;
    if let Some(challenge) = &flow.client_code_challenge {
        let verifier = code_verifier.filter(|v| oauth::is_pkce_value(v)).ok_or_else(refused)?;
        if !constant_time_eq(oauth::pkce_challenge(verifier).as_bytes(), challenge.as_bytes()) {
            return Err(refused());
        }
    }
    let user_id = flow.user_id.ok_or_else(refused)?;
    let signer = issuer.signer(scope).await?;
    let now = crate::clock::now();
    let mut txn = scope.acting_as(Actor::user(user_id)).begin().await?;
    let taken = txn
        .update_many(|q: UpdateMany<oauth_flow::Entity>| {
            q.col_expr(oauth_flow::Column::ExchangedAt, Expr::value(now))
                .filter(oauth_flow::Column::Id.eq(flow.id))
                .filter(oauth_flow::Column::ExchangedAt.is_null())
                .filter(oauth_flow::Column::CodeExpiresAt.gt(now))
        })
        .await?;
    // Taken by another exchange, expired, or the user deleted meanwhile.
    if taken != 1 || !users::touch_sign_in(&mut txn, user_id, now).await? {
        return Err(refused());
    }
    let user = txn.find_by_id::<user::Entity>(user_id).one(txn.conn()).await?.ok_or_else(refused)?;
    let factors = second_factors::factors_of(&txn, user_id).await?;
    if !factors.is_empty() {
        // The code is spent; the sign-in's outcome is audited at its second step.
        txn.unaudited(Unaudited::ProviderSignInStep);
        txn.commit().await?;
        let method = method_of(&flow.provider);
        return Ok(SignedIn::SecondFactorRequired(
            challenges::issue(scope, user_id, method, Some(&flow.provider), factors).await?,
        ));
    }
    let verified = user.email_verified_at.is_some();
    let opened = match (flow.organization_id, flow.amr) {
        (Some(organization_id), Some(amr)) => {
            let sso = SsoSignIn { organization_id, amr };
            sessions::open_for_sso(&mut txn, user_id, verified, "aal1", session_ttl, sso).await?
        }
        _ => sessions::open(&mut txn, user_id, verified, "aal1", session_ttl).await?,
    };
    txn.audit(
        EventType::SignInSucceeded,
        Some(user_id),
        json!({"session_id": opened.session.id, "method": method_of(&flow.provider), "provider": flow.provider}),
    )
    .await?;
    txn.commit().await?;
    Ok(SignedIn::Session(signer, user, opened))
}
