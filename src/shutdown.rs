//! The node's stop signal. The HTTP server drains first (it stops
//! accepting on SIGTERM and finishes what it holds, closing each kept-alive
//! connection after its current answer); then this signal tells the
//! background workers to stop claiming work, finish what they hold and
//! record it, within `server.shutdown_timeout_seconds`.
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use tokio::sync::watch;

#[derive(Clone)]
pub struct Shutdown {
    stopped: watch::Sender<bool>,
    draining: Arc<AtomicBool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown { stopped: watch::Sender::new(false), draining: Arc::default() }
    }
}

impl Shutdown {
    /// The server has been told to stop: answers in flight end their connections.
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    pub fn signal(&self) {
        self.stopped.send_replace(true);
    }

    pub fn is_signalled(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Resolves once the signal is given (at once if it was).
    pub async fn signalled(&self) {
        let mut receiver = self.stopped.subscribe();
        // The sender lives in `self`, so the channel cannot close under us.
        let _ = receiver.wait_for(|stopped| *stopped).await;
    }
}
