//! Operations 9 and 16, with list and settings changes.
use reqwest::Method;
use serde_json::json;

use crate::helpers::spawn_app;

#[actix_web::test]
async fn a_created_application_answers_with_its_first_key_which_works() {
    let app = spawn_app().await;
    let created = app.post("/v1/applications", &json!({"name": "Shop", "environment": "staging"})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let data = created.data();
    assert_eq!(
        (data["name"].as_str(), data["environment"].as_str(), data["region"].as_str()),
        (Some("Shop"), Some("staging"), Some("us"))
    );
    assert_eq!((data["is_live"].as_bool(), data["sandbox"].as_bool()), (Some(false), Some(false)));
    let new = crate::helpers::Caller {
        application_id: data["id"].as_str().unwrap().into(),
        key: data["secret_key"].as_str().unwrap().into(),
    };
    let own = app.send(&new, Method::GET, &format!("/v1/applications/{}", new.application_id), None).await;
    assert_eq!(own.status, 200);
    assert!(own.data().get("secret_key").is_none());
    let types: Vec<String> = app
        .send(&new, Method::GET, "/v1/audit-logs", None)
        .await
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, ["application.created", "api_key.created"]);
}

#[actix_web::test]
async fn copy_from_copies_settings_within_the_account_only() {
    let app = spawn_app().await;
    let patched = app
        .patch(
            &format!("/v1/applications/{}", app.caller.application_id),
            &json!({"allowed_origins": ["https://App.Example.com"], "branding": {"color": "#123456"}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["allowed_origins"], json!(["https://app.example.com"]));
    let field =
        json!({"key": "plan", "label": "Plan", "field_type": "select", "options": ["free", "pro"], "required": true});
    assert_eq!(app.post("/v1/profile-fields", &field).await.status, 201);
    let copy = app.post("/v1/applications", &json!({"name": "Copy", "copy_from": app.caller.application_id})).await;
    assert_eq!(copy.status, 201);
    assert_eq!(copy.data()["allowed_origins"], json!(["https://app.example.com"]));
    assert_eq!(copy.data()["branding"], json!({"color": "#123456"}));
    let copied = crate::helpers::Caller {
        application_id: copy.data()["id"].as_str().unwrap().to_string(),
        key: copy.data()["secret_key"].as_str().unwrap().to_string(),
    };
    let schema = app.send(&copied, Method::GET, "/v1/profile-fields", None).await;
    assert_eq!(schema.data().as_array().unwrap().len(), 1, "the profile-field schema is copied");
    assert_eq!(schema.data()[0]["options"], json!(["free", "pro"]));
    let users = app.send(&copied, Method::GET, "/v1/users", None).await;
    assert_eq!(users.data().as_array().unwrap().len(), 0, "never users");
    let other = app.other_account().await;
    let refused = app
        .send(
            &other,
            Method::POST,
            "/v1/applications",
            Some(&json!({"name": "X", "copy_from": app.caller.application_id})),
        )
        .await;
    assert_eq!((refused.status, refused.error_code()), (422, "validation_failed"));
    assert_eq!(refused.body["error"]["details"][0]["field"], "copy_from");
}

#[actix_web::test]
async fn applications_of_another_account_are_404() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    let reply = app.get(&format!("/v1/applications/{}", other.application_id)).await;
    assert_eq!((reply.status, reply.error_code()), (404, "not_found"));
    assert_eq!(app.get("/v1/applications/not-a-uuid").await.status, 404);
    let patch = app.patch(&format!("/v1/applications/{}", other.application_id), &json!({"name": "stolen"})).await;
    assert_eq!(patch.status, 404);
    let listed = app.get("/v1/applications").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn invalid_applications_and_settings_are_422_and_change_nothing() {
    let app = spawn_app().await;
    for body in
        [json!({"name": ""}), json!({"name": "a", "environment": "prod"}), json!({"name": "a", "copy_from": "nope"})]
    {
        let reply = app.post("/v1/applications", &body).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{body}");
    }
    for region in ["mars", ""] {
        let reply = app.post("/v1/applications", &json!({"name": "a", "region": region})).await;
        assert_eq!((reply.status, reply.error_code()), (422, "unknown_region"), "{region}");
    }
    let path = format!("/v1/applications/{}", app.caller.application_id);
    for body in [
        json!({"branding": {"logo": {"alt": "a\u{0}b"}}}),
        json!({"branding": {"a\u{0}": 1}}),
        json!({"allowed_origins": ["https://a.example.com/path"]}),
        json!({"allowed_origins": ["javascript:alert(1)"]}),
        json!({"allowed_origins": ["https://user@a.example.com"]}),
        json!({"branding": "blue"}),
        json!({"name": "a\nb"}),
    ] {
        let reply = app.patch(&path, &body).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{body}");
    }
    let deep = format!("{{\"branding\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    let nested = app
        .raw(
            app.client
                .patch(app.url(&path))
                .header("x-application-id", &app.caller.application_id)
                .bearer_auth(&app.caller.key)
                .header("content-type", "application/json")
                .body(deep),
        )
        .await;
    assert_eq!((nested.status, nested.error_code()), (400, "malformed_json"), "nesting past the parser's limit");
    assert_eq!(app.get("/v1/applications").await.data().as_array().unwrap().len(), 1);
    assert_eq!(app.get(&path).await.data()["name"], "Test");
}

#[actix_web::test]
async fn a_settings_change_is_visible_at_once_and_audited() {
    let app = spawn_app().await;
    let path = format!("/v1/applications/{}", app.caller.application_id);
    assert_eq!(app.patch(&path, &json!({"name": "Renamed"})).await.status, 200);
    assert_eq!(app.get(&path).await.data()["name"], "Renamed");
    let listed = app.get("/v1/applications").await;
    assert_eq!(listed.data()[0]["name"], "Renamed");
    assert!(app.audit_types().await.contains(&"application.updated".to_string()));
}
