//! Memory stays bounded under sign-ins: the real binary signs a user in 52
//! times (13 rounds of four at once), and its anonymous memory (`RssAnon`:
//! the heap and the hashing threads' argon2 memory, not the binary's own
//! mapped pages) stays under 64 MiB, and does not grow from the 12th
//! sign-in to the 52nd.
use serde_json::json;

use crate::binary::Binary;

fn rss_anon_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn fifty_two_sign_ins_keep_the_process_under_64_mib_of_anonymous_memory() {
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
            after_twelve = rss_anon_kib(child.id());
        }
    }
    let after_all = rss_anon_kib(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(after_all < 64 * 1024, "{after_all} KiB of anonymous memory after 52 sign-ins");
    assert!(after_all < after_twelve + 4 * 1024, "it grew from {after_twelve} KiB to {after_all} KiB");
}
