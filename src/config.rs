//! Settings and their loading. Later wins: built-in defaults,
//! `config/default.toml`, the `--config`/`GATEHOUSE_CONFIG` file, then
//! `GATEHOUSE__SECTION__KEY` environment variables.
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::Deserialize;

use crate::{
    error::{ApiError, ApiResult, Code},
    region::Region,
};

#[derive(Clone, Debug, Deserialize)]
pub struct Settings {
    pub server: ServerSettings,
    pub storage: StorageSettings,
    /// Each region's own settings, by name (`[regions.ca]`); a region
    /// without any keeps the defaults.
    #[serde(default)]
    pub regions: BTreeMap<Region, RegionSettings>,
    #[serde(default)]
    pub node: NodeSettings,
    #[serde(default)]
    pub deployment: DeploymentSettings,
    #[serde(default)]
    pub cache: CacheSettings,
    #[serde(default)]
    pub security: SecuritySettings,
    pub tokens: TokenSettings,
    pub webhooks: WebhookSettings,
    pub hooks: HookSettings,
    pub rate_limits: RateLimitSettings,
    pub limits: LimitSettings,
    #[serde(default)]
    pub log: LogSettings,
    #[serde(default)]
    pub billing: BillingSettings,
    #[serde(default)]
    pub oauth: OAuthSettings,
    #[serde(default)]
    pub dns: DnsSettings,
    #[serde(default)]
    pub bootstrap: BootstrapSettings,
}

/// What `serve` does on its first start, with an empty catalog.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct BootstrapSettings {
    pub first_start_application: FirstStartApplication,
}

/// Whether the first start creates a development application and prints
/// its secret key on standard output.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FirstStartApplication {
    /// Only on the embedded default: every database SQLite
    /// ([`Settings::is_embedded`]). A deployment on PostgreSQL creates
    /// nothing: `gatehouse bootstrap` creates its first application.
    #[default]
    Auto,
    /// On any storage.
    Always,
    /// Never.
    Never,
}

/// The resolver of SSO domain verification (TXT lookups).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DnsSettings {
    /// `ip:port` of the servers to ask, over UDP (TCP for long answers);
    /// empty: the system's (`/etc/resolv.conf`).
    #[serde(default)]
    pub nameservers: Vec<std::net::SocketAddr>,
}

/// Identity providers: the shared development credentials, per provider
/// (`oauth.shared.google.client_id`, …), for development applications that
/// set `use_shared_dev_credentials`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct OAuthSettings {
    #[serde(default)]
    pub shared: std::collections::BTreeMap<String, SharedOAuthCredentials>,
    /// Replacements of a provider's endpoints (`oauth.endpoints.gitlab.*`
    /// for a self-hosted GitLab; a test provider on loopback).
    #[serde(default)]
    pub endpoints: std::collections::BTreeMap<String, EndpointOverrides>,
}

impl OAuthSettings {
    /// The shared development credentials of a provider, when configured
    /// (`oauth.shared.<provider>.client_id` and `client_secret`, both set).
    pub fn shared_credentials(&self, provider: &str) -> Option<(&str, &str)> {
        let shared = self.shared.get(provider)?;
        match (shared.client_id.as_deref(), shared.client_secret.as_deref()) {
            (Some(id), Some(secret)) if !id.is_empty() && !secret.is_empty() => Some((id, secret)),
            _ => None,
        }
    }
}

/// Any of a provider's endpoints; unset ones keep the provider's own.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct EndpointOverrides {
    #[serde(default)]
    pub authorization_url: Option<String>,
    #[serde(default)]
    pub token_url: Option<String>,
    #[serde(default)]
    pub userinfo_url: Option<String>,
    #[serde(default)]
    pub jwks_url: Option<String>,
    #[serde(default)]
    pub issuer: Option<String>,
}

#[derive(Clone, Default, Deserialize)]
pub struct SharedOAuthCredentials {
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<String>,
}

/// The client secret never reaches a log line through `Debug`.
impl std::fmt::Debug for SharedOAuthCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedOAuthCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

#[derive(Clone, Default, Deserialize)]
pub struct BillingSettings {
    /// The payment processor's endpoint signing secret (`whsec_…`), used as
    /// the HMAC key as it is. Unset: every inbound processor event is refused.
    #[serde(default)]
    pub processor_webhook_secret: Option<String>,
}

