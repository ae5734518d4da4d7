//! The envelope and every status of contract §2 that is not an area's own.
use serde_json::json;

use crate::helpers::spawn_app;

#[actix_web::test]
async fn a_success_carries_the_whole_envelope_and_echoes_the_request_id() {
    let app = spawn_app().await;
    let reply = app
        .raw(
            app.client
                .get(app.url("/v1/api-keys"))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&app.caller.key)
                .header("x-request-id", "req-42"),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["success"], true);
    assert!(reply.body["error"].is_null());
    assert!(reply.data().is_array());
    assert_eq!(reply.body["meta"]["request_id"], "req-42");
    assert_eq!(reply.body["meta"]["has_more"], false);
    assert!(reply.body["meta"]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(reply.header("x-request-id"), Some("req-42"));
}

#[actix_web::test]
async fn an_unknown_route_is_404_and_a_wrong_method_is_405_in_the_envelope() {
    let app = spawn_app().await;
    let missing = app.get("/v1/no-such-thing").await;
    assert_eq!((missing.status, missing.error_code()), (404, "not_found"));
    assert_eq!(missing.body["success"], false);
    assert!(missing.body["meta"]["request_id"].as_str().is_some_and(|id| !id.is_empty()));
    let wrong = app.raw(app.client.delete(app.url("/v1/api-keys"))).await;
    assert_eq!((wrong.status, wrong.error_code()), (405, "method_not_allowed"));
}

#[actix_web::test]
async fn every_malformed_credential_is_the_same_401_with_www_authenticate() {
    let app = spawn_app().await;
    let id = &app.caller.application_id;
    let key = &app.caller.key;
    let bad_checksum = format!("{}{}", &key[..key.len() - 1], if key.ends_with('a') { 'b' } else { 'a' });
    let cases: Vec<reqwest::RequestBuilder> = vec![
        app.client.get(app.url("/v1/api-keys")).header("x-application-id", id),
        app.client
            .get(app.url("/v1/api-keys"))
            .header("x-application-id", id)
            .header("authorization", format!("bearer {key}")),
        app.client
            .get(app.url("/v1/api-keys"))
            .header("x-application-id", id)
            .header("authorization", format!("Bearer  {key}")),
        app.client
            .get(app.url("/v1/api-keys"))
            .header("x-application-id", id)
            .header("authorization", format!("Basic {key}")),
        app.client.get(app.url("/v1/api-keys")).header("x-application-id", id).header("authorization", "Bearer "),
        app.client.get(app.url("/v1/api-keys")).header("x-application-id", id).bearer_auth(&bad_checksum),
        app.client.get(app.url("/v1/api-keys")).header("x-application-id", id).bearer_auth("sk_test_short"),
        app.client.get(app.url("/v1/api-keys")).bearer_auth(key),
        app.client.get(app.url("/v1/api-keys")).header("x-application-id", "not-a-uuid").bearer_auth(key),
        app.client
            .get(app.url("/v1/api-keys"))
            .header("x-application-id", id)
            .header("authorization", format!("Bearer {key}"))
            .header("authorization", format!("Bearer {key}")),
        app.client.get(app.url(&format!("/v1/api-keys?api_key={key}"))).header("x-application-id", id),
    ];
    let mut bodies = Vec::new();
    for case in cases {
        let reply = app.raw(case).await;
        assert_eq!((reply.status, reply.error_code()), (401, "unauthenticated"), "{:?}", reply.body);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        bodies.push(reply.body["error"].clone());
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "one body for every reason");
}

#[actix_web::test]
async fn a_look_alike_key_is_refused_without_a_database_lookup() {
    let app = spawn_app().await;
    let key = &app.caller.key;
    let look_alike = format!("{}{}", &key[..key.len() - 1], if key.ends_with('a') { 'b' } else { 'a' });
    let before = app.state.metrics.render();
    let reply = app
        .raw(
            app.client
                .get(app.url("/v1/api-keys"))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&look_alike),
        )
        .await;
    assert_eq!(reply.status, 401);
    let count = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("gatehouse_auth_rejected_total{reason=\"malformed\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert!(count(&app.state.metrics.render()) >= count(&before) + 1.0);
}

