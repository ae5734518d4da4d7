//! Per-thread copies of a shared cache's entries, read before it on the
//! request path. A look-up in moka hashes its key with SipHash, reads the
//! clock, and records the read for its eviction policy in a channel that
//! every worker writes to; a hit here is one look-up in a map only this
//! thread touches.
//!
//! It earns its place: without it the authenticated read (secret key,
//! directory entry) serves 0.60–0.65 of healthz's rate, with it 0.72–0.73,
//! side by side (BENCHMARKS.md, "Micro-optimisations measured").
//!
//! A copy is exactly as fresh as the shared entry it was taken from: it
//! keeps that entry's expiry, and every change to the shared cache
//! (an invalidation, a new value put in) advances one generation that
//! retires every thread's copies at once. Changes are rare and reads are
//! not, so retiring all of them costs little.
use std::{
    cell::RefCell,
    collections::HashMap,
    hash::Hash,
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use thread_local::ThreadLocal;

/// Copies one thread keeps of one cache; a thread that reaches it starts
/// over, so a scan of many keys cannot grow a worker without bound.
const PER_THREAD: usize = 1024;

type Copies<K, V> = RefCell<HashMap<K, Copy<V>, foldhash::fast::RandomState>>;

pub struct HotCopies<K: Send, V: Send> {
    generation: AtomicU64,
    threads: ThreadLocal<Copies<K, V>>,
}

struct Copy<V> {
    value: V,
    generation: u64,
    expires: Instant,
}

/// The generation read before the shared cache was: a copy taken under it
/// is retired if the shared cache changed in between.
#[derive(Clone, Copy)]
pub struct Generation(u64);

impl<K: Hash + Eq + Send, V: Clone + Send> HotCopies<K, V> {
    pub fn new() -> Self {
        Self { generation: AtomicU64::new(0), threads: ThreadLocal::new() }
    }

    /// This thread's live copy of `key`, else the generation to take one under.
    pub fn get(&self, key: &K) -> Result<V, Generation> {
        // Acquire: a reader that sees a generation sees the shared cache's
        // change that advanced it.
        let generation = self.generation.load(Ordering::Acquire);
        let live = self.threads.get().and_then(|copies| {
            let copies = copies.borrow();
            let copy = copies.get(key).filter(|c| c.generation == generation && Instant::now() < c.expires)?;
            Some(copy.value.clone())
        });
        live.ok_or(Generation(generation))
    }

    /// Keeps a copy of what the shared cache held for `key` (until `expires`,
    /// that entry's own expiry), taken under `generation`.
    pub fn keep(&self, key: K, value: V, generation: Generation, expires: Instant) {
        let mut copies = self.threads.get_or_default().borrow_mut();
        if copies.len() >= PER_THREAD {
            copies.clear();
        }
        copies.insert(key, Copy { value, generation: generation.0, expires });
    }

    /// Retires every copy on every thread; called after the shared cache changed.
    pub fn retire_all(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl<K: Hash + Eq + Send, V: Clone + Send> Default for HotCopies<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn a_copy_is_read_until_the_shared_cache_changes() {
        let hot = HotCopies::<u32, &str>::new();
        let generation = hot.get(&1).unwrap_err();
        hot.keep(1, "a", generation, later());
        assert_eq!(hot.get(&1).ok(), Some("a"));
        hot.retire_all();
        assert!(hot.get(&1).is_err());
    }

    #[test]
    fn a_copy_taken_across_a_change_is_never_read() {
        // A reader reads the generation, then the shared cache (the old
        // value); the change lands before it keeps its copy.
        let hot = HotCopies::<u32, &str>::new();
        let before = hot.get(&1).unwrap_err();
        hot.retire_all();
        hot.keep(1, "old", before, later());
        assert!(hot.get(&1).is_err());
    }

    #[test]
    fn a_copy_does_not_outlive_its_entry() {
        let hot = HotCopies::<u32, &str>::new();
        let generation = hot.get(&1).unwrap_err();
        hot.keep(1, "a", generation, Instant::now());
        assert!(hot.get(&1).is_err());
    }

    #[test]
    fn each_thread_reads_only_its_own_copies() {
        let hot = HotCopies::<u32, &str>::new();
        let generation = hot.get(&1).unwrap_err();
        hot.keep(1, "a", generation, later());
        std::thread::scope(|s| {
            s.spawn(|| assert!(hot.get(&1).is_err()));
        });
        assert_eq!(hot.get(&1).ok(), Some("a"));
    }

    #[test]
    fn a_thread_keeps_a_bounded_number_of_copies() {
        let hot = HotCopies::<usize, usize>::new();
        for key in 0..PER_THREAD * 3 {
            let generation = hot.get(&key).unwrap_err();
            hot.keep(key, key, generation, later());
        }
        assert!(hot.threads.get().unwrap().borrow().len() <= PER_THREAD);
    }
}
