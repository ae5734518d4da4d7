//! Tests wait on conditions, not on time: a test polls for what it needs,
//! every 20 ms, up to [`DEADLINE`]; only an absence is watched for a
//! period ([`stays`]). The deadline is a slow machine's bound,
//! never a figure under test: how fast something happens is measured in
//! `bench/`, not asserted here.
use std::{future::Future, time::Duration};

pub const DEADLINE: Duration = Duration::from_secs(20);
const EVERY: Duration = Duration::from_millis(20);

/// The first `Some` that `probe` answers; panics naming `what` after [`DEADLINE`].
pub async fn until_some<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    some_within(what, DEADLINE, probe).await
}

/// Returns once `check` holds, which must be sooner than `bound`: a bound
/// that tells mechanisms apart, never a speed (half a cache's time to live:
/// only an invalidation could have been that quick).
pub async fn within<F, Fut>(what: &str, bound: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    some_within(what, bound, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await
}

async fn some_within<T, F, Fut>(what: &str, bound: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "waited {bound:?} for {what}");
        tokio::time::sleep(EVERY).await;
    }
}

/// Checks that `check` holds throughout `period`: the one wait on time, for
/// an absence that leaves no trace to poll for (nothing more arrives,
/// nothing is sent). Each use says why no condition could stand in for it.
pub async fn stays<F, Fut>(what: &str, period: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + period;
    loop {
        assert!(check().await, "{what}");
        if tokio::time::Instant::now() >= end {
            return;
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Returns once `check` holds; panics naming `what` after [`DEADLINE`].
pub async fn until<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    within(what, DEADLINE, check).await
}
