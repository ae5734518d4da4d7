//! The node's stop signal. The HTTP server drains first (it stops
//! accepting on SIGTERM and finishes what it holds); then this signal tells
//! the background workers to stop claiming work, finish what they hold and
//! record it, within `server.shutdown_timeout_seconds`.
use tokio::sync::watch;

#[derive(Clone)]
pub struct Shutdown(watch::Sender<bool>);

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown(watch::Sender::new(false))
    }
}

impl Shutdown {
    pub fn signal(&self) {
        self.0.send_replace(true);
    }

    pub fn is_signalled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the signal is given (at once if it was).
    pub async fn signalled(&self) {
        let mut receiver = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close under us.
        let _ = receiver.wait_for(|stopped| *stopped).await;
    }
}
