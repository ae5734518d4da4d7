//! The one way to change a tenant: [`Change`], a closure the application's
//! actor runs in its turn (one change of an application at a time on a
//! node), after which the actor publishes the new state and tells the other
//! nodes, and only then answers. A new tenant setting adds no message, no
//! handler and no registry method: its route calls
//! `state.tenants.change(&scope, |turn| …)` with its area's function.
//!
//! Those functions take an [`InTurn`], which only the actor makes: a route
//! cannot call them around it.
use std::{future::Future, pin::Pin, sync::Arc};

use actix::prelude::*;

use super::actor::TenantActor;
use crate::{
    crypto::master_key::MasterKey,
    error::{ApiError, ApiResult},
    region::router::Directory,
    storage::{Storage, TenantScope},
    tokens::keys::SigningKeys,
};

/// What a change runs with: the caller's scope (whose actor and audit rows
/// it names) and what tenant-wide changes need (the master key that seals
/// secrets, the signing keys, the catalog and directory for settings).
pub struct InTurn {
    scope: TenantScope,
    master_key: MasterKey,
    keys: SigningKeys,
    storage: Arc<Storage>,
    directory: Directory,
}

impl InTurn {
    pub fn scope(&self) -> &TenantScope {
        &self.scope
    }

    pub fn master_key(&self) -> &MasterKey {
        &self.master_key
    }

    pub fn keys(&self) -> &SigningKeys {
        &self.keys
    }

    /// The catalog (the application's settings) and the regions.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Where each application is; a settings change publishes its new entry
    /// here before the actor tells the other nodes.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }
}

type Work<R> = Box<dyn FnOnce(InTurn) -> Pin<Box<dyn Future<Output = ApiResult<R>>>> + Send>;

/// One tenant-wide change, sent by [`super::registry::TenantRegistry::change`].
pub(super) struct Change<R> {
    pub scope: TenantScope,
    pub work: Work<R>,
}

impl<R> Change<R> {
    /// `work`'s error is its area's own, answered through its `ApiError` mapping.
    pub fn new<F, Fut, E>(scope: TenantScope, work: F) -> Change<R>
    where
        F: FnOnce(InTurn) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + 'static,
        ApiError: From<E>,
    {
        Change { scope, work: Box::new(move |turn| Box::pin(async move { Ok(work(turn).await?) })) }
    }
}

impl<R: 'static> Message for Change<R> {
    type Result = ApiResult<R>;
}

impl<R: 'static> Handler<Change<R>> for TenantActor {
    type Result = AtomicResponse<Self, ApiResult<R>>;

    fn handle(&mut self, msg: Change<R>, _: &mut Context<Self>) -> Self::Result {
        let deps = &self.deps;
        let turn = InTurn {
            scope: msg.scope,
            master_key: deps.master_key.clone(),
            keys: deps.keys.clone(),
            storage: deps.storage.clone(),
            directory: deps.directory.clone(),
        };
        self.change((msg.work)(turn))
    }
}
