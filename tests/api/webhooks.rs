//! Operation 4: endpoints, and delivery to a real receiver on loopback.
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use base64::{engine::general_purpose::STANDARD, Engine};
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{
    helpers::{first_shard, spawn_with, TestApp},
    wait,
};

#[derive(Clone, Debug)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: String,
    pub at: std::time::Instant,
}

/// An HTTP receiver answering statuses from a script (then 200); a 429
/// carries `Retry-After: 1`.
pub struct Receiver {
    pub url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
}

#[derive(Clone)]
struct Script {
    answers: Arc<Mutex<VecDeque<u16>>>,
    received: Arc<Mutex<Vec<Received>>>,
    /// How long each answer takes (after the delivery is recorded as received).
    delay: Duration,
}

async fn receive(req: HttpRequest, body: web::Bytes, script: web::Data<Script>) -> HttpResponse {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    script.received.lock().unwrap().push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8_lossy(&body).into_owned(),
        at: std::time::Instant::now(),
    });
    tokio::time::sleep(script.delay).await;
    let status = script.answers.lock().unwrap().pop_front().unwrap_or(200);
    let mut answer = HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap());
    if status == 429 {
        answer.insert_header(("Retry-After", "1"));
    }
    answer.finish()
}

pub async fn start_receiver(answers: Vec<u16>) -> Receiver {
    start_slow_receiver(answers, Duration::ZERO).await
}

/// [`start_receiver`] whose every answer takes `delay`.
pub async fn start_slow_receiver(answers: Vec<u16>, delay: Duration) -> Receiver {
    let script = Script { answers: Arc::new(Mutex::new(answers.into())), received: Arc::default(), delay };
    let received = script.received.clone();
    let data = web::Data::new(script);
    let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(receive)))
        .workers(2)
        .bind("127.0.0.1:0")
        .unwrap();
    let port = server.addrs()[0].port();
    actix_web::rt::spawn(server.run());
    Receiver { url: format!("http://127.0.0.1:{port}/hook"), received }
}

impl Receiver {
    pub async fn wait_for(&self, count: usize) -> Vec<Received> {
        wait::until(&format!("{count} deliveries"), || async { self.received.lock().unwrap().len() >= count }).await;
        self.received.lock().unwrap().clone()
    }

    /// The first delivery whose body holds `needle`, once it has come.
    pub async fn wait_for_body(&self, needle: &str) -> Received {
        wait::until_some(&format!("a delivery holding {needle}"), || async {
            self.received.lock().unwrap().iter().find(|d| d.body.contains(needle)).cloned()
        })
        .await
    }
}

/// The endpoint's deliveries once its newest message reached `status`
/// (its attempts all recorded).
async fn settled(app: &TestApp, id: &str, status: &str) -> crate::helpers::Reply {
    wait::until_some(&format!("the newest message to be {status}"), || async {
        let deliveries = app.get(&format!("/v1/webhooks/{id}/deliveries")).await;
        (deliveries.data()[0]["status"] == status).then_some(deliveries)
    })
    .await
}

/// Standard Webhooks verification, written here from the specification.
pub fn verifies(secret: &str, delivery: &Received) -> bool {
    let key = STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.{}", delivery.id, delivery.timestamp, delivery.body).as_bytes());
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    delivery.signature.split(' ').any(|s| s == expected)
}

async fn fast_app() -> TestApp {
    spawn_with(|s| {
        s.webhooks.poll_interval_ms = 20;
        s.webhooks.retry_schedule = "0s,100ms,100ms".into();
    })
    .await
}

