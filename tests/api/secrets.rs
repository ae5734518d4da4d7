//! No secret leaves where it belongs: the real binary (JSON logs, our code
//! at `debug`) is given canary secrets in every field that takes one and
//! issues every kind of secret it makes; then every list, the audit export
//! and the whole log output are searched. A canary may appear nowhere; a
//! secret the server made only in the one answer that issued it (a
//! password-reset token: only in the email, here the development outbox).

use reqwest::{Client, Method};
use serde_json::{json, Value};

use crate::{
    binary::Binary,
    oidc::{free_port, no_redirects, Browser, OidcProvider, APP_ORIGIN},
};

/// Configured, not sent: the processor's signing secret.
const PROCESSOR_SECRET: &str = "canary-processor-secret-3d9b";

const PLANTED: [&str; 5] = [
    "canary-smtp-password-7f3a",
    "canary-oauth-client-secret-9c1e",
    "canary-payment-token-4b2d",
    "canary-user-password-5e8f",
    "canary-wrong-password-2a6c",
];

struct Server {
    binary: Binary,
    child: crate::binary::Serving,
    base: String,
    /// Where the `google` provider's endpoints point (a real provider is
    /// started there when node and its package are installed).
    provider_port: u16,
    application: String,
    key: String,
    client: Client,
    log: std::path::PathBuf,
}

impl Server {
    async fn start() -> Server {
        let provider_port = free_port();
        let issuer = format!("http://127.0.0.1:{provider_port}");
        let mut binary = Binary::new(&[
            ("GATEHOUSE__LOG__FORMAT", "json".into()),
            ("GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS", "20".into()),
            ("GATEHOUSE__BILLING__PROCESSOR_WEBHOOK_SECRET", PROCESSOR_SECRET.into()),
            ("GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__ISSUER", issuer.clone()),
            ("GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__AUTHORIZATION_URL", format!("{issuer}/auth")),
            ("GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__TOKEN_URL", format!("{issuer}/token")),
            ("GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__USERINFO_URL", format!("{issuer}/me")),
            ("GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__JWKS_URL", format!("{issuer}/jwks")),
            ("RUST_LOG", "info,gatehouse=debug".into()),
        ]);
        binary.add_env("GATEHOUSE__SERVER__PUBLIC_URL", binary.base.clone());
        let (application, key) = binary.bootstrap();
        let log = binary.dir.path().join("stderr.log");
        let child = binary.serve(Some(std::fs::File::create(&log).unwrap())).await;
        Server { base: binary.base.clone(), binary, child, provider_port, application, key, client: Client::new(), log }
    }

    /// Sends with the secret key (or `bearer`); answers status and body text.
    async fn call(&self, method: Method, path: &str, body: Option<Value>, bearer: Option<&str>) -> (u16, String) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(bearer.unwrap_or(&self.key))
            .header("x-application-id", &self.application);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    }

    async fn issue(&self, path: &str, body: Value, pointer: &str) -> String {
        let (status, text) = self.call(Method::POST, path, Some(body), None).await;
        assert!(status == 200 || status == 201, "{path}: {status} {text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{path}: no {pointer} in {text}"))
            .into()
    }
}

