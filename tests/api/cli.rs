//! The `gatehouse` commands, run as a user would run them.
use std::process::Command;

fn gatehouse(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
    command.env("GATEHOUSE__STORAGE__DATA_DIR", data_dir).env("RUST_LOG", "error");
    command
}

#[test]
fn bootstrap_prints_one_json_object_and_audit_verify_checks_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(dir.path())
        .args([
            "bootstrap",
            "--name",
            "Acme",
            "--environment",
            "production",
            "--region",
            "eu",
            "--allowed-origin",
            "https://acme.example",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    let keys: Vec<&str> = printed.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["account_id", "application_id", "secret_key"]);
    assert!(printed["secret_key"].as_str().unwrap().starts_with("sk_live_"));
    assert!(dir.path().join("eu.db").exists() && dir.path().join("master.key").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("master.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let application = printed["application_id"].as_str().unwrap();
    let verified = gatehouse(dir.path()).args(["audit", "verify", "--application", application]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!((report["ok"].as_bool(), report["rows"].as_i64()), (Some(true), Some(2)));

    let migrated = gatehouse(dir.path()).arg("migrate").output().unwrap();
    assert!(migrated.status.success());
}

#[test]
fn a_tampered_row_makes_audit_verify_fail_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(dir.path()).args(["bootstrap", "--name", "Acme"]).output().unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let application = printed["application_id"].as_str().unwrap();
    let db = dir.path().join("us.db");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use sea_orm::ConnectionTrait;
        let conn = sea_orm::Database::connect(format!("sqlite://{}", db.display())).await.unwrap();
        conn.execute_unprepared("UPDATE audit_events SET data = '{\"name\":\"Evil\"}' WHERE seq = 2").await.unwrap();
    });
    let verified = gatehouse(dir.path()).args(["audit", "verify", "--application", application]).output().unwrap();
    assert!(!verified.status.success());
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(report["first_bad_seq"], 2);
}
