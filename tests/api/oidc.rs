//! A real OpenID provider for the tests (`tests/interop/oidc_provider.mjs`:
//! the certified `oidc-provider` package on loopback) and a browser that
//! walks its login and consent pages.
use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
};

use reqwest::redirect::Policy;
use serde_json::{json, Value};
use url::Url;

/// The application's origin in these tests: its `redirect_uri` is here, and
/// the browser stops when it is sent here.
pub const APP_ORIGIN: &str = "http://127.0.0.1:3999";
/// A second client at the provider, for codes issued to someone else.
pub const OTHER_CLIENT: &str = "another-client";

/// A port for another process to listen on, chosen below the kernel's
/// ephemeral range (Linux: 32768 and up). A port from `bind(0)` comes from
/// that range, where an outgoing connection of a test running alongside
/// can take it before the process meant to listen on it starts (the likely
/// cause of the OpenID provider failing to start once in CI). Handed out in
/// turn from a start that differs per process; each is checked free when
/// handed out.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    loop {
        let turn = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + (std::process::id() * 7 + turn) % COUNT) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(Policy::none()).build().unwrap()
}

/// The real provider, or `None` (the test is skipped) when node or the
/// package is missing and `GATEHOUSE_TEST_REQUIRE_OIDC` is unset.
pub struct OidcProvider {
    child: Child,
}

impl OidcProvider {
    /// Clients `client_ids` (each with `secret`) may call back to `callback`;
    /// with `record`, each code verifier the token endpoint receives is
    /// appended to that file.
    pub fn start(
        port: u16,
        client_ids: &[&str],
        secret: &str,
        callback: &str,
        record: Option<&Path>,
    ) -> Option<OidcProvider> {
        let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
        let available = interop.join("node_modules/oidc-provider").is_dir()
            && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
        if !available {
            assert!(
                std::env::var_os("GATEHOUSE_TEST_REQUIRE_OIDC").is_none(),
                "GATEHOUSE_TEST_REQUIRE_OIDC is set but node or tests/interop/node_modules is missing (npm ci --prefix tests/interop)"
            );
            eprintln!("SKIPPED: the provider sign-in test needs node and `npm ci --prefix tests/interop`");
            return None;
        }
        let clients: Vec<Value> = client_ids
            .iter()
            .map(|id| json!({"client_id": id, "client_secret": secret, "redirect_uris": [callback]}))
            .collect();
        let config = json!({"port": port, "clients": clients, "record": record});
        let mut child = Command::new("node")
            .current_dir(&interop)
            .args(["oidc_provider.mjs", &config.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "oidc-provider did not start");
        Some(OidcProvider { child })
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser as far as the flow needs one: follows redirects itself,
/// keeps cookies (all on 127.0.0.1), and submits the provider's login and
/// consent forms, until it is sent to the application.
pub struct Browser {
    client: reqwest::Client,
    cookies: BTreeMap<String, String>,
    login: String,
}

impl Browser {
    pub fn new(login: &str) -> Browser {
        Browser { client: no_redirects(), cookies: BTreeMap::new(), login: login.into() }
    }

    /// This browser, holding `cookies` already (another client's, on 127.0.0.1 too).
    pub fn with_cookies(mut self, cookies: &BTreeMap<String, String>) -> Browser {
        self.cookies.extend(cookies.clone());
        self
    }

    /// Follows `url` until a redirect to the application; answers that URL.
    pub async fn until_application(&mut self, url: String) -> String {
        self.until(url, APP_ORIGIN).await
    }

    /// Follows `url` until it is sent to a URL starting with `stop`.
    pub async fn until(&mut self, mut url: String, stop: &str) -> String {
        let mut form: Option<(String, Vec<(String, String)>)> = None;
        for _ in 0..20 {
            if form.is_none() && url.starts_with(stop) {
                return url;
            }
            let request = match form.take() {
                Some((action, fields)) => self.client.post(&action).form(&fields),
                None => self.client.get(&url),
            };
            let cookie = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
            let response = crate::examples::send(request.header("cookie", cookie)).await;
            for set in response.headers().get_all("set-cookie") {
                let pair = set.to_str().unwrap().split(';').next().unwrap();
                if let Some((name, value)) = pair.split_once('=') {
                    self.cookies.insert(name.trim().to_string(), value.to_string());
                }
            }
            let base = Url::parse(response.url().as_str()).unwrap();
            if let Some(location) = response.headers().get("location") {
                url = base.join(location.to_str().unwrap()).unwrap().to_string();
                continue;
            }
            let status = response.status();
            let html = response.text().await.unwrap();
            let (action, mut fields) = parse_form(&html).unwrap_or_else(|| panic!("{status} at {url}: {html}"));
            if fields.iter().any(|(name, _)| name == "login") {
                fields.retain(|(name, _)| name != "login" && name != "password");
                fields.push(("login".into(), self.login.clone()));
                fields.push(("password".into(), "any password".into()));
            }
            form = Some((base.join(&action).unwrap().to_string(), fields));
        }
        panic!("the flow did not reach {stop}");
    }
}

/// The form of a page: its action and its inputs' names and values.
fn parse_form(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let attribute = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        Some(tag[start..].split('"').next()?.replace("&amp;", "&"))
    };
    let form = &html[html.find("<form")?..];
    let action = attribute(&form[..form.find('>')?], "action")?;
    let fields = form
        .split("<input")
        .skip(1)
        .filter_map(|rest| {
            let tag = &rest[..rest.find('>')?];
            Some((attribute(tag, "name")?, attribute(tag, "value").unwrap_or_default()))
        })
        .collect();
    Some((action, fields))
}
