//! Password hashing: argon2id (m = 19456 KiB, t = 2, p = 1) on a small pool
//! of dedicated threads (one per core by default), never on the async
//! executor. The pool's threads run at a lower CPU priority (nice 10), so
//! under a flood of sign-ins the cheap requests on the HTTP workers still get
//! the cores first. Hashing is admission controlled: the pool's threads plus
//! a bounded queue; past that a request is refused at once (503 with
//! `Retry-After`), before it reads the database, instead of queueing for
//! seconds behind a flood of sign-ins. Each hashing thread owns its argon2
//! memory (19 MiB) and reuses it for every hash: allocating it per hash
//! made glibc keep the freed blocks, and the process grew by tens of MiB
//! under sign-ins. A thread that has had no work for ten seconds gives its
//! block's pages back to the kernel, so a quiet service does not hold
//! 19 MiB per core; the next hash faults them in again once.
use std::{
    cell::RefCell,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use argon2::{
    password_hash::{rand_core::OsRng, Output, ParamsString, PasswordHash, PasswordVerifier, SaltString},
    Algorithm, Argon2, Block, Params, Version,
};
use crossbeam_channel::{RecvTimeoutError, Sender};
use tokio::sync::oneshot;

use crate::error::ApiError;

/// Why a password was not hashed or checked.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// The pool and its queue are full: refused before any work.
    #[error("too many passwords are being hashed at once")]
    Busy,
    /// The hashing threads are gone.
    #[error("the password hashing threads have stopped")]
    Stopped,
    #[error("a password hash was lost")]
    Lost,
    #[error("hashing a password failed: {0}")]
    Hash(argon2::password_hash::Error),
}

impl From<PasswordError> for ApiError {
    fn from(err: PasswordError) -> Self {
        match err {
            PasswordError::Busy => ApiError::unavailable("Too many sign-ins at once; try again shortly."),
            PasswordError::Stopped => ApiError::unavailable("Password hashing is unavailable."),
            PasswordError::Lost | PasswordError::Hash(_) => ApiError::internal_error(&err),
        }
    }
}

/// CPU priority of the hashing threads: below the HTTP workers' 0.
const HASHING_NICE: i32 = 10;

/// How long a hashing thread waits for work before it releases its memory
/// (jemalloc's default decay of unused pages is also ten seconds). Sign-ins
/// closer together keep reusing the block; faulting it in again costs the
/// next hash about 12 ms once on the 2-core benchmark machine.
const RELEASE_WHEN_IDLE_FOR: Duration = Duration::from_secs(10);

fn argon2() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("the argon2 parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

thread_local! {
    /// This thread's argon2 memory, grown once to the parameters' size.
    static MEMORY: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

/// The raw argon2id hash of `password` with `salt` under `argon`, computed
/// in this thread's own memory.
fn hash_raw(argon: &Argon2<'_>, password: &[u8], salt: &[u8], out: &mut [u8]) -> Result<(), argon2::Error> {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let blocks = argon.params().block_count();
        if memory.len() < blocks {
            let missing = blocks - memory.len();
            memory.reserve_exact(missing);
            memory.resize(blocks, Block::default());
        }
        argon.hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])
    })
}

/// Gives this thread's argon2 pages back to the kernel, keeping the
/// allocation: the pages read as zeros until a hash writes them again.
/// After 1,000 sign-ins the process holds the two threads' blocks (38 MiB);
/// ten seconds later it is back near its idle size (BENCHMARKS.md,
/// "Micro-optimisations measured"). Freeing the block instead would not
/// return it: glibc keeps freed blocks of this size in its heap.
fn release_memory() {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let bytes = std::mem::size_of_val(&memory[..]);
        #[cfg(target_os = "linux")]
        // SAFETY: the range is the vector's initialised blocks, which this
        // thread exclusively borrows; MADV_DONTNEED on private anonymous
        // memory leaves it mapped and zero-filled, and all zeros is a valid
        // `Block`. Argon2 writes every block before it reads it, so the
        // contents are not relied on.
        unsafe {
            crate::memory::advise(memory.as_mut_ptr() as usize, bytes, libc::MADV_DONTNEED);
        }
    });
}

/// The PHC string of `password` with a new random salt.
fn hash_phc(password: &[u8]) -> Result<String, argon2::password_hash::Error> {
    let argon = argon2();
    let salt = SaltString::generate(&mut OsRng);
    let mut salt_bytes = [0u8; 64];
    let raw_salt = salt.decode_b64(&mut salt_bytes)?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    hash_raw(&argon, password, raw_salt, &mut out)?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon.params())?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out)?),
    };
    Ok(phc.to_string())
}