async fn register(app: &TestApp, receiver: &Receiver, event_types: Value) -> (String, String) {
    let created = app.post("/v1/webhooks", &json!({"url": receiver.url, "event_types": event_types})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    (created.data()["id"].as_str().unwrap().to_string(), created.data()["secret"].as_str().unwrap().to_string())
}

#[actix_web::test]
async fn an_event_is_delivered_signed_with_the_endpoints_secret() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![]).await;
    let (id, secret) = register(&app, &receiver, json!(["api_key"])).await;
    assert!(secret.starts_with("whsec_") && STANDARD.decode(&secret[6..]).unwrap().len() == 32);
    let key = app.post("/v1/api-keys", &json!({"name": "ci"})).await;

    let delivered = receiver.wait_for(1).await;
    assert_eq!(delivered.len(), 1);
    assert!(verifies(&secret, &delivered[0]));
    let body: Value = serde_json::from_str(&delivered[0].body).unwrap();
    assert_eq!(body["type"], "api_key.created");
    assert_eq!(body["data"]["aggregate_id"], key.data()["id"]);
    assert!(body["timestamp"].is_string());
    let tampered = Received { body: delivered[0].body.replace("ci", "cj"), ..delivered[0].clone() };
    assert!(!verifies(&secret, &tampered));

    let fetched = app.get(&format!("/v1/webhooks/{id}")).await;
    assert!(fetched.data().get("secret").is_none());
    let deliveries = settled(&app, &id, "succeeded").await;
    let message = &deliveries.data()[0];
    assert_eq!(message["id"], delivered[0].id.as_str());
    assert_eq!(message["status"], "succeeded");
    assert_eq!(message["attempts"][0]["response_status"], 200);
}

#[actix_web::test]
async fn a_failing_receiver_gets_the_same_message_again_until_it_answers_2xx() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![500, 500, 200]).await;
    let (id, secret) = register(&app, &receiver, json!(["api_key.created"])).await;
    app.post("/v1/api-keys", &json!({"name": "retry-me"})).await;
    let delivered = receiver.wait_for(3).await;
    assert_eq!(delivered.len(), 3);
    assert!(delivered.iter().all(|d| d.id == delivered[0].id), "one webhook-id for every attempt");
    assert!(delivered.iter().all(|d| verifies(&secret, d)));
    let deliveries = settled(&app, &id, "succeeded").await;
    let attempts: Vec<Value> = deliveries.data()[0]["attempts"].as_array().unwrap().clone();
    assert_eq!(
        attempts.iter().map(|a| a["response_status"].clone()).collect::<Vec<_>>(),
        [json!(500), json!(500), json!(200)]
    );
    assert_eq!(deliveries.data()[0]["status"], "succeeded");
    assert_eq!(app.get(&format!("/v1/webhooks/{id}")).await.data()["status"], "active");
}

#[actix_web::test]
async fn a_410_disables_the_endpoint_and_the_disabling_is_recorded() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![410]).await;
    let (id, _) = register(&app, &receiver, json!(["api_key"])).await;
    app.post("/v1/api-keys", &json!({"name": "gone"})).await;
    receiver.wait_for(1).await;
    wait::until("the endpoint to be disabled", || async {
        app.get(&format!("/v1/webhooks/{id}")).await.data()["status"] == "disabled"
    })
    .await;
    assert!(app.audit_types().await.contains(&"webhook.endpoint.disabled".to_string()));
    app.post("/v1/api-keys", &json!({"name": "after"})).await;
    // Messages are queued in the write's own transaction: none was for it.
    let deliveries = app.get(&format!("/v1/webhooks/{id}/deliveries")).await;
    assert_eq!(deliveries.data().as_array().unwrap().len(), 1, "a disabled endpoint gets nothing");
    assert_eq!(receiver.received.lock().unwrap().len(), 1);
}