#[actix_web::test]
async fn authentication_fails_before_the_body_is_read() {
    let app = spawn_app().await;
    let reply = app
        .raw(
            app.client
                .post(app.url("/v1/api-keys"))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth("sk_test_nope")
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_eq!(reply.status, 401);
}

#[actix_web::test]
async fn bad_bodies_get_their_own_4xx_and_store_nothing() {
    let app = spawn_app().await;
    let post = |body: Vec<u8>, content_type: &'static str| {
        app.client
            .post(app.url("/v1/api-keys"))
            .header("x-application-id", &app.caller.application_id)
            .bearer_auth(&app.caller.key)
            .header("content-type", content_type)
            .body(body)
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (post(b"{\"name\": ".to_vec(), "application/json"), 400, "malformed_json"),
        (post(b"{\"name\": \"a\"} trailing".to_vec(), "application/json"), 400, "malformed_json"),
        (post(b"\"\\ud800\"".to_vec(), "application/json"), 400, "malformed_json"),
        (post(deep.into_bytes(), "application/json"), 422, "validation_failed"),
        (post(b"{\"name\": \"a\"}".to_vec(), "text/plain"), 415, "unsupported_media_type"),
        (post(b"{\"name\": \"a\"}".to_vec(), "application/json; charset=utf-16"), 415, "unsupported_media_type"),
        (post(b"{\"name\": \"a\"}".to_vec(), "application/json; charset=\"utf-16\""), 415, "unsupported_media_type"),
        (post(b"{\"name\": \"a\"}".to_vec(), "application/json; boundary=x"), 415, "unsupported_media_type"),
        (post(b"{}".to_vec(), "application/json; charset=\"UTF-8\""), 422, "validation_failed"),
        (post(b"{}".to_vec(), "Application/JSON;charset=utf-8"), 422, "validation_failed"),
        (post(b"{}".to_vec(), "application/json").header("content-encoding", "gzip"), 415, "unsupported_media_type"),
        (post(vec![b' '; 1024 * 1024 + 1], "application/json"), 413, "payload_too_large"),
        (post(b"{}".to_vec(), "application/json"), 422, "validation_failed"),
        (post(b"{\"name\": 5}".to_vec(), "application/json"), 422, "validation_failed"),
        (post(b"{\"name\": \"a\", \"application_id\": \"x\"}".to_vec(), "application/json"), 422, "validation_failed"),
        (post(b"{\"name\": \"a\\u0000b\"}".to_vec(), "application/json"), 422, "validation_failed"),
        (
            post(format!("{{\"name\": \"{}\"}}", "x".repeat(10_000)).into_bytes(), "application/json"),
            422,
            "validation_failed",
        ),
        (post(b"{\"name\": \"a\", \"expires_in_days\": -1}".to_vec(), "application/json"), 422, "validation_failed"),
        (post(b"{\"name\": \"a\", \"expires_in_days\": 1e400}".to_vec(), "application/json"), 400, "malformed_json"),
        (post(b"{\"name\": \"a\", \"name\": \"b\"}".to_vec(), "application/json"), 422, "validation_failed"),
    ];
    for (i, (request, status, code)) in cases.into_iter().enumerate() {
        let reply = app.raw(request).await;
        assert_eq!((reply.status, reply.error_code()), (status, code), "case {i}: {:?}", reply.body);
    }
    let keys = app.get("/v1/api-keys").await;
    assert_eq!(keys.data().as_array().unwrap().len(), 1, "only the bootstrap key exists");
}

#[actix_web::test]
async fn a_validation_failure_names_the_field() {
    let app = spawn_app().await;
    let missing = app.post("/v1/api-keys", &json!({"scopes": []})).await;
    assert_eq!(missing.status, 422);
    assert_eq!(missing.body["error"]["details"][0]["field"], "name");
    let typed = app.post("/v1/api-keys", &json!({"name": "a", "scopes": "admin"})).await;
    assert_eq!(typed.body["error"]["details"][0]["field"], "scopes");
}

#[actix_web::test]
async fn query_parameters_out_of_range_are_422_and_a_path_id_that_is_no_uuid_is_404() {
    let app = spawn_app().await;
    for query in ["limit=0", "limit=101", "limit=-1", "limit=abc", "limit=99999999999999999999", "offset=-5", "nope=1"]
    {
        let reply = app.get(&format!("/v1/api-keys?{query}")).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{query}");
    }
    let reply = app.get("/v1/api-keys/'%20OR%201=1--").await;
    assert_eq!((reply.status, reply.error_code()), (404, "not_found"));
}