#[tokio::test]
async fn no_secret_appears_in_lists_the_audit_export_or_the_logs() {
    let server = Server::start().await;
    let app = server.application.clone();
    let [smtp, oauth, payment, password, wrong] = PLANTED;

    // Every field that takes a secret gets a canary.
    let settings = [
        (
            format!("/v1/applications/{app}/providers/messaging"),
            json!({"channel": "email", "kind": "smtp", "secret": smtp,
                   "config": {"host": "127.0.0.1", "port": 2525, "username": "u", "from": "a@example.com"}}),
        ),
        (
            format!("/v1/applications/{app}/providers/oauth"),
            json!({"provider": "google", "enabled": true, "client_id": "client", "client_secret": oauth}),
        ),
        ("/v1/billing/payment-method".to_string(), json!({"brand": "visa", "last4": "4242", "token": payment})),
    ];
    for (path, body) in settings {
        let (status, text) = server.call(Method::PUT, &path, Some(body), None).await;
        assert_eq!(status, 200, "{path}: {text}");
    }
    let sign_up = json!({"email": "canary@example.com", "password": password});
    let (status, signed_up) = server.call(Method::POST, "/v1/auth/sign-up", Some(sign_up), None).await;
    assert_eq!(status, 201, "{signed_up}");
    let wrong_sign_in = json!({"email": "canary@example.com", "password": wrong});
    assert_eq!(server.call(Method::POST, "/v1/auth/sign-in", Some(wrong_sign_in), None).await.0, 401);

    // Every kind of secret the server makes, each answered once.
    let signed_up: Value = serde_json::from_str(&signed_up).unwrap();
    let access = signed_up["data"]["access_token"].as_str().unwrap().to_string();
    let refresh = signed_up["data"]["refresh_token"].as_str().unwrap().to_string();
    let (status, refreshed) =
        server.call(Method::POST, "/v1/auth/token", Some(json!({"refresh_token": refresh})), None).await;
    assert_eq!(status, 200, "{refreshed}");
    let refreshed: Value = serde_json::from_str(&refreshed).unwrap();
    let account = server.issue("/v1/service-accounts", json!({"name": "robot"}), "/data/id").await;
    let group = server.issue("/v1/os/host-groups", json!({"name": "fleet"}), "/data/id").await;
    let mut issued = vec![
        server.key.clone(),
        access.clone(),
        refresh,
        refreshed["data"]["refresh_token"].as_str().unwrap().to_string(),
        server.issue("/v1/api-keys", json!({"name": "second"}), "/data/secret").await,
        server.issue("/v1/webhooks", json!({"url": "http://127.0.0.1:9/hook"}), "/data/secret").await,
        server.issue("/v1/hooks", json!({"point": "pre_sign_up", "url": "http://127.0.0.1:9/h"}), "/data/secret").await,
        server.issue(&format!("/v1/service-accounts/{account}/keys"), json!({"name": "k"}), "/data/secret").await,
        server
            .issue("/v1/os/enrollment-tokens", json!({"label": "l", "host_group_id": group}), "/data/token_secret")
            .await,
    ];
    let (status, personal) =
        server.call(Method::POST, "/v1/auth/me/api-keys", Some(json!({"name": "mine"})), Some(&access)).await;
    assert_eq!(status, 201, "{personal}");
    issued.push(serde_json::from_str::<Value>(&personal).unwrap()["data"]["secret"].as_str().unwrap().into());
    issued.extend(sign_in_with_the_provider(&server, oauth).await);
    // The webhook's deliveries fail (nothing listens on port 9): their log lines are searched too.
    let (_, webhooks) = server.call(Method::GET, "/v1/webhooks", None, None).await;
    let webhook = serde_json::from_str::<Value>(&webhooks).unwrap()["data"][0]["id"].as_str().unwrap().to_string();
    crate::wait::until("a failed delivery attempt", || async {
        let (_, text) = server.call(Method::GET, &format!("/v1/webhooks/{webhook}/deliveries"), None, None).await;
        let deliveries = serde_json::from_str::<Value>(&text).unwrap();
        deliveries["data"].as_array().unwrap().iter().any(|d| !d["attempts"].as_array().unwrap().is_empty())
    })
    .await;

    // Everything readable afterwards.
    let mut read = String::new();
    let lists = [
        "/v1/audit-logs/export?limit=1000",
        "/v1/api-keys",
        "/v1/webhooks",
        "/v1/users",
        "/v1/service-accounts",
        "/v1/os/enrollment-tokens",
        "/v1/billing/payment-method",
    ];
    for path in lists.iter().map(|p| p.to_string()).chain([
        format!("/v1/applications/{app}/providers/messaging"),
        format!("/v1/applications/{app}/providers/oauth"),
        format!("/v1/service-accounts/{account}/keys"),
    ]) {
        let (status, text) = server.call(Method::GET, &path, None, None).await;
        assert_eq!(status, 200, "{path}: {text}");
        read.push_str(&text);
    }
    let (_, mine) = server.call(Method::GET, "/v1/auth/me/api-keys", None, Some(&access)).await;
    read.push_str(&mine);
    // After the lists: it replaces the planted SMTP provider.
    issued.push(password_reset_token(&server).await);
    let (_, audit) = server.call(Method::GET, "/v1/audit-logs/export?limit=1000", None, None).await;
    read.push_str(&audit);
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let logs = std::fs::read_to_string(&server.log).unwrap();
    assert!(logs.lines().any(|l| l.contains("request_id")), "the logs were captured");

    for secret in PLANTED.iter().chain([&PROCESSOR_SECRET]).map(|s| s.to_string()).chain(issued) {
        assert!(!read.contains(&secret), "a list or the audit export shows `{secret}`");
        assert!(!logs.contains(&secret), "the logs show `{secret}`");
    }
}

