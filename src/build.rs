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
    ("GATEHOUSE_TEST_REQUIRE_OIDC", "gatehouse_test_oidc"),
    ("GATEHOUSE_TEST_REQUIRE_DNS", "gatehouse_test_dns"),
];

fn main() {
    for (variable, cfg) in TEST_PREREQUISITES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo:rerun-if-env-changed={variable}");
        if env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