/// Whether a parsed hash has this module's algorithm, version and costs.
fn is_ours(parsed: &PasswordHash<'_>, ours: &Argon2<'_>) -> bool {
    let ours = ours.params();
    Algorithm::try_from(parsed.algorithm) == Ok(Algorithm::Argon2id)
        && parsed.version == Some(Version::V0x13.into())
        && Params::try_from(parsed).is_ok_and(|params| {
            (params.m_cost(), params.t_cost(), params.p_cost()) == (ours.m_cost(), ours.t_cost(), ours.p_cost())
        })
}

#[cfg(test)]
fn uses_reused_memory(stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|parsed| is_ours(&parsed, &argon2()))
}

/// Whether `stored` is not an argon2id hash with this module's costs (an
/// imported hash, or older costs): a sign-in that proves the password
/// replaces it.
pub fn needs_rehash(stored: &str) -> bool {
    !PasswordHash::new(stored).is_ok_and(|parsed| is_ours(&parsed, &argon2()))
}

/// Whether `password` matches `stored`. Hashes made with this module's
/// parameters are checked in the thread's own memory; any other (an
/// imported user's) in its own scheme ([`super::foreign_hashes`]).
fn matches(password: &[u8], stored: &str) -> bool {
    let ours = argon2();
    let Some(parsed) = PasswordHash::new(stored).ok().filter(|parsed| is_ours(parsed, &ours)) else {
        return super::foreign_hashes::matches(password, stored);
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return ours.verify_password(password, &parsed).is_ok();
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(raw_salt) = salt.decode_b64(&mut salt_bytes) else { return false };
    let mut out = vec![0u8; expected.len()];
    hash_raw(&ours, password, raw_salt, &mut out).is_ok() && super::constant_time_eq(&out, expected.as_bytes())
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Clone)]
pub struct PasswordHasher {
    jobs: Sender<Job>,
    /// Hashes admitted (running or queued).
    admitted: Arc<AtomicUsize>,
    max_admitted: usize,
}

/// A place in the hashing queue, held until the hash is done (even if the
/// request that asked for it has gone away).
pub struct Admission {
    admitted: Arc<AtomicUsize>,
    jobs: Sender<Job>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordHasher {
    /// `threads` hashes at once (0: one per core), `queue` more waiting.
    pub fn new(threads: usize, queue: usize) -> Self {
        let threads =
            if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads };
        let (jobs, receiver) = crossbeam_channel::unbounded::<Job>();
        for index in 0..threads {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("password-hash-{index}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = match receiver.recv_timeout(RELEASE_WHEN_IDLE_FOR) {
                            Err(RecvTimeoutError::Timeout) => {
                                release_memory();
                                receiver.recv().ok()
                            }
                            received => received.ok(),
                        };
                        // None: every sender is gone.
                        let Some(job) = job else { return };
                        job();
                    }
                })
                .expect("a hashing thread starts");
        }
        Self { jobs, admitted: Arc::default(), max_admitted: threads + queue }
    }

    /// A place in the queue, or 503 at once when it is full.
    pub fn admit(&self) -> Result<Admission, PasswordError> {
        if self.admitted.fetch_add(1, Ordering::AcqRel) >= self.max_admitted {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            metrics::counter!("gatehouse_password_hash_shed_total").increment(1);
            return Err(PasswordError::Busy);
        }
        Ok(Admission { admitted: self.admitted.clone(), jobs: self.jobs.clone() })
    }

    /// The PHC string of a new hash of `password`.
    pub async fn hash(&self, password: String) -> Result<String, PasswordError> {
        self.admit()?.hash(password).await
    }
}

impl Admission {
    /// The PHC string of a new hash of `password`.
    pub async fn hash(self, password: String) -> Result<String, PasswordError> {
        self.run(move || hash_phc(password.as_bytes()).map_err(PasswordError::Hash)).await?
    }

    /// Whether `password` matches `stored`, and when it matches a hash that
    /// [`needs_rehash`], the new argon2id hash of the password (made in the
    /// same turn). Without a stored hash (unknown user, or a user without a
    /// password) a dummy hash is checked instead, so the answer takes the
    /// same time either way.
    pub async fn verify_rehashing(
        self,
        password: String,
        stored: Option<String>,
    ) -> Result<(bool, Option<String>), PasswordError> {
        self.run(move || {
            let Some(stored) = stored else {
                matches(password.as_bytes(), dummy_hash());
                return Ok((false, None));
            };
            if !matches(password.as_bytes(), &stored) {
                return Ok((false, None));
            }
            let rehashed = match needs_rehash(&stored) {
                true => Some(hash_phc(password.as_bytes()).map_err(PasswordError::Hash)?),
                false => None,
            };
            Ok((true, rehashed))
        })
        .await?
    }

    async fn run<T: Send + 'static>(self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, PasswordError> {
        let (reply, answer) = oneshot::channel();
        let jobs = self.jobs.clone();
        // The admission goes with the job: it is released when the hash is
        // done, not when the caller stops waiting.
        let job: Job = Box::new(move || {
            let _held = self;
            let _ = reply.send(work());
        });
        jobs.send(job).map_err(|_| PasswordError::Stopped)?;
        answer.await.map_err(|_| PasswordError::Lost)
    }
}

