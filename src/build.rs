//! Test prerequisites as cfgs (see `TEST_PREREQUISITES`).
use std::env;

/// What some tests need beyond a Rust toolchain, each named by the variable
/// that says it is there (`bash .ci/run` sets them all). A build without
/// one marks its tests ignored with the reason, so `cargo test` lists in its
/// summary what it did not run and says how to run it.
const TEST_PREREQUISITES: &[(&str, &str)] = &[
    ("GATEHOUSE_TEST_REDIS_URL", "gatehouse_test_redis"),
    ("GATEHOUSE_TEST_POSTGRES_URL", "gatehouse_test_postgres"),
    ("GATEHOUSE_TEST_REQUIRE_SMTP", "gatehouse_test_smtp"),
    ("GATEHOUSE_TEST_REQUIRE_TOTP", "gatehouse_test_totp"),
    ("GATEHOUSE_TEST_REQUIRE_HASHES", "gatehouse_test_hashes"),
    ("GATEHOUSE_TEST_REQUIRE_OIDC", "gatehouse_test_oidc"),
    ("GATEHOUSE_TEST_REQUIRE_DNS", "gatehouse_test_dns"),
];

fn main() {
    emit_commit();
    for (variable, cfg) in TEST_PREREQUISITES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo:rerun-if-env-changed={variable}");
        if env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}

/// `GATEHOUSE_COMMIT` for `gatehouse --version` and the
/// `gatehouse_build_info` metric: the variable when set (a container build
/// has no `.git`), else `git rev-parse`, else `unknown`.
fn emit_commit() {
    println!("cargo:rerun-if-env-changed=GATEHOUSE_COMMIT");
    println!("cargo:rerun-if-changed=.git/HEAD");
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        if let Some(reference) = head.strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{}", reference.trim());
        }
    }
    let commit = env::var("GATEHOUSE_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=GATEHOUSE_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
}