/// The signing secret never reaches a log line through `Debug`.
impl std::fmt::Debug for BillingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BillingSettings")
            .field("processor_webhook_secret", &self.processor_webhook_secret.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct LogSettings {
    #[serde(default)]
    pub format: LogFormat,
}

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// For people: one readable line per event.
    #[default]
    Text,
    /// For log pipelines: one JSON object per line, carrying the fields of
    /// its spans (an event in a request: the request's `request_id`).
    Json,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ServerSettings {
    pub listen: String,
    pub public_url: Option<String>,
    /// HTTP worker threads; 0 means one per core.
    pub workers: usize,
    /// On SIGTERM: how long requests in flight, then the background
    /// workers' deliveries in flight, may take to finish.
    pub shutdown_timeout_seconds: u64,
    /// How long a request body may take to arrive once it is read: a client
    /// trickling bytes cannot hold a connection open (408 after that).
    pub body_timeout_seconds: u64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct StorageSettings {
    pub data_dir: PathBuf,
    pub catalog_url: Option<String>,
    /// Each database pool's size; unset, an even share of the server
    /// (`storage::pools`).
    pub max_connections: Option<u32>,
    /// The connections the PostgreSQL server, or the pooler in front of
    /// it, takes from every node together; unset, read from the server.
    pub server_connections: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct RegionSettings {
    pub database_url: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct NodeSettings {
    /// The regions whose databases this node holds; none named: every one
    /// of the deployment's.
    #[serde(default)]
    pub regions: Vec<Region>,
    /// A fixed address per region (a load balancer, a Service), tried after
    /// the nodes that announce themselves (`region::membership`).
    #[serde(default)]
    pub peers: BTreeMap<Region, String>,
    /// The base URL the other nodes forward requests to; unset:
    /// `http://{server.listen}` unless that listens on every address.
    #[serde(default)]
    pub advertise_url: Option<String>,
    /// How long a node's claim on a region move lasts unrenewed: after a
    /// crash, another node (or this one restarted) resumes the move then.
    #[serde(default = "default_move_lease_seconds")]
    pub move_lease_seconds: u64,
    /// How long after its start a region move may still be copying (its
    /// copy tried again each second after a failure); past it the move is
    /// rolled back and the application serves from its old region again.
    #[serde(default = "default_move_copy_timeout_seconds")]
    pub move_copy_timeout_seconds: u64,
}

fn default_move_lease_seconds() -> u64 {
    15
}

fn default_move_copy_timeout_seconds() -> u64 {
    60
}

impl Default for NodeSettings {
    fn default() -> Self {
        NodeSettings {
            regions: Vec::new(),
            peers: BTreeMap::new(),
            advertise_url: None,
            move_lease_seconds: default_move_lease_seconds(),
            move_copy_timeout_seconds: default_move_copy_timeout_seconds(),
        }
    }
}

/// Which deployment this node belongs to. Every Redis key and channel is
/// named under it (`gatehouse:{name}:…`), so deployments sharing one Redis
/// (a staging and a production) share nothing there.
#[derive(Clone, Debug, Deserialize)]
pub struct DeploymentSettings {
    #[serde(default)]
    pub name: DeploymentName,
    /// Every region an application may be pinned to. A region is added by
    /// naming it here (and its database, unless SQLite's default file
    /// serves); one is removed only once no application is pinned to it
    /// (start-up refuses otherwise).
    #[serde(default = "default_regions")]
    pub regions: Vec<Region>,
    /// How many nodes connect to the deployment's databases: each node's
    /// pools are sized to leave room for the others' (`storage::pools`).
    #[serde(default = "default_nodes")]
    pub nodes: u32,
}

fn default_nodes() -> u32 {
    1
}

impl Default for DeploymentSettings {
    fn default() -> Self {
        DeploymentSettings { name: DeploymentName::default(), regions: default_regions(), nodes: default_nodes() }
    }
}

fn default_regions() -> Vec<Region> {
    ["us", "eu", "ap"].map(|name| Region::new(name).expect("a valid region name")).to_vec()
}

/// A deployment's name: 1 to 32 of `a-z`, `0-9` and `-`, neither first nor
/// last a `-` (it goes into Redis key names, so nothing that could read as
/// a separator or a glob).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct DeploymentName(String);

impl DeploymentName {
    pub const MAX_LEN: usize = 32;

    pub fn parse(name: &str) -> Result<DeploymentName, String> {
        let valid = (1..=Self::MAX_LEN).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if valid {
            Ok(DeploymentName(name.to_string()))
        } else {
            Err(format!(
                "deployment.name `{}` must be 1 to {} of a-z, 0-9 and `-`, not starting or ending with `-`",
                name.escape_debug(),
                Self::MAX_LEN
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for DeploymentName {
    fn default() -> Self {
        DeploymentName("default".to_string())
    }
}

impl TryFrom<String> for DeploymentName {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        DeploymentName::parse(&name)
    }
}

impl std::fmt::Display for DeploymentName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Default, Deserialize)]
pub struct CacheSettings {
    pub redis_url: Option<String>,
}

/// A Redis URL may carry a password: `Debug` shows whether one is set.
impl std::fmt::Debug for CacheSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheSettings").field("redis_url", &self.redis_url.as_ref().map(|_| "[redacted]")).finish()
    }
}

#[derive(Clone, Default, Deserialize)]
pub struct SecuritySettings {
    /// Base64 of 32 bytes, after an optional key id and `:` (`2:…`; 1
    /// when none). Unset: a generated `{data_dir}/master.key`.
    pub master_key: Option<String>,
    /// During a rotation, the key `master_key` replaces: it still opens
    /// what it sealed until `gatehouse master-key rotate` has sealed it all
    /// again. Unset with `master_key` unset: `{data_dir}/master.key.previous`.
    pub previous_master_key: Option<String>,
    /// Password hashes computed at once; 0 means one per core.
    pub password_hash_concurrency: usize,
    /// Password hashes that may wait for a core; past that, 503 at once.
    pub password_hash_queue: usize,
    /// Whether development applications' webhooks, hooks and SMTP provider
    /// may reach loopback, private and other non-public addresses
    /// (production applications never do). Unset: allowed only for the
    /// embedded single-developer default ([`Settings::is_embedded`]); see
    /// [`Settings::private_destinations_allowed`].
    pub allow_private_destinations: Option<bool>,
}

/// The master key never reaches a log line through `Debug`.
impl std::fmt::Debug for SecuritySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecuritySettings")
            .field("master_key", &self.master_key.as_ref().map(|_| "[redacted]"))
            .field("previous_master_key", &self.previous_master_key.as_ref().map(|_| "[redacted]"))
            .field("password_hash_concurrency", &self.password_hash_concurrency)
            .field("password_hash_queue", &self.password_hash_queue)
            .field("allow_private_destinations", &self.allow_private_destinations)
            .finish()
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct TokenSettings {
    pub access_ttl_seconds: u64,
    /// A session ends when its refresh token goes unused this long.
    pub refresh_ttl_seconds: u64,
    /// How long a verifier may cache the JWKS (`Cache-Control: max-age`);
    /// a scheduled key rotation publishes the next key this long (and the
    /// server's own cache time) before it signs.
    pub jwks_max_age_seconds: u64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct WebhookSettings {
    pub retry_schedule: String,
    /// How often each region's worker looks for due deliveries.
    pub poll_interval_ms: u64,
    pub timeout_seconds: u64,
    /// How long a claimed delivery belongs to its worker; longer than the timeout.
    pub lease_seconds: u64,
    /// Deliveries in flight at once per region's worker.
    pub concurrency: usize,
}

#[derive(Clone, Debug, Deserialize)]
pub struct HookSettings {
    /// One sign-up's hooks together: each call gets the smaller of its own
    /// timeout and what is left of this.
    pub total_timeout_ms: u64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RateLimitSettings {
    pub sign_in_per_email_per_minute: u32,
    pub sign_in_per_ip_per_minute: u32,
    pub sign_up_per_ip_per_minute: u32,
    /// Token bucket refill per second; the burst is twice this. 0 turns it off.
    pub management_per_application_per_second: u32,
}

#[derive(Clone, Debug, Deserialize)]
pub struct LimitSettings {
    pub active_secret_keys_per_application: u64,
    pub webhooks_per_application: u64,
    pub hooks_per_application: u64,
    pub profile_fields_per_application: u64,
    pub personal_keys_per_user: u64,
    pub service_accounts_per_application: u64,
    pub keys_per_service_account: u64,
    pub oauth_clients_per_application: u64,
    pub scim_directories_per_application: u64,
    pub sso_connections_per_application: u64,
    pub sod_policies_per_application: u64,
    pub features_per_application: u64,
    pub plans_per_application: u64,
}

const DEFAULTS: &[(&str, &str)] = &[
    ("server.listen", "127.0.0.1:8080"),
    ("server.workers", "0"),
    ("server.shutdown_timeout_seconds", "10"),
    ("server.body_timeout_seconds", "30"),
    ("deployment.name", "default"),
    ("storage.data_dir", "./data"),
    ("tokens.access_ttl_seconds", "300"),
    ("tokens.refresh_ttl_seconds", "2592000"),
    ("tokens.jwks_max_age_seconds", "300"),
    ("security.password_hash_concurrency", "0"),
    ("security.password_hash_queue", "16"),
    ("webhooks.retry_schedule", "0s,5s,5m,30m,2h,5h,10h,10h"),
    ("webhooks.poll_interval_ms", "200"),
    ("webhooks.timeout_seconds", "10"),
    ("webhooks.lease_seconds", "60"),
    ("webhooks.concurrency", "64"),
    ("hooks.total_timeout_ms", "5000"),
    ("rate_limits.sign_in_per_email_per_minute", "10"),
    ("rate_limits.sign_in_per_ip_per_minute", "30"),
    ("rate_limits.sign_up_per_ip_per_minute", "30"),
    ("rate_limits.management_per_application_per_second", "1000"),
    ("limits.active_secret_keys_per_application", "100"),
    ("limits.webhooks_per_application", "50"),
    ("limits.hooks_per_application", "20"),
    ("limits.profile_fields_per_application", "200"),
    ("limits.personal_keys_per_user", "100"),
    ("limits.service_accounts_per_application", "100"),
    ("limits.keys_per_service_account", "10"),
    ("limits.oauth_clients_per_application", "100"),
    ("limits.scim_directories_per_application", "100"),
    ("limits.sso_connections_per_application", "100"),
    ("limits.sod_policies_per_application", "100"),
    ("limits.features_per_application", "200"),
    ("limits.plans_per_application", "100"),
];

impl Settings {
    /// Loads every layer. `explicit` is the `--config` file, if given.
    pub fn load(explicit: Option<&Path>) -> Result<Self, config::ConfigError> {
        let mut builder = Self::defaults_builder()?;
        for file in Self::files(explicit) {
            builder = builder.add_source(config::File::from(file).required(true));
        }
        builder
            .add_source(
                config::Environment::with_prefix("GATEHOUSE")
                    .prefix_separator("__")
                    .separator("__")
                    .list_separator(",")
                    .with_list_parse_key("node.regions")
                    .with_list_parse_key("deployment.regions")
                    .with_list_parse_key("dns.nameservers")
                    .try_parsing(true),
            )
            .build()?
            .try_deserialize::<Settings>()?
            .resolved()
    }

    /// The files `load` reads, in order (the environment's `GATEHOUSE__…`
    /// variables come after them): `config/default.toml` when it is there,
    /// then the one in `--config` or `GATEHOUSE_CONFIG`.
    pub fn files(explicit: Option<&Path>) -> Vec<PathBuf> {
        let default = PathBuf::from("config/default.toml");
        let explicit =
            explicit.map(Path::to_path_buf).or_else(|| std::env::var_os("GATEHOUSE_CONFIG").map(PathBuf::from));
        default.is_file().then_some(default).into_iter().chain(explicit).collect()
    }

    /// Built-in defaults only: what tests start from.
    pub fn defaults() -> Self {
        Self::defaults_builder()
            .and_then(|b| b.build())
            .and_then(|c| c.try_deserialize::<Settings>())
            .and_then(Settings::resolved)
            .expect("built-in defaults deserialize")
    }

    /// Every region setting names one of the deployment's regions; a node
    /// that names none holds them all.
    fn resolved(mut self) -> Result<Settings, config::ConfigError> {
        let deployment = &self.deployment.regions;
        let mut seen = std::collections::BTreeSet::new();
        if deployment.is_empty() || !deployment.iter().all(|r| seen.insert(*r)) {
            return Err(config::ConfigError::Message(
                "deployment.regions must name at least one region, each once".into(),
            ));
        }
        let named = [
            ("node.regions", self.node.regions.clone()),
            ("regions", self.regions.keys().copied().collect()),
            ("node.peers", self.node.peers.keys().copied().collect()),
        ];
        for (key, regions) in named {
            if let Some(unknown) = regions.iter().find(|r| !deployment.contains(r)) {
                let list = deployment.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
                return Err(config::ConfigError::Message(format!(
                    "{key} names region `{unknown}`, which deployment.regions ({list}) does not"
                )));
            }
        }
        if self.node.regions.is_empty() {
            self.node.regions = deployment.clone();
        }
        let urls = self
            .node
            .peers
            .values()
            .map(|url| ("node.peers", url))
            .chain(self.node.advertise_url.iter().map(|url| ("node.advertise_url", url)));
        for (key, url) in urls {
            if !url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
                return Err(config::ConfigError::Message(format!(
                    "{key} `{}` must be an http or https URL",
                    url.escape_debug()
                )));
            }
        }
        Ok(self)
    }

    /// The deployment's region of this name (a request's region is one of
    /// these, or 422 `unknown_region`).
    pub fn region_named(&self, name: &str) -> Option<Region> {
        self.deployment.regions.iter().copied().find(|r| r.as_str() == name)
    }

    /// How a request's unknown region is answered: which ones there are.
    pub fn region_names(&self) -> String {
        self.deployment.regions.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// The deployment's region a request names; 422 `unknown_region`, naming
    /// the deployment's regions, for any other.
    pub fn requested_region(&self, name: &str) -> ApiResult<Region> {
        self.region_named(name).ok_or_else(|| {
            let message = format!("Region `{}` is not one of {}.", name.escape_debug(), self.region_names());
            ApiError::new(Code::UnknownRegion, message)
        })
    }

    fn defaults_builder() -> Result<config::ConfigBuilder<config::builder::DefaultState>, config::ConfigError> {
        let mut builder = config::Config::builder().set_default("deployment.regions", vec!["us", "eu", "ap"])?;
        for (key, value) in DEFAULTS {
            builder = builder.set_default(*key, *value)?;
        }
        Ok(builder)
    }

    pub fn public_url(&self) -> String {
        match &self.server.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{}", self.server.listen),
        }
    }

    /// The embedded single-developer default: SQLite files in `data_dir`
    /// for the catalog and every region, no Redis, no peers. A deployment
    /// that configures any of them may serve more than one account.
    pub fn is_embedded(&self) -> bool {
        self.storage.catalog_url.is_none()
            && self.regions.values().all(|r| r.database_url.is_none())
            && self.cache.redis_url.is_none()
            && self.node.peers.is_empty()
    }

    /// Whether development applications may reach private destinations
    /// (`security.allow_private_destinations`; unset: only when
    /// [`Self::is_embedded`]).
    pub fn private_destinations_allowed(&self) -> bool {
        self.security.allow_private_destinations.unwrap_or_else(|| self.is_embedded())
    }

    /// Whether the first start on an empty catalog creates a development
    /// application (`bootstrap.first_start_application`).
    pub fn creates_first_start_application(&self) -> bool {
        match self.bootstrap.first_start_application {
            FirstStartApplication::Auto => self.is_embedded(),
            FirstStartApplication::Always => true,
            FirstStartApplication::Never => false,
        }
    }

    pub fn catalog_url(&self) -> String {
        self.storage.catalog_url.clone().unwrap_or_else(|| self.sqlite_url("catalog"))
    }

    pub fn region_url(&self, region: Region) -> String {
        self.configured_region_url(region).map(str::to_string).unwrap_or_else(|| self.sqlite_url(region.as_str()))
    }

    /// A region's database URL when one is configured (no default).
    pub fn configured_region_url(&self, region: Region) -> Option<&str> {
        self.regions.get(&region).and_then(|r| r.database_url.as_deref())
    }

    /// Where the other nodes reach this one: `node.advertise_url`, or
    /// `http://{server.listen}` when it names one address; `None` when it
    /// listens on every address (0.0.0.0, [::]) and nothing says which.
    pub fn advertised_url(&self) -> Option<String> {
        if let Some(url) = &self.node.advertise_url {
            return Some(url.trim_end_matches('/').to_string());
        }
        let address: std::net::SocketAddr = self.server.listen.parse().ok()?;
        (!address.ip().is_unspecified()).then(|| format!("http://{address}"))
    }

    fn sqlite_url(&self, name: &str) -> String {
        format!("sqlite://{}/{name}.db", self.storage.data_dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(name: &str) -> Region {
        Region::new(name).unwrap()
    }

    /// Every file of the Kustomize layout under `deploy/kubernetes`, as a
    /// path from the repository's root.
    fn kubernetes_files(root: &Path) -> Vec<String> {
        let files: Vec<String> = crate::generated_docs::files_under("deploy/kubernetes")
            .iter()
            .map(|path| path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(files.len() > 5, "{files:?}");
        files
    }

    /// A setting's environment name misspelt in a deployment would be
    /// ignored without a word: every `GATEHOUSE__…` the deployment files use
    /// is one `config/default.toml` documents.
    #[test]
    fn the_deployment_files_name_only_documented_settings() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let names = |file: &str| -> std::collections::BTreeSet<String> {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            text.split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .filter(|n| n.starts_with("GATEHOUSE__"))
                .map(str::to_string)
                .collect()
        };
        let documented = names("config/default.toml");
        let mut files = kubernetes_files(root);
        files.push("deploy/local-cluster.sh".into());
        for file in &files {
            for name in names(file) {
                assert!(documented.contains(&name), "{file} sets {name}, which config/default.toml does not document");
            }
        }
    }

    /// The configuration reference is `config/default.toml` itself, every
    /// key with its default, variable and meaning, under a few words on how
    /// the layers combine.
    #[test]
    fn docs_configuration_md_is_generated_from_default_toml() {
        let every_key =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default.toml")).unwrap();
        let generated = format!(
            "# Configuration\n\n\
             <!-- Generated from config/default.toml by `GATEHOUSE_WRITE_DOCS=1 cargo test --lib config`. -->\n\n\
             Later layers win: the built-in defaults, `config/default.toml` (read from the working directory \
             when it is there), the file named by `--config` or `GATEHOUSE_CONFIG`, then environment \
             variables `GATEHOUSE__SECTION__KEY` (double underscores; a list as `a,b,c`). Start-up refuses \
             an unknown region, a malformed value or pools that cannot fit the database, naming the key. \
             `serve` logs the files it read (never their values).\n\n\
             Secrets (`security.master_key`, database URLs with passwords, `cache.redis_url`, provider \
             secrets) belong in environment variables from a secret store, not in files. \
             `config/production.example.toml` is a production setup; \
             [operations/deployment.md](../operations/deployment.md) explains it.\n\n\
             ## Every key\n\n```toml\n{every_key}```\n"
        );
        crate::generated_docs::assert_generated("docs/reference/configuration.md", &generated);
    }

    #[test]
    fn the_deployment_name_defaults_to_default_and_must_be_a_short_lowercase_name() {
        assert_eq!(Settings::defaults().deployment.name.as_str(), "default");
        for good in ["default", "prod", "staging-eu-2", "a", &"x".repeat(DeploymentName::MAX_LEN)] {
            assert!(DeploymentName::parse(good).is_ok(), "{good:?} is a name");
        }
        for bad in ["", "Prod", "prod:eu", "prod*", "-prod", "prod-", "prod eu", "prod_eu", "é", &"x".repeat(33)] {
            assert!(DeploymentName::parse(bad).is_err(), "{bad:?} is refused");
        }
        // A file naming a bad one is refused at load, not at the first Redis key.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gatehouse.toml");
        std::fs::write(&file, "[deployment]\nname = \"prod:eu\"\n").unwrap();
        let loaded = Settings::defaults_builder()
            .unwrap()
            .add_source(config::File::from(file.as_path()))
            .build()
            .and_then(|c| c.try_deserialize::<Settings>());
        assert!(loaded.unwrap_err().to_string().contains("deployment.name"));
    }

    #[test]
    fn a_file_overrides_defaults_and_environment_variables_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gatehouse.toml");
        std::fs::write(
            &file,
            "[server]\nlisten = \"127.0.0.1:9999\"\n[storage]\nmax_connections = 3\n[oauth.shared.google]\nclient_id = \"g\"\n",
        )
        .unwrap();
        std::env::set_var("GATEHOUSE__STORAGE__MAX_CONNECTIONS", "7");
        std::env::set_var("GATEHOUSE__NODE__REGIONS", "eu,ap");
        std::env::set_var("GATEHOUSE__NODE__PEERS__US", "http://us.internal:8080");
        std::env::set_var("GATEHOUSE__OAUTH__SHARED__GITHUB__CLIENT_ID", "12345");
        std::env::set_var("GATEHOUSE__OAUTH__SHARED__GITHUB__CLIENT_SECRET", "shared-secret");
        std::env::set_var("GATEHOUSE__DEPLOYMENT__NAME", "staging-eu");
        let settings = Settings::load(Some(&file)).unwrap();
        std::env::remove_var("GATEHOUSE__DEPLOYMENT__NAME");
        std::env::remove_var("GATEHOUSE__STORAGE__MAX_CONNECTIONS");
        std::env::remove_var("GATEHOUSE__NODE__REGIONS");
        std::env::remove_var("GATEHOUSE__NODE__PEERS__US");
        std::env::remove_var("GATEHOUSE__OAUTH__SHARED__GITHUB__CLIENT_ID");
        std::env::remove_var("GATEHOUSE__OAUTH__SHARED__GITHUB__CLIENT_SECRET");
        assert_eq!(settings.server.listen, "127.0.0.1:9999");
        assert_eq!(settings.storage.max_connections, Some(7));
        assert_eq!(settings.deployment.name.as_str(), "staging-eu");
        assert_eq!(settings.node.regions, vec![region("eu"), region("ap")]);
        assert_eq!(settings.node.peers[&region("us")], "http://us.internal:8080");
        assert_eq!(settings.tokens.access_ttl_seconds, 300, "untouched keys keep their defaults");
        assert_eq!(settings.public_url(), "http://127.0.0.1:9999");
        assert_eq!(settings.region_url(region("eu")), "sqlite://./data/eu.db");
        let shared = |provider| settings.oauth.shared_credentials(provider);
        assert_eq!(shared("github"), Some(("12345", "shared-secret")));
        assert_eq!(shared("google"), None, "a client id without its secret is not usable");
        assert_eq!(shared("slack"), None);
    }

    #[test]
    fn private_destinations_are_allowed_by_default_only_on_the_embedded_default() {
        let mut settings = Settings::defaults();
        assert!(settings.private_destinations_allowed(), "the embedded default");
        settings.storage.catalog_url = Some("postgres://db/catalog".into());
        assert!(!settings.private_destinations_allowed(), "a PostgreSQL catalog");
        settings.security.allow_private_destinations = Some(true);
        assert!(settings.private_destinations_allowed(), "the operator's explicit choice");
        let mut settings = Settings::defaults();
        settings.cache.redis_url = Some("redis://cache:6379".into());
        assert!(!settings.private_destinations_allowed(), "a shared cache");
        settings.cache.redis_url = None;
        settings.security.allow_private_destinations = Some(false);
        assert!(!settings.private_destinations_allowed(), "turned off on the embedded default");
    }

    /// What the operator's example and the deployment files choose.
    #[test]
    fn the_production_example_and_the_deployment_files_refuse_private_destinations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("config/production.example.toml")).unwrap();
        assert!(text.lines().any(|l| l.trim().starts_with("allow_private_destinations = false")));
        for file in ["deploy/kubernetes/shared/settings.yaml", "deploy/local-cluster.sh", "deploy/Dockerfile"] {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let at = text.find("GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS").unwrap_or_else(|| panic!("{file}"));
            let after: String = text[at..].chars().take(80).collect();
            assert!(after.contains("false"), "{file}: {after}");
        }
        // A container is no single developer's machine: it prints no admin key.
        let dockerfile = std::fs::read_to_string(root.join("deploy/Dockerfile")).unwrap();
        assert!(dockerfile.contains("GATEHOUSE__BOOTSTRAP__FIRST_START_APPLICATION=never"));
    }

    #[test]
    fn one_regions_url_keeps_the_other_regions_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("one-region.toml");
        std::fs::write(&file, "[regions.us]\ndatabase_url = \"postgres://db.internal/us\"\n[node.peers]\n").unwrap();
        let settings = Settings::load(Some(&file)).unwrap();
        assert_eq!(settings.region_url(region("us")), "postgres://db.internal/us");
        assert_eq!(settings.region_url(region("eu")), "sqlite://./data/eu.db");
        assert_eq!(settings.region_url(region("ap")), "sqlite://./data/ap.db");
        assert_eq!(settings.hooks.total_timeout_ms, 5000);
    }

    fn load(text: &str) -> Result<Settings, config::ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gatehouse.toml");
        std::fs::write(&file, text).unwrap();
        // Not `Settings::load`: another test sets environment variables.
        let built = Settings::defaults_builder()?.add_source(config::File::from(file.as_path())).build()?;
        built.try_deserialize::<Settings>()?.resolved()
    }

    #[test]
    fn a_region_is_added_by_configuration_alone() {
        let settings = load(
            "[deployment]\nregions = [\"us\", \"ca\"]\n[regions.ca]\ndatabase_url = \"postgres://db.internal/ca\"\n",
        )
        .unwrap();
        assert_eq!(settings.deployment.regions, vec![region("us"), region("ca")]);
        assert_eq!(settings.node.regions, settings.deployment.regions, "a node naming none holds every region");
        assert_eq!(settings.region_url(region("ca")), "postgres://db.internal/ca");
        assert_eq!(settings.region_named("ca"), Some(region("ca")));
        assert_eq!(settings.region_named("eu"), None, "a region the deployment does not name is unknown");
        assert_eq!(settings.region_names(), "us, ca");
    }

    #[test]
    fn region_settings_name_only_the_deployments_regions_and_good_names() {
        for (text, named) in [
            ("[node]\nregions = [\"us\", \"ca\"]\n", "node.regions names region `ca`"),
            ("[regions.ca]\ndatabase_url = \"postgres://db/ca\"\n", "regions names region `ca`"),
            ("[node.peers]\nca = \"http://ca.internal\"\n", "node.peers names region `ca`"),
            ("[deployment]\nregions = []\n", "at least one region"),
            ("[deployment]\nregions = [\"us\", \"us\"]\n", "each once"),
            ("[deployment]\nregions = [\"US\"]\n", "region name `US`"),
            ("[node.peers]\nus = \"us.internal:8080\"\n", "node.peers `us.internal:8080` must be an http"),
            ("[node]\nadvertise_url = \"ftp://10.0.0.7\"\n", "node.advertise_url `ftp://10.0.0.7` must be"),
            ("[deployment]\nregions = [\"ca_central\"]\n", "region name `ca_central`"),
        ] {
            let err = load(text).unwrap_err().to_string();
            assert!(err.contains(named), "{text}: {err}");
        }
    }

    #[test]
    fn a_node_advertises_its_listen_address_unless_it_listens_on_every_address() {
        let mut settings = Settings::defaults();
        settings.server.listen = "127.0.0.1:8081".into();
        assert_eq!(settings.advertised_url().as_deref(), Some("http://127.0.0.1:8081"));
        settings.server.listen = "0.0.0.0:8080".into();
        assert_eq!(settings.advertised_url(), None, "which of its addresses the others reach is not known");
        settings.node.advertise_url = Some("http://10.1.2.3:8080/".into());
        assert_eq!(settings.advertised_url().as_deref(), Some("http://10.1.2.3:8080"));
    }

    #[test]
    fn the_first_start_application_is_created_by_default_only_on_the_embedded_default() {
        let mut settings = Settings::defaults();
        assert!(settings.is_embedded() && settings.creates_first_start_application());
        settings
            .regions
            .insert(region("eu"), RegionSettings { database_url: Some("postgres://db.internal/eu".into()) });
        assert!(!settings.is_embedded() && !settings.creates_first_start_application());
        settings.regions.clear();
        settings.storage.catalog_url = Some("postgres://db.internal/catalog".into());
        assert!(!settings.creates_first_start_application());
        settings.bootstrap.first_start_application = FirstStartApplication::Always;
        assert!(settings.creates_first_start_application());
        let mut embedded = Settings::defaults();
        embedded.bootstrap.first_start_application = FirstStartApplication::Never;
        assert!(!embedded.creates_first_start_application());
    }
}
