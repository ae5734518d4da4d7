//! Named points where a crash test can kill the process: with
//! `GATEHOUSE_FAILPOINT=<name>` set, reaching `<name>` aborts at once, as a
//! power cut would. Unset (always, outside those tests) it costs one load.
use std::sync::OnceLock;

pub fn hit(name: &str) {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    if ARMED.get_or_init(|| std::env::var("GATEHOUSE_FAILPOINT").ok()).as_deref() == Some(name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
}
