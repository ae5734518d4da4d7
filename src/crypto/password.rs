//! Password hashing: argon2id (m = 19456 KiB, t = 2, p = 1), run on blocking
//! threads, never on the async executor. Hashing is admission controlled: at
//! most one hash per core runs at once and a bounded number wait; past that
//! bound a request is refused at once (503 with `Retry-After`) instead of
//! queueing for seconds behind a flood of sign-ins.
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc, OnceLock,
};

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher as _, PasswordVerifier, SaltString},
    Algorithm, Argon2, Params, Version,
};
use tokio::sync::Semaphore;

use crate::error::{ApiError, ApiResult};

fn argon2() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("the argon2 parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

#[derive(Clone)]
pub struct PasswordHasher {
    running: Arc<Semaphore>,
    /// Hashes admitted (running or waiting for a thread).
    admitted: Arc<AtomicUsize>,
    max_admitted: usize,
}

/// Gives the admission slot back however the hash ends.
struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl PasswordHasher {
    /// `concurrency` hashes at once (0: one per core), `queue` more waiting.
    pub fn new(concurrency: usize, queue: usize) -> Self {
        let concurrency = if concurrency == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        } else {
            concurrency
        };
        Self {
            running: Arc::new(Semaphore::new(concurrency)),
            admitted: Arc::default(),
            max_admitted: concurrency + queue,
        }
    }

    /// The PHC string of a new hash of `password`.
    pub async fn hash(&self, password: String) -> ApiResult<String> {
        self.run(move || {
            let salt = SaltString::generate(&mut OsRng);
            argon2().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(ApiError::internal)
        })
        .await?
    }

    /// Whether `password` matches `stored`. Without a stored hash (unknown
    /// user, or a user without a password) a dummy hash is checked instead,
    /// so the answer takes the same time either way.
    pub async fn verify(&self, password: String, stored: Option<String>) -> ApiResult<bool> {
        self.run(move || {
            let stored_is_real = stored.is_some();
            let phc = stored.unwrap_or_else(|| dummy_hash().to_string());
            let matches = PasswordHash::new(&phc)
                .map(|parsed| argon2().verify_password(password.as_bytes(), &parsed).is_ok())
                .unwrap_or(false);
            matches && stored_is_real
        })
        .await
    }

    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
        if self.admitted.fetch_add(1, Ordering::AcqRel) >= self.max_admitted {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            metrics::counter!("password_hash_shed_total").increment(1);
            return Err(ApiError::unavailable("Too many sign-ins at once; try again shortly."));
        }
        let admission = Admission(self.admitted.clone());
        let permit = self.running.clone().acquire_owned().await.map_err(ApiError::internal)?;
        // The slot and the permit go with the hash: a caller that goes away
        // does not free them while its hash still runs.
        tokio::task::spawn_blocking(move || {
            let _held = (admission, permit);
            work()
        })
        .await
        .map_err(ApiError::internal)
    }
}

/// A hash of a random password, computed once, checked against when there
/// is no real hash.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::generate(&mut OsRng);
        argon2().hash_password(salt.as_str().as_bytes(), &salt).expect("hashing a fixed input").to_string()
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
        assert!(hasher.verify("correct horse".into(), Some(phc.clone())).await.unwrap());
        assert!(!hasher.verify("wrong horse".into(), Some(phc)).await.unwrap());
        assert!(!hasher.verify("anything".into(), None).await.unwrap());
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
        assert_eq!(refused.code, crate::error::Code::Unavailable);
        assert!(refused.retry_after.is_some());
        assert!(waited < std::time::Duration::from_millis(5), "refused in {waited:?}");
    }
}
