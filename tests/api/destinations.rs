//! Issue 35, items 3 and 4: every outbound destination (webhooks, hooks,
//! the SMTP messaging provider) is checked against one address table, at
//! registration and again on every address a name resolves to at send time;
//! whether development applications may reach private addresses is the
//! operator's setting; an SMTP send is bounded and capped per application.
//!
//! Only loopback is ever dialled here: `10.255.255.1` and `169.254.169.254`
//! must be refused before any connection, which the answer's speed shows (a
//! dial to a filtered address would wait out the connect timeout).
use std::{
    net::TcpListener,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use gatehouse::areas::messaging::{self, CheckedUpdate};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    binary::Binary,
    helpers::{spawn_app, spawn_with, Caller, Reply, TestApp},
    webhooks::start_receiver,
};

/// The spellings of internal addresses an attack run configured as an SMTP host.
const INTERNAL_HOSTS: [&str; 7] =
    ["127.0.0.1", "localhost", "2130706433", "127.1", "0", "169.254.169.254", "10.255.255.1"];

/// A loopback listener that counts the connections it accepts and holds
/// each open without a word (an SMTP server that never greets).
struct SilentServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
    _held: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl SilentServer {
    fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (count, keep) = (accepted.clone(), held.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                keep.lock().unwrap().push(stream);
            }
        });
        SilentServer { port, accepted, _held: held }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

fn provider_path(caller: &Caller) -> String {
    format!("/v1/applications/{}/providers/messaging", caller.application_id)
}

async fn put_smtp(app: &TestApp, caller: &Caller, config: &Value) -> Reply {
    let body = json!({"channel": "email", "kind": "smtp", "config": config});
    app.send(caller, Method::PUT, &provider_path(caller), Some(&body)).await
}

async fn test_send(app: &TestApp, caller: &Caller) -> Reply {
    let body = json!({"channel": "email", "to": "someone@example.com"});
    app.send(caller, Method::POST, &format!("{}/test", provider_path(caller)), Some(&body)).await
}

/// Stores the settings as a migration or an older release could have,
/// past the rules of operation 2: what the check at send time must catch.
async fn store_unchecked(app: &TestApp, caller: &Caller, config: Value) {
    let id: Uuid = caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let scope = gatehouse::auth::public_scope(&app.state, tenant).unwrap();
    let update = CheckedUpdate { channel: "email".into(), kind: "smtp".into(), config, secret: None };
    let upsert = move |turn: gatehouse::tenancy::InTurn| async move { messaging::upsert(&turn, update).await };
    app.state.tenants.change(&scope, upsert).await.unwrap();
}

/// Every spelling of an internal host is refused when it is configured, and
/// one that slipped in is refused at send time without a connection: the
/// listener on 127.0.0.1 is never dialled, the provider is `failing` with
/// `blocked_destination`, and the answer comes at once.
#[actix_web::test]
async fn a_production_smtp_provider_at_an_internal_address_is_refused_without_a_connection() {
    let app = spawn_app().await;
    let listener = SilentServer::start();
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    // The operator's setting does not matter for production: on here, off below.
    let strict = spawn_with(|s| s.security.allow_private_destinations = Some(false)).await;
    let cases = [(&app, &production), (&strict, &strict.caller)];
    for (app, caller) in cases {
        for host in INTERNAL_HOSTS {
            let config = json!({"host": host, "port": listener.port, "from": "no-reply@example.com", "starttls": true});
            let refused = put_smtp(app, caller, &config).await;
            assert_eq!(refused.status, 422, "{host} configured: {:?}", refused.body);
            assert_eq!(refused.error_code(), "validation_failed");
            assert!(refused.body.to_string().contains("config.host"), "{:?}", refused.body);

            store_unchecked(app, caller, config).await;
            let started = Instant::now();
            let sent = test_send(app, caller).await;
            assert_eq!(sent.status, 503, "{host} at send time: {:?}", sent.body);
            assert_eq!(sent.error_code(), "unavailable");
            let message = sent.body["error"]["message"].as_str().unwrap_or_default().to_string();
            assert!(message.contains("blocked_destination"), "{host}: {message}");
            assert!(started.elapsed() < Duration::from_secs(3), "{host} took {:?}", started.elapsed());
            let listed = app.send(caller, Method::GET, &provider_path(caller), None).await;
            assert_eq!(listed.data()[0]["status"], "failing", "{host}");
        }
    }
    // Every send was answered: refused before any dial.
    assert_eq!(listener.accepted(), 0, "an internal SMTP host was dialled");
}