#[actix_web::test]
async fn a_message_that_exhausts_the_schedule_fails_and_disables_the_endpoint() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![500; 10]).await;
    let (id, _) = register(&app, &receiver, json!(["api_key"])).await;
    app.post("/v1/api-keys", &json!({"name": "doomed"})).await;
    let delivered = receiver.wait_for(3).await;
    assert_eq!(delivered.len(), 3, "one attempt per entry of the schedule");
    let deliveries = settled(&app, &id, "failed").await;
    assert_eq!(deliveries.data()[0]["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(receiver.received.lock().unwrap().len(), 3);
    assert_eq!(app.get(&format!("/v1/webhooks/{id}")).await.data()["status"], "disabled");
}

#[actix_web::test]
async fn filters_take_only_their_types_and_a_retry_resends_the_same_message() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![]).await;
    let (id, _) = register(&app, &receiver, json!(["application"])).await;
    app.post("/v1/api-keys", &json!({"name": "not-for-this-endpoint"})).await;
    app.patch(&format!("/v1/applications/{}", app.caller.application_id), &json!({"name": "Renamed"})).await;
    let delivered = receiver.wait_for(1).await;
    // Messages are queued in the write's own transaction: the key's was not.
    assert_eq!(app.get(&format!("/v1/webhooks/{id}/deliveries")).await.data().as_array().unwrap().len(), 1);
    assert!(delivered[0].body.contains("application.updated"));
    let retried = app.post(&format!("/v1/webhooks/{id}/deliveries/{}/retry", delivered[0].id), &json!({})).await;
    assert_eq!(retried.status, 200, "{:?}", retried.body);
    let again = receiver.wait_for(2).await;
    assert_eq!(again[1].id, delivered[0].id);
    app.patch(&format!("/v1/webhooks/{id}"), &json!({"status": "disabled"})).await;
    let refused = app.post(&format!("/v1/webhooks/{id}/deliveries/{}/retry", delivered[0].id), &json!({})).await;
    assert_eq!((refused.status, refused.error_code()), (409, "conflict"), "a disabled endpoint is enabled first");
}

#[actix_web::test]
async fn after_a_rotation_deliveries_carry_both_signatures() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![]).await;
    let (id, old) = register(&app, &receiver, json!(["api_key"])).await;
    let rotated = app.post(&format!("/v1/webhooks/{id}/rotate-secret"), &json!({})).await;
    assert_eq!(rotated.status, 200);
    let new = rotated.data()["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    app.post("/v1/api-keys", &json!({"name": "rotated"})).await;
    let delivered = receiver.wait_for(1).await;
    assert_eq!(delivered[0].signature.split(' ').count(), 2);
    assert!(verifies(&new, &delivered[0]) && verifies(&old, &delivered[0]));
}

#[actix_web::test]
async fn unsafe_or_malformed_urls_are_422_invalid_url_and_store_nothing() {
    let app = fast_app().await;
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    for url in [
        "",
        "ftp://example.com/",
        "http://user:pw@127.0.0.1/",
        "not a url",
        "http://127.0.0.1:1/a\u{7}b",
        &format!("https://example.com/{}", "a".repeat(2050)),
    ] {
        let reply = app.post("/v1/webhooks", &json!({"url": url})).await;
        assert_eq!((reply.status, reply.error_code()), (422, "invalid_url"), "{url}");
    }
    // A NUL is refused for every field of every body, before the url rules.
    let reply = app.post("/v1/webhooks", &json!({"url": "http://127.0.0.1:1/a\u{0}b"})).await;
    assert_eq!((reply.status, reply.body["error"]["details"][0]["field"].as_str()), (422, Some("url")));
    for url in [
        "http://hooks.example.com/",
        "https://127.0.0.1/",
        "https://2130706433/",
        "https://[::ffff:127.0.0.1]/",
        "https://169.254.169.254/",
        "https://localhost/",
    ] {
        let reply = app.send(&production, Method::POST, "/v1/webhooks", Some(&json!({"url": url}))).await;
        assert_eq!((reply.status, reply.error_code()), (422, "invalid_url"), "{url}");
    }
    let bad_types = app.post("/v1/webhooks", &json!({"url": "http://127.0.0.1:1/", "event_types": ["Bad Type"]})).await;
    assert_eq!((bad_types.status, bad_types.error_code()), (422, "validation_failed"));
    assert_eq!(app.get("/v1/webhooks").await.data().as_array().unwrap().len(), 0);
    assert_eq!(app.send(&production, Method::GET, "/v1/webhooks", None).await.data().as_array().unwrap().len(), 0);
}

