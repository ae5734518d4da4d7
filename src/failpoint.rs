//! Named points where a crash test can kill the process: with
//! `GATEHOUSE_FAILPOINT=<name>` set, reaching `<name>` aborts at once, as a
//! power cut would; with `GATEHOUSE_PAUSEPOINT=<name>`, the task stops there
//! for good after saying `pausepoint <name>` on standard error, so the test
//! can send SIGKILL at that moment. Unset (always, outside those tests) they
//! cost one load each.
use std::sync::OnceLock;

pub fn hit(name: &str) {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    static PAUSE: OnceLock<Option<String>> = OnceLock::new();
    if ARMED.get_or_init(|| std::env::var("GATEHOUSE_FAILPOINT").ok()).as_deref() == Some(name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
    if PAUSE.get_or_init(|| std::env::var("GATEHOUSE_PAUSEPOINT").ok()).as_deref() == Some(name) {
        eprintln!("pausepoint {name}");
        loop {
            std::thread::park();
        }
    }
}
