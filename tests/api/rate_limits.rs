//! The management budget per application: token buckets, shared through
//! Redis when configured, per node when Redis is unreachable.
use gatehouse::startup::Application;
use reqwest::Method;

use crate::helpers::spawn_with;

fn one_per_second(settings: &mut gatehouse::config::Settings) {
    settings.rate_limits.management_per_application_per_second = 1;
}

#[actix_web::test]
async fn past_its_burst_an_application_gets_429_with_retry_after_and_others_do_not() {
    let app = spawn_with(one_per_second).await;
    let other = app.other_account().await;
    let first = app.get("/v1/api-keys").await;
    assert_eq!(first.status, 200);
    assert_eq!((first.header("ratelimit-limit"), first.header("ratelimit-remaining")), (Some("2"), Some("1")));
    assert_eq!(app.get("/v1/api-keys").await.status, 200);
    let refused = app.get("/v1/api-keys").await;
    assert_eq!((refused.status, refused.error_code()), (429, "rate_limited"));
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.header("ratelimit-remaining"), Some("0"));
    assert_eq!(app.send(&other, Method::GET, "/v1/api-keys", None).await.status, 200);
}

#[actix_web::test]
async fn a_limit_of_zero_turns_the_budget_off() {
    let app = spawn_with(|s| s.rate_limits.management_per_application_per_second = 0).await;
    for _ in 0..5 {
        let reply = app.get("/v1/api-keys").await;
        assert_eq!((reply.status, reply.header("ratelimit-limit")), (200, None));
    }
}

#[actix_web::test]
async fn with_redis_unreachable_requests_go_on_under_the_nodes_own_buckets() {
    let app = spawn_with(|s| {
        one_per_second(s);
        s.cache.redis_url = Some("redis://127.0.0.1:1".into());
    })
    .await;
    assert_eq!(app.get("/v1/api-keys").await.status, 200);
    assert_eq!(app.get("/v1/api-keys").await.status, 200);
    assert_eq!(app.get("/v1/api-keys").await.status, 429);
}

#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_redis),
    ignore = "needs Redis: GATEHOUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo test"
)]
async fn with_redis_two_nodes_share_one_budget() {
    if std::env::var("GATEHOUSE_TEST_REDIS_URL").is_err() {
        eprintln!("GATEHOUSE_TEST_REDIS_URL is not set: the shared-budget test needs Redis (CI sets it)");
        return;
    }
    let a = spawn_with(one_per_second).await;
    let b_node = Application::build(a.storage.settings.clone()).await.expect("second node");
    let b = format!("http://127.0.0.1:{}", b_node.port());
    actix_web::rt::spawn(b_node.run_until_stopped());
    assert_eq!(a.send(&a.caller, Method::GET, "/v1/api-keys", None).await.status, 200);
    assert_eq!(a.send_at(&b, &a.caller, Method::GET, "/v1/api-keys", None).await.status, 200);
    let third = a.send(&a.caller, Method::GET, "/v1/api-keys", None).await;
    assert_eq!(third.status, 429, "the bucket is shared: {:?}", third.body);
}