/// Lowers the calling thread's CPU priority (on Linux, nice is per thread).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its arguments; the thread id is ours.
    unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, HASHING_NICE);
    }
}

/// What hashing costs on this machine.
#[derive(serde::Serialize)]
pub struct Measured {
    /// One hash, one thread at a time (median of the rounds).
    pub hash_ms: f64,
    pub cores: usize,
    /// Hashes per second with one thread per core, measured.
    pub parallel_per_second: f64,
    /// `cores * 1000 / hash_ms`: the ceiling if cores did not slow each other.
    pub ceiling_per_second: f64,
}

/// Times `rounds` hashes on one thread, then `rounds` on each core at once
/// (timed from when every thread has made its first hash, as the server's
/// hashing threads have: its memory block allocated and faulted in).
pub fn measure(rounds: u32) -> Measured {
    let one = || {
        let started = std::time::Instant::now();
        let _ = hash_phc(b"measure the cost of one hash");
        started.elapsed().as_secs_f64() * 1000.0
    };
    let mut times: Vec<f64> = (0..rounds).map(|_| one()).collect();
    times.sort_by(f64::total_cmp);
    let hash_ms = times[times.len() / 2];
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let warm = std::sync::Barrier::new(cores + 1);
    let started = std::thread::scope(|scope| {
        for _ in 0..cores {
            scope.spawn(|| {
                one();
                warm.wait();
                for _ in 0..rounds {
                    one();
                }
            });
        }
        warm.wait();
        std::time::Instant::now()
    });
    let parallel_per_second = f64::from(rounds) * cores as f64 / started.elapsed().as_secs_f64();
    Measured { hash_ms, cores, parallel_per_second, ceiling_per_second: cores as f64 * 1000.0 / hash_ms }
}

/// A hash of a random password, computed once, checked against when there
/// is no real hash.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let random = SaltString::generate(&mut OsRng);
        hash_phc(random.as_str().as_bytes()).expect("hashing a fixed input")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn a_hash_verifies_its_password_only() {
        let hasher = PasswordHasher::new(1, 1);
        let phc = hasher.hash("correct horse".into()).await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(
            hasher.admit().unwrap().verify_rehashing("correct horse".into(), Some(phc.clone())).await.unwrap()
                == (true, None)
        );
        assert!(!hasher.admit().unwrap().verify_rehashing("wrong horse".into(), Some(phc)).await.unwrap().0);
        assert!(!hasher.admit().unwrap().verify_rehashing("anything".into(), None).await.unwrap().0);
    }

    #[test]
    fn hashes_in_reused_memory_are_the_crates_own() {
        use argon2::password_hash::PasswordHasher as _;
        // A hash the crate made the ordinary way verifies here, and ours with the crate.
        let salt = SaltString::generate(&mut OsRng);
        let theirs = argon2().hash_password(b"correct horse", &salt).unwrap().to_string();
        assert!(matches(b"correct horse", &theirs));
        assert!(!matches(b"wrong horse", &theirs));
        let ours = hash_phc(b"correct horse").unwrap();
        assert!(argon2().verify_password(b"correct horse", &PasswordHash::new(&ours).unwrap()).is_ok());
        // The reused memory is what checks our own hashes.
        assert!(uses_reused_memory(&ours) && uses_reused_memory(&theirs));
        // Other parameters take the general path.
        let cheap = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(8, 1, 1, None).unwrap());
        let other = cheap.hash_password(b"pw", &salt).unwrap().to_string();
        assert!(matches(b"pw", &other) && !matches(b"px", &other));
        assert!(!matches(b"pw", "not a hash"));
    }

    #[test]
    fn memory_given_back_to_the_kernel_hashes_as_before() {
        let stored = hash_phc(b"correct horse").unwrap();
        release_memory();
        assert!(matches(b"correct horse", &stored));
        release_memory();
        release_memory();
        assert!(!matches(b"wrong horse", &stored));
    }

    #[actix_web::test]
    async fn hashes_past_the_queue_bound_are_refused_at_once() {
        let hasher = PasswordHasher::new(1, 0);
        let first = hasher.hash("one".into());
        let second = async {
            tokio::task::yield_now().await;
            let started = std::time::Instant::now();
            let refused = hasher.hash("two".into()).await.unwrap_err();
            (refused, started.elapsed())
        };
        let (first, (refused, waited)) = tokio::join!(first, second);
        assert!(first.is_ok());
        assert!(matches!(refused, PasswordError::Busy), "{refused:?}");
        let answer = crate::error::ApiError::from(refused);
        assert_eq!(answer.code, crate::error::Code::Unavailable);
        assert!(answer.retry_after.is_some());
        assert!(waited < std::time::Duration::from_millis(5), "refused in {waited:?}");
    }
}
