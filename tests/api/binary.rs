//! The real `gatehouse` binary for tests over the process (JSON logs, memory
//! read from `/proc`): a fresh data directory and port, `bootstrap` once,
//! then `serve`.
use std::{
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use serde_json::Value;

use crate::oidc::free_port;

pub struct Binary {
    pub dir: tempfile::TempDir,
    pub base: String,
    port: u16,
    env: Vec<(String, String)>,
}

impl Binary {
    /// `env` is added to every command (settings as `GATEHOUSE__…`, `RUST_LOG`).
    pub fn new(env: &[(&str, String)]) -> Binary {
        let port = free_port();
        let env = env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Binary { dir: tempfile::tempdir().unwrap(), base: format!("http://127.0.0.1:{port}"), port, env }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn add_env(&mut self, name: &str, value: String) {
        self.env.push((name.to_string(), value));
    }

    pub fn env_remove(&mut self, name: &str) {
        self.env.retain(|(k, _)| k != name);
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command
            .args(args)
            .env("GATEHOUSE__STORAGE__DATA_DIR", self.dir.path())
            .env("GATEHOUSE__SERVER__LISTEN", format!("127.0.0.1:{}", self.port))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        command
    }

    /// `gatehouse bootstrap`: the first application's id and secret key.
    pub fn bootstrap(&self) -> (String, String) {
        let boot = self.command(&["bootstrap", "--name", "Binary"]).output().unwrap();
        let created: Value = serde_json::from_slice(&boot.stdout).unwrap();
        (created["application_id"].as_str().unwrap().into(), created["secret_key"].as_str().unwrap().into())
    }

    /// `gatehouse serve`, its standard error to `stderr` (or nowhere);
    /// answers once `/healthz` does.
    pub async fn serve(&self, stderr: Option<std::fs::File>) -> Serving {
        let stderr = stderr.map(Stdio::from).unwrap_or_else(Stdio::null);
        let mut child = self.command(&["serve"]).stdout(Stdio::null()).stderr(stderr).spawn().unwrap();
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if client.get(format!("{}/healthz", self.base)).send().await.is_ok() {
                return Serving(child);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("gatehouse serve did not start");
    }
}

/// One application's API as its callers use it, on any node's address.
pub struct Api {
    client: reqwest::Client,
    application: String,
}

impl Api {
    pub fn new(application: &str) -> Api {
        Api { client: reqwest::Client::new(), application: application.to_string() }
    }

    /// The status and the JSON body (null when there is none).
    pub async fn call(
        &self,
        base: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        bearer: Option<&str>,
    ) -> (u16, Value) {
        let mut request =
            self.client.request(method, format!("{base}{path}")).header("x-application-id", &self.application);
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.unwrap_or_default())
    }
}

/// Makes users (`load{n}@example.com`) through one node until stopped: the
/// write load beside a backup, an export or a rotation.
pub struct UserWriter {
    writing: Arc<AtomicBool>,
    task: actix_web::rt::task::JoinHandle<u64>,
}

impl UserWriter {
    pub fn start(base: &str, application: &str, key: &str) -> UserWriter {
        let writing = Arc::new(AtomicBool::new(true));
        let (flag, url, application, key) =
            (writing.clone(), format!("{base}/v1/users"), application.to_string(), key.to_string());
        let task = actix_web::rt::spawn(async move {
            let client = reqwest::Client::new();
            let mut made = 0;
            while flag.load(Ordering::SeqCst) {
                let body = serde_json::json!({"email": format!("load{made}@example.com")});
                let sent = client.post(&url).bearer_auth(&key).header("x-application-id", &application);
                if sent.json(&body).send().await.is_ok_and(|r| r.status() == 201) {
                    made += 1;
                }
            }
            made
        });
        UserWriter { writing, task }
    }

    /// Stops the writer; answers how many users it made.
    pub async fn stop(self) -> u64 {
        self.writing.store(false, Ordering::SeqCst);
        self.task.await.unwrap()
    }
}

/// Webhook settings for a test that backs up or exports under deliveries and
/// expects the restored node to deliver what was pending: fast polling, a
/// message failing every 2 s for a minute (so it is still pending whatever
/// the backup's pace), and a 2 s lease, so that a delivery in flight at the
/// backup (its row leased by the node that is gone) lapses at once rather
/// than after the default minute.
pub fn restorable_webhooks() -> Vec<(&'static str, String)> {
    vec![
        ("GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS", "50".into()),
        ("GATEHOUSE__WEBHOOKS__RETRY_SCHEDULE", format!("0s{}", ",2s".repeat(30))),
        ("GATEHOUSE__WEBHOOKS__TIMEOUT_SECONDS", "1".into()),
        ("GATEHOUSE__WEBHOOKS__LEASE_SECONDS", "2".into()),
    ]
}

/// The settings that point a binary at the test's PostgreSQL databases
/// (`settings` from [`crate::helpers::TestStorage`]); none on SQLite, whose
/// files are in the binary's own data directory.
pub fn postgres_env(settings: &gatehouse::config::Settings) -> Vec<(String, String)> {
    let Some(catalog_url) = settings.storage.catalog_url.clone() else {
        return Vec::new();
    };
    let names: Vec<&str> = settings.deployment.regions.iter().map(|r| r.as_str()).collect();
    let mut env = vec![
        ("GATEHOUSE__STORAGE__CATALOG_URL".to_string(), catalog_url),
        ("GATEHOUSE__DEPLOYMENT__REGIONS".to_string(), names.join(",")),
    ];
    for (region, own) in &settings.regions {
        let name = format!("GATEHOUSE__REGIONS__{}__DATABASE_URL", region.as_str().to_uppercase());
        env.push((name, own.database_url.clone().unwrap()));
    }
    env
}

/// `url` pointed at the PostgreSQL server itself when the tests pass
/// through a pooler: `GATEHOUSE_TEST_POSTGRES_SERVER_URL` names its host
/// and port. Backups and restores (`pg_dump`, `pg_restore`) go to the
/// server, never through a transaction pooler, whose server connection
/// changes between their statements (docs/operations/postgresql.md).
pub fn postgres_server(url: &str) -> String {
    let Ok(server) = std::env::var("GATEHOUSE_TEST_POSTGRES_SERVER_URL") else {
        return url.to_string();
    };
    let server = url::Url::parse(&server).expect("GATEHOUSE_TEST_POSTGRES_SERVER_URL is a URL");
    let mut url = url::Url::parse(url).expect("a database URL");
    url.set_host(server.host_str()).unwrap();
    url.set_port(server.port()).unwrap();
    url.to_string()
}

/// A running `gatehouse serve`, killed when dropped: a test that fails
/// half-way leaves no server behind.
pub struct Serving(Child);

impl std::ops::Deref for Serving {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Serving {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