#[actix_web::test]
async fn a_quoted_charset_is_json_too() {
    let app = spawn_app().await;
    let reply = app
        .raw(
            app.client
                .post(app.url("/v1/api-keys"))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&app.caller.key)
                .header("content-type", "application/json; charset=\"utf-8\"")
                .body(r#"{"name": "quoted"}"#),
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
}

/// A request head past the service's bounds is refused in the envelope
/// (414, 431) before any route runs; the bounds are below the HTTP
/// parser's own (64 KiB target, 128 KiB head), so the parser's bare 400 or
/// connection reset is never what a client sees first.
#[actix_web::test]
async fn a_long_target_is_414_and_a_large_header_431_in_the_envelope() {
    let app = spawn_app().await;
    let long_target = app.get(&format!("/v1/api-keys?q={}", "a".repeat(60 * 1024))).await;
    assert_eq!((long_target.status, long_target.error_code()), (414, "uri_too_long"));
    assert!(long_target.body["meta"]["request_id"].as_str().is_some());
    let authorized = |request: reqwest::RequestBuilder| {
        request.header("x-application-id", &app.caller.application_id).bearer_auth(&app.caller.key)
    };
    let large_field =
        app.raw(authorized(app.client.get(app.url("/v1/api-keys"))).header("x-large", "b".repeat(64 * 1024))).await;
    assert_eq!((large_field.status, large_field.error_code()), (431, "headers_too_large"));
    let mut many = authorized(app.client.get(app.url("/v1/api-keys")));
    for i in 0..8 {
        many = many.header(format!("x-part-{i}"), "c".repeat(6 * 1024));
    }
    let many = app.raw(many).await;
    assert_eq!((many.status, many.error_code()), (431, "headers_too_large"));
    let within =
        app.raw(authorized(app.client.get(app.url("/v1/api-keys"))).header("x-fits", "d".repeat(7 * 1024))).await;
    assert_eq!(within.status, 200, "{:?}", within.body);
}

#[actix_web::test]
async fn a_trickled_body_is_cut_off_at_the_deadline_with_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = crate::helpers::spawn_with(|settings| settings.server.body_timeout_seconds = 1).await;
    let mut stream = tokio::net::TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    let head = format!(
        "POST /v1/api-keys HTTP/1.1\r\nhost: x\r\nx-application-id: {}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{",
        app.caller.application_id, app.caller.key
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    // One more byte every half second: the body never completes in time.
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") && started.elapsed() < std::time::Duration::from_secs(10) {
        let _ = stream.write_all(b" ").await;
        if let Ok(Ok(n)) = tokio::time::timeout(std::time::Duration::from_millis(500), stream.read(&mut buffer)).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
}

/// Requests the HTTP parser refuses (a stranger decides how many) are not
/// one ERROR line each: they are counted and summed in one WARN line at
/// most every ten seconds.
#[actix_web::test]
async fn malformed_requests_are_summed_in_one_warning_not_logged_as_errors() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let binary = crate::binary::Binary::new(&[("RUST_LOG", "info".into())]);
    let log = binary.dir.path().join("serve.log");
    let mut child = binary.serve(Some(std::fs::File::create(&log).unwrap())).await;
    let address = binary.base.trim_start_matches("http://").to_string();
    for _ in 0..20 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stream.read_to_end(&mut answer)).await;
        assert!(answer.starts_with(b"HTTP/1.1 400"), "{}", String::from_utf8_lossy(&answer));
    }
    // Each summary covers ten seconds: the twenty may fall in one or two.
    let counted = |text: &str| -> (usize, u64) {
        let summaries: Vec<&str> = text.lines().filter(|l| l.contains("malformed requests refused")).collect();
        let count = |line: &str| line.split("count=").nth(1).and_then(|rest| rest.trim().parse::<u64>().ok());
        (summaries.len(), summaries.iter().filter_map(|line| count(line)).sum())
    };
    let mut text = String::new();
    for _ in 0..250 {
        text = without_colours(&std::fs::read_to_string(&log).unwrap());
        if counted(&text).1 >= 20 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(!text.contains("ERROR"), "{text}");
    let (lines, total) = counted(&text);
    assert!((1..=2).contains(&lines) && total == 20, "{lines} lines, {total} counted: {text}");
}

/// The log as text: ANSI colour sequences (`ESC [ … m`) taken out.
fn without_colours(log: &str) -> String {
    let mut plain = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            plain.push(c);
        }
    }
    plain
}