#[actix_web::test]
async fn another_tenants_webhook_is_404_everywhere() {
    let app = fast_app().await;
    let other = app.other_account().await;
    let receiver = start_receiver(vec![]).await;
    let (id, _) = register(&app, &receiver, json!([])).await;
    for (method, path) in [
        (Method::GET, format!("/v1/webhooks/{id}")),
        (Method::DELETE, format!("/v1/webhooks/{id}")),
        (Method::GET, format!("/v1/webhooks/{id}/deliveries")),
        (Method::POST, format!("/v1/webhooks/{id}/rotate-secret")),
    ] {
        let reply = app.send(&other, method.clone(), &path, None).await;
        assert_eq!((reply.status, reply.error_code()), (404, "not_found"), "{method} {path}");
    }
    let patched =
        app.send(&other, Method::PATCH, &format!("/v1/webhooks/{id}"), Some(&json!({"status": "disabled"}))).await;
    assert_eq!(patched.status, 404);
    assert_eq!(app.get(&format!("/v1/webhooks/{id}")).await.data()["status"], "active");
}

#[actix_web::test]
async fn an_endpoint_can_be_disabled_changed_and_deleted() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![]).await;
    let (id, _) = register(&app, &receiver, json!([])).await;
    let patched = app
        .patch(
            &format!("/v1/webhooks/{id}"),
            &json!({"status": "disabled", "description": "paused", "event_types": ["user"]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(
        (patched.data()["status"].as_str(), patched.data()["description"].as_str()),
        (Some("disabled"), Some("paused"))
    );
    let cleared = app.patch(&format!("/v1/webhooks/{id}"), &json!({"description": null})).await;
    assert!(cleared.data()["description"].is_null());
    assert_eq!(app.patch(&format!("/v1/webhooks/{id}"), &json!({"status": "paused"})).await.status, 422);
    let deleted = app.send(&app.caller, Method::DELETE, &format!("/v1/webhooks/{id}"), None).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(app.get(&format!("/v1/webhooks/{id}")).await.status, 404);
    let types = app.audit_types().await;
    for t in ["webhook.created", "webhook.updated", "webhook.deleted"] {
        assert!(types.contains(&t.to_string()), "{t}");
    }
}

#[actix_web::test]
async fn a_redirect_is_a_failed_attempt_and_is_not_followed() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![302, 200]).await;
    let (id, _) = register(&app, &receiver, json!(["api_key"])).await;
    app.post("/v1/api-keys", &json!({"name": "redirected"})).await;
    let delivered = receiver.wait_for(2).await;
    assert_eq!(delivered.len(), 2, "the retry came back to the registered URL");
    let attempts = settled(&app, &id, "succeeded").await.data()[0]["attempts"].clone();
    assert_eq!((attempts[0]["response_status"].as_i64(), attempts[0]["error"].as_str()), (Some(302), Some("redirect")));
    assert_eq!(attempts[1]["response_status"], 200);
}

