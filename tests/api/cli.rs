//! The `gatehouse` commands, run as a user would run them.
use crate::binary::{Api, Binary, UserWriter};

/// The binary on a fresh data directory and port, logging errors only.
fn binary() -> Binary {
    Binary::new(&[("RUST_LOG", "error".into())])
}

#[test]
fn bootstrap_prints_one_json_object_and_audit_verify_checks_the_chain() {
    let binary = binary();
    let out = binary
        .command(&[
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
    assert!(binary.dir.path().join("eu.db").exists() && binary.dir.path().join("master.key").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(binary.dir.path().join("master.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let application = printed["application_id"].as_str().unwrap();
    let verified = binary.command(&["audit", "verify", "--application", application]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!((report["ok"].as_bool(), report["rows"].as_i64()), (Some(true), Some(2)));

    let migrated = binary.command(&["migrate"]).output().unwrap();
    assert!(migrated.status.success());
}

#[test]
fn a_tampered_row_makes_audit_verify_fail_naming_it() {
    let binary = binary();
    let out = binary.command(&["bootstrap", "--name", "Acme"]).output().unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let application = printed["application_id"].as_str().unwrap();
    let db = binary.dir.path().join("us.db");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use sea_orm::ConnectionTrait;
        let conn = sea_orm::Database::connect(format!("sqlite://{}", db.display())).await.unwrap();
        conn.execute_unprepared("UPDATE audit_events SET data = '{\"name\":\"Evil\"}' WHERE seq = 2").await.unwrap();
    });
    let verified = binary.command(&["audit", "verify", "--application", application]).output().unwrap();
    assert!(!verified.status.success());
    let report: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(report["first_bad_seq"], 2);
}

/// Sends one HTTP/1.1 request over a plain socket; answers the status line.
fn http_get(port: u16, path: &str, headers: &[(&str, &str)]) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_owned)
}

fn wait_until_serving(port: u16) {
    for _ in 0..300 {
        if http_get(port, "/healthz", &[]).is_some_and(|s| s.contains("200")) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("gatehouse serve did not start");
}

#[test]
fn serve_on_an_empty_catalog_prints_a_working_development_key_once() {
    use std::io::Read;
    let binary = binary();
    let port = binary.port();
    let start = || binary.command(&["serve"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut first = start();
    wait_until_serving(port);
    let mut printed = String::new();
    let mut stdout = first.stdout.take().unwrap();
    let mut buffer = [0u8; 4096];
    while !printed.contains("(The secret key is shown this once.)") {
        let n = stdout.read(&mut buffer).unwrap();
        assert!(n > 0, "serve printed: {printed}");
        printed.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    let value =
        |label: &str| printed.lines().find_map(|l| l.trim().strip_prefix(label)).map(|v| v.trim().to_string()).unwrap();
    let (application_id, secret_key) = (value("application_id:"), value("secret_key:"));
    let status = http_get(
        port,
        "/v1/api-keys",
        &[("Authorization", &format!("Bearer {secret_key}")), ("x-application-id", &application_id)],
    );
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(status.unwrap().contains("200"));

    let mut second = start();
    wait_until_serving(port);
    second.kill().unwrap();
    let mut again = String::new();
    second.stdout.take().unwrap().read_to_string(&mut again).unwrap();
    second.wait().unwrap();
    assert!(!again.contains("secret_key"), "a second start prints no key: {again}");
}

/// `gatehouse serve` with `env` until it logs that it listens, then stopped:
/// what it wrote on stdout and on stderr (logs at `info`).
fn serve_once(binary: &Binary, env: &[(String, String)]) -> (String, String) {
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let mut child = binary
        .command(&["serve"])
        .env("RUST_LOG", "info")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    // The first-start decision is made, and printed, before this line.
    let deadline = std::time::Instant::now() + crate::wait::DEADLINE;
    while !std::fs::read_to_string(&err).unwrap().contains("gatehouse listening") {
        assert!(std::time::Instant::now() < deadline, "gatehouse serve did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    (std::fs::read_to_string(&out).unwrap(), std::fs::read_to_string(&err).unwrap())
}

/// The embedded default keeps its first-start key unless the setting says
/// `never`: then nothing is created, and one log line names the command.
#[test]
fn serve_on_an_empty_embedded_catalog_creates_nothing_when_the_setting_says_never() {
    let binary = binary();
    let never = [("GATEHOUSE__BOOTSTRAP__FIRST_START_APPLICATION".to_string(), "never".to_string())];
    let (stdout, stderr) = serve_once(&binary, &never);
    assert!(!stdout.contains("secret_key"), "{stdout}");
    assert_eq!(stderr.lines().filter(|l| l.contains("`gatehouse bootstrap`")).count(), 1, "{stderr}");
    let (stdout, _) = serve_once(&binary, &[]);
    assert!(stdout.contains("secret_key:"), "auto on SQLite creates it: {stdout}");
}

/// A deployment on PostgreSQL prints no admin key on its first start (a
/// container's logs would keep it): no application is created, one log line
/// says `gatehouse bootstrap` is the way, and no start logs PostgreSQL's
/// "already exists" notices (sea-orm's bookkeeping table, created `IF NOT
/// EXISTS` before each of its steps).
#[test]
#[cfg_attr(
    not(gatehouse_test_postgres),
    ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
)]
fn serve_on_an_empty_postgresql_catalog_creates_nothing_and_names_bootstrap() {
    use sea_orm::{ConnectionTrait, Database};
    if std::env::var("GATEHOUSE_TEST_POSTGRES_URL").is_err() {
        eprintln!("skipped: GATEHOUSE_TEST_POSTGRES_URL is not set");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let settings = runtime.block_on(crate::helpers::TestStorage::new()).settings.clone();
    let catalog_url = settings.storage.catalog_url.clone().unwrap();
    let env = crate::binary::postgres_env(&settings);
    let binary = binary();
    let applications = || {
        runtime.block_on(async {
            let catalog = Database::connect(&catalog_url).await.unwrap();
            let row = catalog.query_one(sea_orm::Statement::from_string(
                catalog.get_database_backend(),
                "SELECT count(*) AS n FROM applications",
            ));
            let n: i64 = row.await.unwrap().unwrap().try_get("", "n").unwrap();
            catalog.close().await.unwrap();
            n
        })
    };

    let (stdout, stderr) = serve_once(&binary, &env);
    assert!(
        !stdout.contains("secret_key") && !stderr.contains("sk_test_") && !stderr.contains("sk_live_"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(applications(), 0);
    assert_eq!(stderr.lines().filter(|l| l.contains("`gatehouse bootstrap`")).count(), 1, "{stderr}");
    assert!(!stderr.contains("already exists"), "{stderr}");
    let (stdout, stderr) = serve_once(&binary, &env);
    assert!(!stdout.contains("secret_key"), "{stdout}");
    assert!(!stderr.contains("already exists"), "a start with every table in place: {stderr}");
    assert_eq!(applications(), 0);

    let booted = binary.command(&["bootstrap"]).args(["--name", "Acme"]).envs(env.clone()).output().unwrap();
    assert!(booted.status.success(), "{}", String::from_utf8_lossy(&booted.stderr));
    let (_, stderr) = serve_once(&binary, &env);
    assert!(!stderr.contains("gatehouse bootstrap") && !stderr.contains("already exists"), "{stderr}");
    assert_eq!(applications(), 1);

    // Pools fit the server every node shares (its max_connections read at
    // start), or start-up refuses and says why.
    let migrate = |more: &[(&str, &str)]| {
        let out = binary.command(&["migrate"]).envs(env.clone()).envs(more.iter().copied()).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (fits, stderr) = migrate(&[("GATEHOUSE__DEPLOYMENT__NODES", "4")]);
    assert!(fits, "four nodes share the server: {stderr}");
    let (fits, stderr) = migrate(&[("GATEHOUSE__DEPLOYMENT__NODES", "1000")]);
    assert!(!fits && stderr.contains("cannot each have 2 connections"), "{stderr}");
    let (fits, stderr) =
        migrate(&[("GATEHOUSE__DEPLOYMENT__NODES", "8"), ("GATEHOUSE__STORAGE__MAX_CONNECTIONS", "16")]);
    assert!(!fits && stderr.contains("does not fit"), "{stderr}");
}

#[test]
fn measure_hashing_reports_the_cost_of_a_password_hash() {
    let binary = binary();
    let out = binary.command(&["measure-hashing", "--rounds", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    for field in ["hash_ms", "parallel_per_second", "ceiling_per_second"] {
        assert!(printed[field].as_f64().is_some_and(|v| v > 0.0), "{field}: {printed}");
    }
    assert!(printed["cores"].as_u64().is_some_and(|c| c >= 1));
}

#[test]
fn json_logs_are_one_object_per_line_with_the_request_id() {
    use std::io::{BufRead, BufReader};
    let binary = binary();
    let port = binary.port();
    let mut server = binary
        .command(&["serve"])
        .env("GATEHOUSE__LOG__FORMAT", "json")
        .env("RUST_LOG", "info,gatehouse::http::request_id=debug")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_serving(port);
    http_get(port, "/v1/api-keys", &[("x-request-id", "log-line-test")]).unwrap();
    let lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let mut found = None;
    for line in lines {
        let line = line.unwrap();
        let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if event["span"]["request_id"] == "log-line-test" {
            found = Some(event);
            break;
        }
    }
    server.kill().unwrap();
    server.wait().unwrap();
    let event = found.expect("a line carries the request id");
    assert_eq!(event["message"], "answered");
    assert_eq!(event["status"], 401);
}

#[test]
fn a_pool_of_one_connection_is_refused_at_start_with_a_reason() {
    let binary = binary();
    let out = binary.command(&[]).env("GATEHOUSE__STORAGE__MAX_CONNECTIONS", "1").arg("migrate").output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("storage.max_connections is 1: it must be at least 2"), "{stderr}");
}

#[test]
fn users_import_works_a_file_in_the_command_and_exits_1_when_a_line_is_refused() {
    let binary = binary();
    let out = binary.command(&["bootstrap", "--name", "Acme"]).output().unwrap();
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let application = printed["application_id"].as_str().unwrap();
    // 10,001 lines: two imports (at most 10,000 lines each).
    let mut lines: String =
        (0..10_000).map(|i| format!("{{\"external_id\":\"u{i}\",\"email\":\"user{i}@example.com\"}}\n")).collect();
    let file = binary.dir.path().join("users.ndjson");
    std::fs::write(&file, &lines).unwrap();
    let imported =
        binary.command(&["users", "import", "--application", application, file.to_str().unwrap()]).output().unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let ended: serde_json::Value = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!((ended["status"].as_str(), ended["created"].as_i64()), (Some("completed"), Some(10_000)));

    lines.push_str("{\"external_id\":\"bad\",\"email\":\"not an email\"}\n");
    std::fs::write(&file, &lines).unwrap();
    let again =
        binary.command(&["users", "import", "--application", application, file.to_str().unwrap()]).output().unwrap();
    assert_eq!(again.status.code(), Some(1), "{}", String::from_utf8_lossy(&again.stderr));
    let jobs: Vec<serde_json::Value> = again
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(jobs.len(), 2);
    assert_eq!((jobs[0]["skipped"].as_i64(), jobs[1]["failed"].as_i64()), (Some(10_000), Some(1)));
}

/// Backup under write load, restore into a fresh data directory: the chain
/// verifies, the users written before the backup began are there, and an
/// access token issued before the backup still works on the restored node.
#[actix_web::test]
async fn a_backup_taken_under_writes_restores_into_a_fresh_directory_that_serves() {
    // The restored node answers at the same public URL (its tokens' issuer), on a port of its own.
    let public_url = ("GATEHOUSE__SERVER__PUBLIC_URL", "https://id.example.test".to_string());
    let mut settings = vec![
        ("RUST_LOG", "error".to_string()),
        ("GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND", "0".into()),
        public_url.clone(),
    ];
    settings.extend(crate::binary::restorable_webhooks());
    let binary = Binary::new(&settings);
    let (app, key) = binary.bootstrap();
    let server = binary.serve(None).await;
    let client = reqwest::Client::new();
    let base = binary.base.clone();
    let post = |path: &str, body: serde_json::Value, bearer: Option<&str>| {
        let mut request = client.post(format!("{base}{path}")).header("x-application-id", &app).json(&body);
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        request.send()
    };
    let password = "correct horse battery";
    // A webhook whose messages fail until it points at a receiver, after the restore.
    let hook = post(
        "/v1/webhooks",
        serde_json::json!({"url": "http://127.0.0.1:1/hook", "event_types": ["user.created"]}),
        Some(&key),
    );
    let hook: serde_json::Value = hook.await.unwrap().json().await.unwrap();
    let (hook_id, hook_secret) = (hook["data"]["id"].as_str().unwrap(), hook["data"]["secret"].as_str().unwrap());
    let made = post("/v1/users", serde_json::json!({"email": "ada@example.com", "password": password}), Some(&key));
    assert_eq!(made.await.unwrap().status(), 201);
    let signed_in =
        post("/v1/auth/sign-in", serde_json::json!({"email": "ada@example.com", "password": password}), None);
    let signed_in: serde_json::Value = signed_in.await.unwrap().json().await.unwrap();
    let token = signed_in["data"]["access_token"].as_str().unwrap().to_string();

    // Writes go on through the backup.
    let writer = UserWriter::start(&base, &app, &key);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let target = binary.dir.path().join("backup");
    let backed_up = binary.command(&["backup", "--to", target.to_str().unwrap()]).output().unwrap();
    assert!(backed_up.status.success(), "{}", String::from_utf8_lossy(&backed_up.stderr));
    assert!(writer.stop().await > 0, "writes ran beside the backup");
    drop(server);
    let manifest: serde_json::Value = serde_json::from_slice(&backed_up.stdout).unwrap();
    assert_eq!(manifest["databases"][0], "catalog.db", "the catalog first: {manifest}");
    assert_eq!(manifest["master_key_file"], true);

    // A fresh node on the restored files.
    let mut settings = vec![("RUST_LOG", "error".to_string()), public_url];
    settings.extend(crate::binary::restorable_webhooks());
    let restored = Binary::new(&settings);
    let done = restored.command(&["restore", "--from", target.to_str().unwrap()]).output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let again = restored.command(&["restore", "--from", target.to_str().unwrap()]).output().unwrap();
    assert!(!again.status.success(), "a data directory in use is refused");
    let verified = restored.command(&["audit", "verify", "--application", &app]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let _serving = restored.serve(None).await;
    let me = client
        .get(format!("{}/v1/auth/me", restored.base))
        .bearer_auth(&token)
        .header("x-application-id", &app)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200, "a token issued before the backup verifies on the restored node");
    let found = client
        .get(format!("{}/v1/users?email=ada@example.com", restored.base))
        .bearer_auth(&key)
        .header("x-application-id", &app)
        .send()
        .await
        .unwrap();
    let found: serde_json::Value = found.json().await.unwrap();
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "{found}");
    // The message pending at the backup is delivered, signed with the webhook's secret.
    let receiver = crate::webhooks::start_receiver(vec![]).await;
    let pointed = client
        .patch(format!("{}/v1/webhooks/{hook_id}", restored.base))
        .bearer_auth(&key)
        .header("x-application-id", &app)
        .json(&serde_json::json!({"url": receiver.url}))
        .send()
        .await
        .unwrap();
    assert_eq!(pointed.status(), 200);
    let delivered = receiver.wait_for_body("ada@example.com").await;
    assert!(crate::webhooks::verifies(hook_secret, &delivered), "signed with the webhook's secret");
}

/// A master-key rotation: a new key made current, the server started with
/// both, `master-key rotate` killed after its first batch under writes and
/// run again; then the server starts with the new key alone and everything
/// sealed before opens (signing keys, personal-data keys, webhook secrets),
/// and keyed hashes still match (an address's key found by its HMAC).
#[actix_web::test]
async fn a_master_key_rotation_killed_once_under_writes_resumes_and_then_needs_no_old_key() {
    // On PostgreSQL when the tests run there; the key files stay in the data directory.
    let storage = crate::helpers::TestStorage::new().await;
    let mut binary = Binary::new(&[
        ("RUST_LOG", "error".into()),
        ("GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND", "0".into()),
        ("GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS", "true".into()),
    ]);
    for (name, value) in crate::binary::postgres_env(&storage.settings) {
        binary.add_env(&name, value);
    }
    let (app, key) = binary.bootstrap();
    let api = Api::new(&app);
    let password = "correct horse battery";
    let server = binary.serve(None).await;
    for n in 0..600 {
        let body = serde_json::json!({"email": format!("before{n}@example.com")});
        assert_eq!(api.call(&binary.base, reqwest::Method::POST, "/v1/users", Some(body), Some(&key)).await.0, 201);
    }
    let ada = serde_json::json!({"email": "ada@example.com", "password": password});
    assert_eq!(api.call(&binary.base, reqwest::Method::POST, "/v1/users", Some(ada.clone()), Some(&key)).await.0, 201);
    let (_, signed_in) =
        api.call(&binary.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada.clone()), None).await;
    let token = signed_in["data"]["access_token"].as_str().unwrap().to_string();
    let ghost = serde_json::json!({"email": "ghost@example.com", "password": password});
    assert_eq!(api.call(&binary.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ghost), None).await.0, 401);
    let hook = serde_json::json!({"url": "http://127.0.0.1:1/hook"});
    assert_eq!(api.call(&binary.base, reqwest::Method::POST, "/v1/webhooks", Some(hook), Some(&key)).await.0, 201);
    drop(server);
    // A finished import: its sealed lines are emptied, which is no value to seal again.
    let lines = binary.dir.path().join("users.ndjson");
    std::fs::write(&lines, "{\"external_id\": \"x-1\", \"email\": \"imported@example.com\"}\n").unwrap();
    let imported =
        binary.command(&["users", "import", "--application", &app, lines.to_str().unwrap()]).output().unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));

    // A new key, current from the next start; the old one still opens.
    let renewed = binary.command(&["master-key", "new"]).output().unwrap();
    assert!(renewed.status.success(), "{}", String::from_utf8_lossy(&renewed.stderr));
    assert!(!binary.command(&["master-key", "new"]).output().unwrap().status.success(), "one rotation at a time");
    let server = binary.serve(None).await;
    let writer = UserWriter::start(&binary.base, &app, &key);
    // Each run in a thread of its own: the writer goes on meanwhile.
    let run = |mut command: std::process::Command| tokio::task::spawn_blocking(move || command.output().unwrap());
    let mut first = binary.command(&["master-key", "rotate"]);
    first.env("GATEHOUSE_FAILPOINT", "master_key_rotation.batch_committed");
    let killed = run(first).await.unwrap();
    assert!(!killed.status.success() && killed.stdout.is_empty(), "the first run dies after its first batch");
    let resumed = run(binary.command(&["master-key", "rotate"])).await.unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let rotation: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!((rotation["key_id"].as_u64(), rotation["previous_key_id"].as_u64()), (Some(2), Some(1)), "{rotation}");
    assert_eq!(rotation["remaining"], 0, "{rotation}");
    assert!(rotation["resealed"].as_u64().unwrap() > 100, "the rest after the first batch: {rotation}");
    assert!(writer.stop().await > 0, "writes ran beside the rotation");
    drop(server);

    // The old key gone: everything opens under the new one alone.
    std::fs::remove_file(binary.dir.path().join("master.key.previous")).unwrap();
    let verified = binary.command(&["audit", "verify", "--application", &app]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let again = binary.command(&["master-key", "rotate"]).output().unwrap();
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!((again["resealed"].as_u64(), again["remaining"].as_u64()), (Some(0), Some(0)), "{again}");
    let _server = binary.serve(None).await;
    assert_eq!(
        api.call(&binary.base, reqwest::Method::GET, "/v1/auth/me", None, Some(&token)).await.0,
        200,
        "a token from before"
    );
    assert_eq!(
        api.call(&binary.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada), None).await.0,
        200,
        "the signing key opens"
    );
    let (status, rotated) =
        api.call(&binary.base, reqwest::Method::GET, "/v1/audit-logs?type=master_key.rotated", None, Some(&key)).await;
    assert_eq!(status, 200);
    assert!(rotated["data"].as_array().unwrap().len() >= 2, "a row per batch, the killed run's too: {rotated}");
    let (_, ghost) = api
        .call(
            &binary.base,
            reqwest::Method::POST,
            "/v1/users",
            Some(serde_json::json!({"email": "ghost@example.com"})),
            Some(&key),
        )
        .await;
    let ghost_id = ghost["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        api.call(&binary.base, reqwest::Method::DELETE, &format!("/v1/users/{ghost_id}"), None, Some(&key)).await.0,
        200
    );
    let (_, deleted) =
        api.call(&binary.base, reqwest::Method::GET, "/v1/audit-logs?type=user.deleted", None, Some(&key)).await;
    let deleted = &deleted["data"][0]["data"];
    assert_eq!(deleted["keys_destroyed"], 2, "the address's key, found by a keyed hash from before: {deleted}");
}

/// An application exported from one deployment and imported into another
/// (fresh databases, another master key): its chain verifies there, its
/// secret key, its users and a token issued before work, its signing key
/// opens, and what was keyed to the first deployment's secret is gone.
#[actix_web::test]
async fn an_application_exported_from_one_deployment_is_imported_into_another_and_serves() {
    let public_url = ("GATEHOUSE__SERVER__PUBLIC_URL", "https://id.example.test".to_string());
    let deployment = |storage: &crate::helpers::TestStorage| {
        let mut settings = vec![
            ("RUST_LOG", "error".to_string()),
            ("GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS", "true".into()),
            public_url.clone(),
        ];
        settings.extend(crate::binary::restorable_webhooks());
        let mut binary = Binary::new(&settings);
        for (name, value) in crate::binary::postgres_env(&storage.settings) {
            binary.add_env(&name, value);
        }
        binary
    };
    let (first_storage, second_storage) =
        (crate::helpers::TestStorage::new().await, crate::helpers::TestStorage::new().await);
    let (first, second) = (deployment(&first_storage), deployment(&second_storage));
    let (app, key) = first.bootstrap();
    let api = Api::new(&app);
    let server = first.serve(None).await;
    // A webhook whose messages fail until it points at a receiver, after the import.
    let hook = serde_json::json!({"url": "http://127.0.0.1:1/hook", "event_types": ["user.created"]});
    let (status, hook) = api.call(&first.base, reqwest::Method::POST, "/v1/webhooks", Some(hook), Some(&key)).await;
    assert_eq!(status, 201, "{hook}");
    let (hook_id, hook_secret) = (hook["data"]["id"].as_str().unwrap(), hook["data"]["secret"].as_str().unwrap());
    let ada = serde_json::json!({"email": "ada@example.com", "password": "correct horse battery"});
    assert_eq!(api.call(&first.base, reqwest::Method::POST, "/v1/users", Some(ada.clone()), Some(&key)).await.0, 201);
    let (_, signed_in) =
        api.call(&first.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada.clone()), None).await;
    let token = signed_in["data"]["access_token"].as_str().unwrap().to_string();
    let ghost = serde_json::json!({"email": "ghost@example.com", "password": "wrong horse battery"});
    assert_eq!(api.call(&first.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ghost), None).await.0, 401);

    // Act: exported while the first deployment serves; imported into the second.
    let archive = first.dir.path().join("archive");
    let key_file = first.dir.path().join("archive.key");
    let (to, key_path) = (archive.to_str().unwrap(), key_file.to_str().unwrap());
    let exported =
        first.command(&["export", "--application", &app, "--to", to, "--key-file", key_path]).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    drop(server);
    let manifest: serde_json::Value = serde_json::from_slice(&exported.stdout).unwrap();
    assert_eq!(manifest["format"], "gatehouse.application_archive.v1", "{manifest}");
    let wrong_key = second.dir.path().join("wrong.key");
    std::fs::write(&wrong_key, "1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
    let import = |key: &str| second.command(&["import", "--from", to, "--key-file", key]).output().unwrap();
    let refused = import(wrong_key.to_str().unwrap());
    assert!(!refused.status.success(), "another key opens nothing");
    let imported = import(key_path);
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    assert!(!import(key_path).status.success(), "an application the deployment has is refused");

    // Assert
    let imported: serde_json::Value = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!(imported["rows"], manifest["rows"], "{imported}");
    assert_eq!(imported["address_keys_destroyed"], 1, "the ghost's address was keyed to the first deployment");
    let verified = second.command(&["audit", "verify", "--application", &app]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let _server = second.serve(None).await;
    let base = second.base.clone();
    assert_eq!(
        api.call(&base, reqwest::Method::GET, "/v1/auth/me", None, Some(&token)).await.0,
        200,
        "a token from before"
    );
    let (status, users) =
        api.call(&base, reqwest::Method::GET, "/v1/users?email=ada@example.com", None, Some(&key)).await;
    assert_eq!(
        (status, users["data"].as_array().map(Vec::len)),
        (200, Some(1)),
        "the secret key and the user: {users}"
    );
    assert_eq!(
        api.call(&base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada), None).await.0,
        200,
        "the signing key opens"
    );
    let (_, rows) = api.call(&base, reqwest::Method::GET, "/v1/audit-logs/export?limit=1000", None, Some(&key)).await;
    let rows = rows["data"].as_array().unwrap().clone();
    let types: Vec<&str> = rows.iter().map(|row| row["type"].as_str().unwrap()).collect();
    let exported_at = types.iter().position(|t| *t == "application.exported").unwrap();
    assert_eq!(types.get(exported_at + 1), Some(&"application.imported"), "{types:?}");
    let ghost_row = rows.iter().find(|row| row["type"] == "sign_in.failed").unwrap();
    assert_eq!(ghost_row["erased"], true, "{ghost_row}");
    let ada_row = rows.iter().find(|row| row["type"] == "user.created").unwrap();
    assert_eq!(ada_row["personal"]["email"], "ada@example.com", "{ada_row}");
    // The message still pending is delivered from here, signed with the secret from before.
    let receiver = crate::webhooks::start_receiver(vec![]).await;
    let pointed = serde_json::json!({"url": receiver.url});
    let path = format!("/v1/webhooks/{hook_id}");
    assert_eq!(api.call(&base, reqwest::Method::PATCH, &path, Some(pointed), Some(&key)).await.0, 200);
    let delivered = receiver.wait_for_body("ada@example.com").await;
    assert!(crate::webhooks::verifies(hook_secret, &delivered), "signed with the webhook's secret");
}

/// docs/operations/postgresql.md's backup, as written: `pg_dump` of the
/// catalog, then of each region's database, under writes; `pg_restore` into
/// fresh databases; a node on them with the master key: every chain
/// verifies, a token from before verifies, and a webhook message pending at
/// the backup is delivered.
#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_postgres),
    ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
)]
async fn a_postgresql_backup_taken_under_writes_restores_into_fresh_databases_that_serve() {
    use sea_orm::ConnectionTrait;
    let Ok(admin_url) = std::env::var("GATEHOUSE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: GATEHOUSE_TEST_POSTGRES_URL is not set");
        return;
    };
    let storage = crate::helpers::TestStorage::new().await;
    let node = |env: Vec<(String, String)>| {
        let mut settings = vec![
            ("RUST_LOG", "error".to_string()),
            ("GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND", "0".into()),
            ("GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS", "true".into()),
            ("GATEHOUSE__SERVER__PUBLIC_URL", "https://id.example.test".into()),
        ];
        settings.extend(crate::binary::restorable_webhooks());
        let mut binary = Binary::new(&settings);
        for (name, value) in env {
            binary.add_env(&name, value);
        }
        binary
    };
    let backed_up_env = crate::binary::postgres_env(&storage.settings);
    let first = node(backed_up_env.clone());
    let (app, key) = first.bootstrap();
    let api = Api::new(&app);
    let server = first.serve(None).await;
    let hook = serde_json::json!({"url": "http://127.0.0.1:1/hook", "event_types": ["user.created"]});
    let (_, hook) = api.call(&first.base, reqwest::Method::POST, "/v1/webhooks", Some(hook), Some(&key)).await;
    let (hook_id, hook_secret) = (hook["data"]["id"].as_str().unwrap(), hook["data"]["secret"].as_str().unwrap());
    let ada = serde_json::json!({"email": "ada@example.com", "password": "correct horse battery"});
    assert_eq!(api.call(&first.base, reqwest::Method::POST, "/v1/users", Some(ada.clone()), Some(&key)).await.0, 201);
    let (_, signed_in) =
        api.call(&first.base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada.clone()), None).await;
    let token = signed_in["data"]["access_token"].as_str().unwrap().to_string();

    // pg_dump, the catalog first, while a writer makes users.
    let writer = UserWriter::start(&first.base, &app, &key);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let databases: Vec<(String, String)> = backed_up_env
        .iter()
        .filter(|(name, _)| name.ends_with("_URL"))
        .map(|(name, url)| (name.clone(), url.clone()))
        .collect();
    assert_eq!(databases[0].0, "GATEHOUSE__STORAGE__CATALOG_URL", "the catalog first");
    let dumps = first.dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    for (n, (_, url)) in databases.iter().enumerate() {
        let file = dumps.join(format!("{n}.dump"));
        let mut dump = std::process::Command::new("pg_dump");
        dump.args(["--format=custom", "--file", file.to_str().unwrap(), &crate::binary::postgres_server(url)]);
        let done = tokio::task::spawn_blocking(move || dump.output().unwrap()).await.unwrap();
        assert!(done.status.success(), "pg_dump: {}", String::from_utf8_lossy(&done.stderr));
    }
    assert!(writer.stop().await > 0, "writes ran beside the backup");
    drop(server);

    // Fresh databases, restored; a node of their own with the master key file.
    let admin = sea_orm::Database::connect(&admin_url).await.unwrap();
    let mut restored_env = Vec::new();
    for (n, (name, _)) in databases.iter().enumerate() {
        let database = format!("gh_test_{}_restored_{n}", uuid::Uuid::new_v4().simple());
        admin.execute_unprepared(&format!("CREATE DATABASE {database}")).await.unwrap();
        let mut url = url::Url::parse(&admin_url).unwrap();
        url.set_path(&database);
        let file = dumps.join(format!("{n}.dump"));
        let restore = std::process::Command::new("pg_restore")
            .args(["--no-owner", "--dbname", &crate::binary::postgres_server(url.as_str()), file.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(restore.status.success(), "pg_restore: {}", String::from_utf8_lossy(&restore.stderr));
        restored_env.push((name.clone(), url.to_string()));
    }
    restored_env.extend(backed_up_env.iter().filter(|(name, _)| !name.ends_with("_URL")).cloned());
    let second = node(restored_env);
    std::fs::copy(first.dir.path().join("master.key"), second.dir.path().join("master.key")).unwrap();

    // Assert
    let verified = second.command(&["audit", "verify", "--application", &app]).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let _server = second.serve(None).await;
    let base = second.base.clone();
    assert_eq!(
        api.call(&base, reqwest::Method::GET, "/v1/auth/me", None, Some(&token)).await.0,
        200,
        "a token from before"
    );
    assert_eq!(api.call(&base, reqwest::Method::POST, "/v1/auth/sign-in", Some(ada), None).await.0, 200);
    let receiver = crate::webhooks::start_receiver(vec![]).await;
    let path = format!("/v1/webhooks/{hook_id}");
    let pointed = serde_json::json!({"url": receiver.url});
    assert_eq!(api.call(&base, reqwest::Method::PATCH, &path, Some(pointed), Some(&key)).await.0, 200);
    let delivered = receiver.wait_for_body("ada@example.com").await;
    assert!(crate::webhooks::verifies(hook_secret, &delivered), "signed with the webhook's secret");
}
