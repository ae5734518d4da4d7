//! Spawns the real application on port 0 with fresh storage: SQLite files in
//! a temporary directory, or fresh PostgreSQL databases when
//! `GATEHOUSE_TEST_POSTGRES_URL` is set.
use actix_web::web;
use gatehouse::{
    bootstrap::{bootstrap, BootstrapRequest},
    config::{RegionSettings, Settings},
    region::Region,
    startup::Application,
    state::AppState,
    tenancy::Environment,
};
use reqwest::{header::HeaderMap, Method};
use sea_orm::{ConnectionTrait, Database};
use serde_json::Value;
use uuid::Uuid;

/// The payment processor's endpoint secret every test node is configured with.
pub const PROCESSOR_SECRET: &str = "whsec_test_processor_secret";

/// Fresh storage shared by the nodes of one test.
pub struct TestStorage {
    pub settings: Settings,
    /// Kept for the test's lifetime: the SQLite files and master key live here.
    _dir: tempfile::TempDir,
}

impl TestStorage {
    pub async fn new() -> TestStorage {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut settings = Settings::defaults();
        settings.storage.data_dir = dir.path().to_path_buf();
        settings.storage.max_connections = Some(5);
        settings.server.listen = "127.0.0.1:0".to_string();
        settings.server.workers = 2;
        settings.cache.redis_url = std::env::var("GATEHOUSE_TEST_REDIS_URL").ok();
        // One deployment per test: the tests share one Redis, and a node
        // must find only its own test's nodes in the route table.
        let deployment = format!("test-{}", &Uuid::new_v4().simple().to_string()[..16]);
        settings.deployment.name = gatehouse::config::DeploymentName::parse(&deployment).expect("a deployment name");
        settings.billing.processor_webhook_secret = Some(PROCESSOR_SECRET.to_string());
        // Development applications' webhooks, hooks and SMTP providers reach
        // the tests' receivers on loopback, on SQLite and PostgreSQL alike
        // (PostgreSQL alone would turn the default off).
        settings.security.allow_private_destinations = Some(true);
        // A region beyond the three defaults, named only here: regions are
        // configuration, and every test runs with one the code never names.
        settings.deployment.regions.push(region(FOURTH_REGION));
        settings.node.regions = settings.deployment.regions.clone();
        if let Ok(base) = std::env::var("GATEHOUSE_TEST_POSTGRES_URL") {
            let admin = Database::connect(&base).await.expect("GATEHOUSE_TEST_POSTGRES_URL must be reachable");
            let prefix = format!("gh_test_{}", Uuid::new_v4().simple());
            let url_for = |name: &str| {
                let db = format!("{prefix}_{name}");
                let mut url = url::Url::parse(&base).expect("postgres url");
                url.set_path(&db);
                (db, url.to_string())
            };
            let (catalog, catalog_url) = url_for("catalog");
            admin.execute_unprepared(&format!("CREATE DATABASE {catalog}")).await.expect("create test database");
            settings.storage.catalog_url = Some(catalog_url);
            for region in settings.deployment.regions.clone() {
                let (db, url) = url_for(region.as_str());
                admin.execute_unprepared(&format!("CREATE DATABASE {db}")).await.expect("create test database");
                settings.regions.insert(region, RegionSettings { database_url: Some(url) });
            }
        }
        TestStorage { settings, _dir: dir }
    }
}

/// Who calls: an application id and a secret key.
#[derive(Clone, Debug)]
pub struct Caller {
    pub application_id: String,
    pub key: String,
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub state: web::Data<AppState>,
    pub caller: Caller,
    pub storage: TestStorage,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    pub fn error_code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The tests' fourth region.
pub const FOURTH_REGION: &str = "ca";

/// A region by name (a valid one: tests name only good ones).
pub fn region(name: &str) -> Region {
    Region::new(name).expect("a valid region name")
}

/// A region's first shard (its configured database).
pub fn first_shard(name: &str) -> gatehouse::region::Shard {
    gatehouse::region::Shard::first_of(region(name))
}

pub async fn spawn_app() -> TestApp {
    spawn_with(|_| {}).await
}

pub async fn spawn_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    let mut storage = TestStorage::new().await;
    configure(&mut storage.settings);
    let region = storage.settings.node.regions[0];
    spawn_node(storage, region).await
}

