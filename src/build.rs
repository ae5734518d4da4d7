//! Release builds lay out the functions a serving binary runs first and
//! together in its code: `src/hot_code.order`, one symbol a line, written
//! by `bench/hot_code.sh`. The kernel maps code 64 KiB around each page a
//! thread faults in: spread over the whole `.text`, the 3.7 MB that serve
//! requests kept 15 MiB of mapped files resident after 1,000 sign-ins;
//! packed together, 8.6 MiB (BENCHMARKS.md, "Hot code first").
//!
//! The order is lld's `--symbol-ordering-file`: lld is Rust's linker on
//! x86-64 Linux since 1.90. Other targets and older toolchains link as
//! before; a name the build no longer has is skipped.

use std::{env, process::Command};

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
    println!("cargo:rerun-if-changed=src/hot_code.order");
    for (variable, cfg) in TEST_PREREQUISITES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo:rerun-if-env-changed={variable}");
        if env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
    let release = env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let target = env::var("TARGET").unwrap_or_default();
    if release && target == "x86_64-unknown-linux-gnu" && links_with_lld() {
        let order = format!("{}/src/hot_code.order", env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether rustc is 1.90 or later, whose x86-64 Linux linker is lld.
fn links_with_lld() -> bool {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(output) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&output.stdout);
    let minor = version.split_whitespace().nth(1).and_then(|v| v.split('.').nth(1)).and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}
