//! Background work that runs once per shard: webhook delivery and mail
//! workers start on every open shard, and on each shard opened later
//! ([`super::Storage::refresh_shards`]), so an added shard is served with
//! no restart.
use std::{collections::BTreeSet, future::Future, sync::Arc};

use tokio::task::JoinHandle;

use super::{Db, Storage};
use crate::{region::Shard, shutdown::Shutdown};

/// Spawns `work` for every shard of the held regions, now and as shards
/// open, until `shutdown`; the handle resolves once every run has ended.
pub fn spawn<F, Fut>(storage: Arc<Storage>, shutdown: Shutdown, work: F) -> JoinHandle<()>
where
    F: Fn(Shard, Db) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    actix::spawn(async move {
        let mut opened = storage.watch_opened();
        let mut started = BTreeSet::new();
        let mut runs = Vec::new();
        loop {
            for (shard, db) in storage.held() {
                if started.insert(shard) {
                    runs.push(actix::spawn(work(shard, db)));
                }
            }
            tokio::select! {
                changed = opened.changed() => if changed.is_err() { break },
                () = shutdown.signalled() => break,
            }
        }
        for run in runs {
            let _ = run.await;
        }
    })
}