/// A whole sign-in with the real provider (the `google` client's secret is
/// the planted canary), when node and its package are installed. Answers
/// every secret it saw: the `state`, the provider's code, the PKCE
/// verifiers (ours, as the provider received it, and the application's),
/// the one-time code and the tokens it was exchanged for.
async fn sign_in_with_the_provider(server: &Server, client_secret: &str) -> Vec<String> {
    let record = server.binary.dir.path().join("verifiers");
    let callback = format!("{}/v1/auth/oauth/google/callback", server.base);
    let Some(_provider) =
        OidcProvider::start(server.provider_port, &["client"], client_secret, &callback, Some(&record))
    else {
        return Vec::new();
    };
    let path = format!("/v1/applications/{}", server.application);
    let (status, text) = server.call(Method::PATCH, &path, Some(json!({"allowed_origins": [APP_ORIGIN]})), None).await;
    assert_eq!(status, 200, "{text}");
    let app_verifier = gatehouse::oauth::random_token(32);
    let mut start = url::Url::parse(&format!("{}/v1/auth/oauth/google/start", server.base)).unwrap();
    start
        .query_pairs_mut()
        .append_pair("application_id", &server.application)
        .append_pair("redirect_uri", &format!("{APP_ORIGIN}/done"))
        .append_pair("code_challenge", &gatehouse::oauth::pkce_challenge(&app_verifier));
    let started = no_redirects().get(start).send().await.unwrap();
    let authorization = started.headers()["location"].to_str().unwrap().to_string();
    let param = |url: &str, name: &str| {
        let url = url::Url::parse(url).unwrap();
        url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap_or_else(|| panic!("{url}"))
    };
    let state = param(&authorization, "state");
    let mut browser = Browser::new("canary");
    let called_back = browser.until(authorization, &callback).await;
    let provider_code = param(&called_back, "code");
    let back = browser.until_application(called_back).await;
    let code = param(&back, "code");
    let exchange = json!({"code": code, "code_verifier": app_verifier});
    let (status, text) = server.call(Method::POST, "/v1/auth/oauth/exchange", Some(exchange), None).await;
    assert_eq!(status, 200, "{text}");
    let tokens: Value = serde_json::from_str(&text).unwrap();
    let verifiers = std::fs::read_to_string(&record).unwrap();
    let mut seen = vec![state, provider_code, code, app_verifier];
    seen.extend(verifiers.lines().map(str::to_string));
    assert_eq!(seen.len(), 5, "the provider received one verifier");
    for token in ["access_token", "refresh_token"] {
        seen.push(tokens["data"][token].as_str().unwrap().to_string());
    }
    seen
}

/// A password reset asked for the canary user: the token, read from the
/// development outbox (where the email went, as it should).
async fn password_reset_token(server: &Server) -> String {
    // The SMTP provider planted above points at nothing: the development
    // `log` kind keeps the email readable instead.
    let messaging = format!("/v1/applications/{}/providers/messaging", server.application);
    let log = json!({"channel": "email", "kind": "log"});
    let (status, text) = server.call(Method::PUT, &messaging, Some(log), None).await;
    assert_eq!(status, 200, "{text}");
    let forgot = json!({"email": "canary@example.com"});
    let (status, text) = server.call(Method::POST, "/v1/auth/password/forgot", Some(forgot), None).await;
    assert_eq!(status, 202, "{text}");
    let outbox = format!("/v1/applications/{}/providers/messaging/outbox", server.application);
    crate::wait::until_some("the reset email", || async {
        let (_, text) = server.call(Method::GET, &outbox, None, None).await;
        let messages: Value = serde_json::from_str(&text).unwrap();
        let reset =
            messages["data"].as_array().unwrap().iter().find(|m| m["subject"].as_str().unwrap().contains("password"));
        reset.map(|message| message["body"].as_str().unwrap().split("\n\n").nth(2).unwrap().trim().to_string())
    })
    .await
}
