//! Memory stays bounded under sign-ins: the real binary signs a user in 52
//! times (13 rounds of four at once). Under that load its anonymous memory
//! (`RssAnon`: the heap and the hashing threads' argon2 blocks) does not
//! grow from the 12th sign-in to the 52nd, because each hashing thread
//! reuses its block. Once the sign-ins stop, the threads give their blocks
//! back to the kernel and the anonymous memory is under 32 MiB.
//!
//! The bound is on anonymous memory, not on the whole resident set: this
//! test runs the debug binary (100 MiB of code and symbols), whose
//! file-backed pages in memory depend on the page cache and on what else
//! the machine runs (25 MiB alone, 38 MiB beside three busy loops, which
//! took the whole set past 64 MiB). The release binary's whole resident
//! set is what `bench/memory.sh` measures (BENCHMARKS.md).
use std::time::{Duration, Instant};

use serde_json::json;

use crate::binary::Binary;

/// A `kB` line of `/proc/<pid>/status`.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn fifty_two_sign_ins_reuse_the_hashing_memory_and_give_it_back() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("SKIPPED: no /proc to read memory from");
        return;
    }
    let binary = Binary::new(&[
        ("GATEHOUSE__SECURITY__PASSWORD_HASH_CONCURRENCY", "2".into()),
        ("GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE", "0".into()),
        ("GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE", "0".into()),
        ("RUST_LOG", "warn".into()),
    ]);
    let (application, _) = binary.bootstrap();
    let mut child = binary.serve(None).await;
    let base = &binary.base;
    let client = reqwest::Client::new();
    let credentials = json!({"email": "memory@example.com", "password": "correct horse battery"});
    let post =
        |path: &str| client.post(format!("{base}{path}")).header("x-application-id", &application).json(&credentials);
    assert_eq!(post("/v1/auth/sign-up").send().await.unwrap().status(), 201);
    let mut after_twelve = 0;
    for round in 0..13 {
        let answers = futures_util::future::join_all((0..4).map(|_| post("/v1/auth/sign-in").send())).await;
        for answer in answers {
            assert_eq!(answer.unwrap().status(), 200);
        }
        if round == 2 {
            after_twelve = status_kib(child.id(), "RssAnon:");
        }
    }
    let after_all = status_kib(child.id(), "RssAnon:");
    // The hashing threads release their blocks after ten seconds without work.
    let quiet = Instant::now();
    let mut anonymous = status_kib(child.id(), "RssAnon:");
    while anonymous >= 32 * 1024 && quiet.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        anonymous = status_kib(child.id(), "RssAnon:");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(after_all < after_twelve + 4 * 1024, "it grew from {after_twelve} KiB to {after_all} KiB");
    assert!(anonymous < 32 * 1024, "{anonymous} KiB anonymous memory 20 s after 52 sign-ins");
}
