//! The registry of running tenant actors, and the handlers' way in: reads
//! take the state an actor published (no mailbox hop once it is loaded);
//! changes are messages to the application's actor. One actor per
//! application, started on first use, stopped when nobody asked for it for
//! a while.
use std::{
    future::Future,
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use actix::prelude::*;
use ed25519_compact::{PublicKey, SecretKey};
use uuid::Uuid;

use super::{
    actor::{Deps, Handle, Handles, TenantActor},
    change::{Change, InTurn},
    messages::*,
    parts::Parts,
    state::TenantState,
};
use crate::{
    cache::{
        bus::{Bus, Invalidation},
        layer::ReadThrough,
        redis::SharedRedis,
    },
    crypto::master_key::MasterKey,
    error::{ApiError, ApiResult},
    region::{moves::MovePolicy, router::Directory, Region},
    storage::{Storage, TenantScope},
    tokens::{
        algorithms::{Algorithm, VerifyingKey},
        keys::{JwksDocument, SigningKeys, CACHE_SECONDS},
    },
};

#[derive(Clone)]
pub struct TenantRegistry {
    handles: Handles,
    deps: Arc<Deps>,
}

/// How long a published state is trusted: while the bus delivers other
/// nodes' changes, 10 s (the bound if a message is lost: the key sets'
/// cache time that a retired key's grace covers); without it, 5 s.
pub(super) fn fresh_for(deps: &Deps) -> Duration {
    match deps.bus.connected() {
        Some(true) => Duration::from_secs(CACHE_SECONDS),
        _ => Duration::from_secs(5),
    }
}

impl TenantRegistry {
    #[allow(clippy::too_many_arguments)] // one per dependency every actor of the node shares
    pub fn new(
        storage: Arc<Storage>,
        directory: Directory,
        bus: Bus,
        keys: SigningKeys,
        master_key: MasterKey,
        redis: Option<SharedRedis>,
        moves: MovePolicy,
        parts: Parts,
    ) -> Self {
        let ttl = Duration::from_secs(CACHE_SECONDS);
        let documents = ReadThrough::new("jwks", redis, ttl, ttl);
        let deps = Arc::new(Deps { storage, directory, bus: bus.clone(), keys, master_key, documents, moves, parts });
        let registry = Self { handles: Arc::default(), deps };
        // Weak: the bus outlives nothing it holds (the deps hold the bus).
        let (handles, deps) = (Arc::downgrade(&registry.handles), Arc::downgrade(&registry.deps));
        bus.listen(move |invalidation| {
            if let (Some(handles), Some(deps)) = (handles.upgrade(), deps.upgrade()) {
                TenantRegistry { handles, deps }.invalidated(invalidation);
            }
        });
        registry
    }

    /// Another node changed a tenant (or the bus reconnected): drop the
    /// stale copies; the next read loads afresh.
    fn invalidated(&self, invalidation: &Invalidation) {
        let handles = self.handles.lock().expect("registry lock");
        match *invalidation {
            Invalidation::Tenant { application_id, version } => {
                self.deps.documents.invalidate_local(application_id);
                if let Some(handle) = handles.get(&application_id) {
                    if handle.published.load().as_ref().is_some_and(|s| s.version < version) {
                        handle.published.store(None);
                    }
                }
            }
            Invalidation::All => {
                self.deps.documents.invalidate_all_local();
                handles.values().for_each(|h| h.published.store(None));
            }
            _ => {}
        }
    }

    fn handle(&self, id: Uuid) -> Handle {
        let mut handles = self.handles.lock().expect("registry lock");
        let handle = handles.entry(id).or_insert_with(|| {
            let published = Arc::default();
            let last_used = Arc::default();
            let actor = TenantActor {
                id,
                deps: self.deps.clone(),
                published: Arc::clone(&published),
                last_used: Arc::clone(&last_used),
                handles: self.handles.clone(),
            };
            Handle { addr: actor.start(), published, last_used }
        });
        handle.last_used.store(crate::clock::now().timestamp() as u64, Ordering::Relaxed);
        handle.clone()
    }

    async fn send<M, R>(&self, id: Uuid, message: M) -> ApiResult<R>
    where
        M: Message<Result = ApiResult<R>> + Send + 'static,
        R: Send + 'static,
        TenantActor: Handler<M>,
    {
        self.handle(id).addr.send(message).await.map_err(|err| ApiError::internal_error(&err))?
    }

    /// The application's state: the published one while fresh, else loaded
    /// by its actor.
    pub async fn state(&self, scope: &TenantScope) -> ApiResult<Arc<TenantState>> {
        let id = scope.tenant().id;
        let handle = self.handle(id);
        if let Some(state) = handle.published.load_full().filter(|s| s.is_fresh(fresh_for(&self.deps))) {
            return Ok(state);
        }
        self.send(id, Load { unknown_kid: None }).await
    }

    /// The state with a current Ed25519 signing key, created on first use
    /// (by the system, with its audit row).
    pub async fn signing_state(&self, scope: &TenantScope) -> ApiResult<Arc<TenantState>> {
        self.signing_state_for(scope, Algorithm::EdDSA).await
    }

    /// The state with a current signing key of `algorithm`, created if
    /// there is none.
    pub async fn signing_state_for(&self, scope: &TenantScope, algorithm: Algorithm) -> ApiResult<Arc<TenantState>> {
        let state = self.state(scope).await?;
        if state.keys.current_of(algorithm).is_some() {
            return Ok(state);
        }
        self.send(scope.tenant().id, EnsureSigningKey { scope: scope.clone(), algorithm }).await
    }

    /// The key that signs the application's tokens now.
    pub async fn current_signing_key(&self, scope: &TenantScope) -> ApiResult<(Uuid, SecretKey)> {
        let state = self.signing_state(scope).await?;
        state.keys.current().ok_or_else(|| ApiError::internal("a signing key was created but cannot be loaded"))
    }

    /// The Ed25519 public key of `kid` (an access token's), reloading the
    /// set once if it is not known (at most once a second, or at once for a
    /// `kid` newer than the set).
    pub async fn public_key(&self, scope: &TenantScope, kid: Uuid) -> ApiResult<Option<PublicKey>> {
        Ok(match self.verifying_key(scope, kid).await? {
            Some(VerifyingKey::Ed25519(key)) => Some(key),
            _ => None,
        })
    }

    /// The published key of `kid` of either algorithm (an ID token's), reloaded as [`Self::public_key`] is.
    pub async fn verifying_key(&self, scope: &TenantScope, kid: Uuid) -> ApiResult<Option<VerifyingKey>> {
        let state = self.state(scope).await?;
        if let Some(key) = state.keys.published(kid) {
            return Ok(Some(key.clone()));
        }
        if !state.keys.may_reload_for(kid) {
            return Ok(None);
        }
        let state = self.send(scope.tenant().id, Load { unknown_kid: Some(kid) }).await?;
        Ok(state.keys.published(kid).cloned())
    }

    /// The application's JWKS document: this node's copy, else the one
    /// another node put in Redis, else rendered from the state.
    pub async fn jwks(&self, scope: &TenantScope) -> ApiResult<JwksDocument> {
        let load = || async {
            let state = self.state(scope).await?;
            Ok::<_, ApiError>(state.keys.jwks.clone())
        };
        self.deps.documents.get_with(scope.tenant().id, load).await.map_err(|err| (*err).clone())
    }

    /// Moves the application's data to `to` and answers once
    /// it is there.
    pub async fn move_region(&self, scope: &TenantScope, to: Region) -> ApiResult<Region> {
        self.send(scope.tenant().id, MoveRegion { scope: scope.clone(), to }).await
    }

    /// Resumes, through their actors, the region moves whose node stopped
    /// renewing their lease (crashed, or cut off), and at once those this
    /// node's previous process held: now, then every few seconds until the
    /// node stops.
    pub fn resume_stalled_moves(&self) {
        // Weak, like the bus listener: the loop ends with the node.
        let (handles, deps) = (Arc::downgrade(&self.handles), Arc::downgrade(&self.deps));
        actix::spawn(async move {
            loop {
                let (Some(handles), Some(deps)) = (handles.upgrade(), deps.upgrade()) else { return };
                let registry = TenantRegistry { handles, deps };
                let (catalog, predecessor) = (&registry.deps.storage.catalog, registry.deps.moves.predecessor);
                match crate::storage::move_journal::stalled(catalog, predecessor).await {
                    Ok(stalled) => {
                        let ours = |from: &str| Region::new(from).is_ok_and(|r| registry.deps.storage.holds(r));
                        for id in stalled.into_iter().filter(|m| ours(&m.from_region)).map(|m| m.application_id) {
                            if let Err(err) = registry.send(id, ResumeMove).await {
                                tracing::warn!(application_id = %id, error = %err.message, "resuming a region move failed");
                            }
                        }
                    }
                    Err(err) => tracing::warn!(error = %err, "reading the region-move journal failed"),
                }
                crate::region::moves::settle_fenced_chains(&registry.deps.storage, &registry.deps.directory).await;
                link_leftover_audit_rows(&registry.deps.storage, &registry.deps.directory).await;
                drop(registry);
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
        });
    }

    /// Runs `work` as one change of the scope's application, in its actor's
    /// turn; answers once the new state is published (see [`super::change`]).
    pub async fn change<R, F, Fut, E>(&self, scope: &TenantScope, work: F) -> ApiResult<R>
    where
        R: Send + 'static,
        F: FnOnce(InTurn) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + 'static,
        ApiError: From<E>,
    {
        self.send(scope.tenant().id, Change::new(scope.clone(), work)).await
    }
}

/// Links the audit rows a change committed and did not link (its process
/// died right after its commit, or the database failed then), for every
/// application this node serves from the database they are in.
async fn link_leftover_audit_rows(storage: &crate::storage::Storage, directory: &crate::region::router::Directory) {
    for (shard, db) in storage.held() {
        let applications = match crate::audit::link::leftovers(&db).await {
            Ok(applications) => applications,
            Err(err) => {
                tracing::warn!(%shard, error = %err, "reading pending audit rows failed");
                continue;
            }
        };
        for id in applications {
            let serving = directory.serving(id, shard, storage).await;
            if !matches!(serving, crate::region::router::Serving::Here(_)) {
                continue; // moving (its new region links them), or elsewhere
            }
            match crate::audit::link::link_in_turn(&db, id).await {
                Ok(linked) => tracing::warn!(application_id = %id, %shard, linked, "left-over audit rows linked"),
                Err(err) => {
                    tracing::warn!(application_id = %id, %shard, error = %err, "linking left-over audit rows failed")
                }
            }
        }
    }
}