/// A server that accepts and never greets holds a test send no longer than
/// the send's deadline (10 s), and an application has at most 4 sends in
/// flight: of 6 at once, 4 connect and the rest wait for a slot.
#[actix_web::test]
async fn an_smtp_server_that_never_greets_is_bounded_and_sends_are_capped_per_application() {
    let app = spawn_app().await;
    let silent = SilentServer::start();
    let config = json!({"host": "127.0.0.1", "port": silent.port, "from": "no-reply@example.com"});
    let stored = put_smtp(&app, &app.caller, &config).await;
    assert_eq!(stored.status, 200, "{:?}", stored.body);

    let started = Instant::now();
    let sends = futures_util::future::join_all((0..6).map(|_| test_send(&app, &app.caller)));
    let watch = async {
        crate::wait::until("four sends to connect", || async { silent.accepted() >= 4 }).await;
        // An absence: a fifth connection while the four are held would be unannounced.
        let held = || async { silent.accepted() == 4 };
        crate::wait::stays("four sends in flight for one application, no more", Duration::from_secs(2), held).await;
    };
    let (answers, ()) = tokio::join!(sends, watch);
    // A bound that tells mechanisms apart: each send's deadline counts from its start,
    // so the two that waited for a slot do not add a second 10 s.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "the sends took {took:?}");
    for answer in &answers {
        assert_eq!(answer.status, 503, "{:?}", answer.body);
        assert_eq!(answer.error_code(), "unavailable");
    }
    let timed_out = answers
        .iter()
        .filter(|a| a.body["error"]["message"].as_str().unwrap_or_default().contains("did not answer in time"))
        .count();
    assert!(timed_out >= 4, "{answers:?}");
    assert!(silent.accepted() <= 6);
}

/// Whether development applications reach private destinations is the
/// operator's setting: off, a development application's webhook, hook and
/// SMTP host on 127.0.0.1 are refused as a production one's are; on (as the
/// tests' helper sets it), they are allowed.
#[actix_web::test]
async fn private_destinations_of_development_applications_follow_the_operators_setting() {
    let receiver = start_receiver(vec![]).await;
    let webhook = json!({"url": receiver.url, "event_types": ["api_key"]});
    let hook = json!({"point": "pre_sign_up", "url": receiver.url});
    let smtp = json!({"host": "127.0.0.1", "port": 2525, "from": "no-reply@example.com"});

    let strict = spawn_with(|s| s.security.allow_private_destinations = Some(false)).await;
    let refused = strict.post("/v1/webhooks", &webhook).await;
    assert_eq!(refused.status, 422, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "invalid_url");
    let refused = strict.post("/v1/hooks", &hook).await;
    assert_eq!(refused.status, 422, "{:?}", refused.body);
    let refused = put_smtp(&strict, &strict.caller, &smtp).await;
    assert_eq!(refused.status, 422, "{:?}", refused.body);

    let open = spawn_app().await;
    assert_eq!(open.post("/v1/webhooks", &webhook).await.status, 201);
    assert_eq!(open.post("/v1/hooks", &hook).await.status, 201);
    assert_eq!(put_smtp(&open, &open.caller, &smtp).await.status, 200);
}

/// `serve` on the embedded default says at start-up that private
/// destinations are allowed; with the setting off it says nothing of them.
#[actix_web::test]
async fn serve_says_at_start_up_when_private_destinations_are_allowed() {
    for (setting, expected) in [(None, true), (Some("false"), false)] {
        let mut binary = Binary::new(&[("RUST_LOG", "info".into())]);
        if let Some(value) = setting {
            binary.add_env("GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS", value.into());
        }
        binary.bootstrap();
        let log = binary.dir.path().join("serve.log");
        let mut child = binary.serve(Some(std::fs::File::create(&log).unwrap())).await;
        let _ = child.kill();
        let _ = child.wait();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.contains("private destinations allowed"), expected, "{setting:?}: {text}");
    }
}
