//! The tenant-wide settings areas keep in a tenant's state (its hooks, its
//! providers, its policies…). Each area declares its own as a
//! [`TenantPart`]; the node lists them once where it is assembled
//! ([`Parts::with`]), and the actor loads every listed part with the state
//! and again after each change. A new setting is a type and a `load` in
//! its area plus that one line: tenancy names no area.
use std::{
    any::{type_name, Any, TypeId},
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Arc,
};

use crate::{error::ApiResult, storage::TenantScope};

/// A setting an area keeps in the tenant's state, read without a database
/// round trip ([`super::state::TenantState::part`]).
pub trait TenantPart: Any + Send + Sync + Sized {
    /// Reads it from the application's shard, as the system.
    fn load(scope: &TenantScope) -> impl Future<Output = ApiResult<Self>>;
}

type Shared = Arc<dyn Any + Send + Sync>;
type Loader = for<'a> fn(&'a TenantScope) -> Pin<Box<dyn Future<Output = ApiResult<Shared>> + 'a>>;

fn load_part<P: TenantPart>(scope: &TenantScope) -> Pin<Box<dyn Future<Output = ApiResult<Shared>> + '_>> {
    Box::pin(async move { Ok(Arc::new(P::load(scope).await?) as Shared) })
}

/// The parts every tenant state of the node holds.
#[derive(Clone, Default)]
pub struct Parts(Vec<(TypeId, Loader)>);

impl Parts {
    pub fn with<P: TenantPart>(mut self) -> Self {
        self.0.push((TypeId::of::<P>(), load_part::<P>));
        self
    }

    pub(super) async fn load(&self, scope: &TenantScope) -> ApiResult<LoadedParts> {
        let mut loaded = HashMap::with_capacity(self.0.len());
        for (id, load) in &self.0 {
            loaded.insert(*id, load(scope).await?);
        }
        Ok(LoadedParts(loaded))
    }
}

/// One tenant's parts, as loaded after its last change.
pub struct LoadedParts(HashMap<TypeId, Shared>);

impl LoadedParts {
    /// Panics for a part the node does not list: a defect of its assembly,
    /// which every test that reaches the part shows.
    pub fn get<P: TenantPart>(&self) -> Arc<P> {
        let part = self
            .0
            .get(&TypeId::of::<P>())
            .unwrap_or_else(|| panic!("{} is not a listed tenant part", type_name::<P>()));
        part.clone().downcast::<P>().unwrap_or_else(|_| unreachable!("a part is kept under its own type"))
    }
}

/// The usual part: an area's rows of the application, in the area's order
/// (`Rows<hook::Model>`, which the area names: `hooks::Hooks`).
pub struct Rows<M>(pub Vec<M>);

impl<M> std::ops::Deref for Rows<M> {
    type Target = [M];

    fn deref(&self) -> &[M] {
        &self.0
    }
}