#[actix_web::test]
async fn a_production_endpoint_pointing_inside_is_refused_at_delivery_time() {
    use entity::webhook;
    use sea_orm::{sea_query::Expr, ColumnTrait, EntityTrait, QueryFilter};
    let app = fast_app().await;
    let production = app.create_application(json!({"name": "Prod", "environment": "production"})).await;
    let receiver = start_receiver(vec![]).await;
    let created = app
        .send(
            &production,
            Method::POST,
            "/v1/webhooks",
            Some(&json!({"url": "https://hooks.example.com/x", "event_types": ["api_key"]})),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id: uuid::Uuid = created.data()["id"].as_str().unwrap().parse().unwrap();
    // As if a row were changed behind the API's back (or a name now resolved inside).
    webhook::Entity::update_many()
        .col_expr(webhook::Column::Url, Expr::value(receiver.url.replace("http://", "https://")))
        .filter(webhook::Column::Id.eq(id))
        .exec(&app.state.storage.shard(first_shard("us")).unwrap().conn)
        .await
        .unwrap();
    app.send(&production, Method::POST, "/v1/api-keys", Some(&json!({"name": "x"}))).await;
    let error = wait::until_some("the refused attempt to be recorded", || async {
        let deliveries = app.send(&production, Method::GET, &format!("/v1/webhooks/{id}/deliveries"), None).await;
        Some(deliveries.data()[0]["attempts"][0]["error"].clone()).filter(|error| !error.is_null())
    })
    .await;
    assert_eq!(error, "blocked_destination");
    assert!(receiver.received.lock().unwrap().is_empty(), "nothing was sent inside");
}

#[actix_web::test]
async fn retry_after_is_honoured() {
    let app = fast_app().await;
    let receiver = start_receiver(vec![429, 200]).await;
    register(&app, &receiver, json!(["api_key"])).await;
    app.post("/v1/api-keys", &json!({"name": "slow-down"})).await;
    let delivered = receiver.wait_for(2).await;
    assert_eq!(delivered.len(), 2);
    let waited = delivered[1].at - delivered[0].at;
    assert!(waited >= Duration::from_millis(950), "retried after {waited:?}, before the 1 s it was asked to wait");
}

/// A change is queued for the endpoints of its moment: each change of them
/// (created, disabled, refiltered, enabled again, deleted) holds for the
/// next change of the application, and for no earlier one. (A cache of the
/// endpoints between changes would have to keep this.)
#[actix_web::test]
async fn each_change_is_queued_for_the_endpoints_of_its_moment() {
    let app = fast_app().await;
    let (first, second) = (start_receiver(vec![]).await, start_receiver(vec![]).await);
    let organization = |name: &'static str| {
        let app = &app;
        async move {
            let created = app.post("/v1/organizations", &json!({"name": name})).await;
            assert_eq!(created.status, 201, "{:?}", created.body);
            created.data()["id"].as_str().unwrap().to_string()
        }
    };
    let (a, _) = register(&app, &first, json!([])).await;
    let before = organization("before").await;
    first.wait_for_body(&before).await;

    let patch = |id: String, body: Value| {
        let app = &app;
        async move { assert_eq!(app.patch(&format!("/v1/webhooks/{id}"), &body).await.status, 200) }
    };
    patch(a.clone(), json!({"status": "disabled"})).await;
    let (b, _) = register(&app, &second, json!(["organization"])).await;
    let while_disabled = organization("while disabled").await;
    second.wait_for_body(&while_disabled).await;

    patch(a.clone(), json!({"status": "active", "event_types": ["user"]})).await;
    let while_filtered = organization("while filtered").await;
    second.wait_for_body(&while_filtered).await;

    patch(a.clone(), json!({"event_types": []})).await;
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/webhooks/{b}"), None).await.status, 200);
    let after = organization("after").await;
    first.wait_for_body(&after).await;

    // The messages are queued in each change's transaction: count them, no
    // need to wait for deliveries that should never come.
    let queued = |id: String| {
        let app = &app;
        async move {
            let deliveries = app.get(&format!("/v1/webhooks/{id}/deliveries?limit=100")).await;
            let messages = deliveries.data().as_array().unwrap().clone();
            messages.iter().filter(|m| m["event_type"] == "organization.created").count()
        }
    };
    assert_eq!(queued(a).await, 2, "the first endpoint takes `before` and `after` only");
    // The second is deleted: what it received (queued with the first's, delivered by now).
    let took = |id: &str| second.received.lock().unwrap().iter().any(|r| r.body.contains(id));
    assert!(!took(&before) && !took(&after), "the second endpoint takes only what came while it existed");
}