/// Starts a node on `storage` and bootstraps an account whose first
/// application lives in `region`.
pub async fn spawn_node(storage: TestStorage, region: Region) -> TestApp {
    let app = Application::build(storage.settings.clone()).await.expect("application builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let state = app.state.clone();
    actix_web::rt::spawn(app.run_until_stopped());
    let created =
        bootstrap(&state.storage, request("Test", Environment::Development, region)).await.expect("bootstrap");
    TestApp {
        address,
        client: reqwest::Client::new(),
        state,
        caller: Caller { application_id: created.application_id.to_string(), key: created.secret_key },
        storage,
    }
}

/// Two nodes of one deployment: `us` holds the us region; `eu_state` is the
/// other node's (at `eu_address`), which holds eu and an application
/// (`eu_caller`) of its own account.
pub struct TwoRegions {
    pub us: TestApp,
    pub eu_address: String,
    pub eu_state: web::Data<AppState>,
    pub eu_application: Uuid,
    pub eu_caller: Caller,
}

/// [`TwoRegions`] where the us node names the eu node in `node.peers`.
pub async fn us_node_with_eu_peer() -> TwoRegions {
    us_and_eu_nodes(true).await
}

/// [`TwoRegions`]; `peer`: whether the us node names the eu node in
/// `node.peers` (else it finds it only by heartbeats, through Redis).
pub async fn us_and_eu_nodes(peer: bool) -> TwoRegions {
    let shared = TestStorage::new().await;
    let mut eu_settings = shared.settings.clone();
    eu_settings.node.regions = vec![region("eu")];
    let eu_node = Application::build(eu_settings).await.expect("the eu node builds");
    let eu_address = format!("http://127.0.0.1:{}", eu_node.port());
    let eu_state = eu_node.state.clone();
    actix_web::rt::spawn(eu_node.run_until_stopped());
    let mut us_storage = shared;
    us_storage.settings.node.regions = vec![region("us")];
    if peer {
        us_storage.settings.node.peers.insert(region("eu"), eu_address.clone());
    }
    let us = spawn_node(us_storage, region("us")).await;
    let eu = bootstrap(&eu_state.storage, request("EU", Environment::Development, region("eu"))).await.unwrap();
    let eu_caller = Caller { application_id: eu.application_id.to_string(), key: eu.secret_key };
    TwoRegions { us, eu_address, eu_state, eu_application: eu.application_id, eu_caller }
}

pub fn request(name: &str, environment: Environment, region: Region) -> BootstrapRequest {
    BootstrapRequest { name: name.to_string(), environment, region, allowed_origins: vec![] }
}

impl TestApp {
    pub async fn send(&self, caller: &Caller, method: Method, path: &str, body: Option<&Value>) -> Reply {
        self.send_at(&self.address, caller, method, path, body).await
    }

    /// Sends to another node (`address`) of the same deployment.
    pub async fn send_at(
        &self,
        address: &str,
        caller: &Caller,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Reply {
        let mut request = self
            .client
            .request(method, format!("{address}{path}"))
            .header("x-application-id", &caller.application_id)
            .bearer_auth(&caller.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        self.raw(request).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(&self.caller, Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.send(&self.caller, Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Reply {
        self.send(&self.caller, Method::PATCH, path, Some(body)).await
    }

    /// A request built by the test, sent as it is (and recorded as an
    /// example when the suite records: [`crate::examples`]).
    pub async fn raw(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = crate::examples::send(request).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply { status, headers, body }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// A new application in this account, with its first key.
    pub async fn create_application(&self, body: Value) -> Caller {
        let created = self.post("/v1/applications", &body).await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        Caller {
            application_id: created.data()["id"].as_str().unwrap().to_string(),
            key: created.data()["secret_key"].as_str().unwrap().to_string(),
        }
    }

    /// An application in a new account of its own.
    pub async fn other_account(&self) -> Caller {
        let created = bootstrap(&self.state.storage, request("Other", Environment::Development, region("us")))
            .await
            .expect("bootstrap");
        Caller { application_id: created.application_id.to_string(), key: created.secret_key }
    }

    /// A key of this application with exactly `scopes`.
    pub async fn key_with_scopes(&self, scopes: Value) -> Caller {
        let created = self
            .post("/v1/api-keys", &serde_json::json!({"name": format!("k-{}", Uuid::new_v4()), "scopes": scopes}))
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        Caller {
            application_id: self.caller.application_id.clone(),
            key: created.data()["secret"].as_str().unwrap().to_string(),
        }
    }

    pub async fn audit_types(&self) -> Vec<String> {
        let rows = self.get("/v1/audit-logs/export?limit=1000").await;
        rows.data().as_array().unwrap().iter().map(|r| r["type"].as_str().unwrap().to_string()).collect()
    }
}
