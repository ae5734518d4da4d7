//! Operation 5: the profile-field schema and its enforcement.
use reqwest::Method;
use serde_json::json;

use crate::{
    end_users::{public_post, PASSWORD},
    helpers::spawn_app,
};

#[actix_web::test]
async fn fields_are_created_listed_changed_and_deleted_with_409_on_a_used_key() {
    let app = spawn_app().await;
    let created =
        app.post("/v1/profile-fields", &json!({"key": "company", "label": "Company", "field_type": "text"})).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.data()["position"], 0);
    assert_eq!(created.data()["required"], false);
    let second = app
        .post("/v1/profile-fields", &json!({"key": "plan", "label": "Plan", "field_type": "select", "options": ["free", "pro"], "required": true}))
        .await;
    assert_eq!(second.data()["position"], 1, "defaults to last");
    let taken =
        app.post("/v1/profile-fields", &json!({"key": "company", "label": "Again", "field_type": "text"})).await;
    assert_eq!((taken.status, taken.error_code()), (409, "key_in_use"));
    for body in [
        json!({"key": "Bad", "label": "x", "field_type": "text"}),
        json!({"key": "x", "label": "x", "field_type": "colour"}),
        json!({"key": "x", "label": "x", "field_type": "select"}),
        json!({"key": "x", "label": "x", "field_type": "select", "options": []}),
        json!({"key": "x", "label": "x", "field_type": "text", "options": ["a"]}),
        json!({"key": "x", "label": "", "field_type": "text"}),
    ] {
        let reply = app.post("/v1/profile-fields", &body).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
    }
    let listed = app.get("/v1/profile-fields").await;
    assert_eq!(listed.data().as_array().unwrap().len(), 2);
    let id = created.data()["id"].as_str().unwrap();
    let patched = app.patch(&format!("/v1/profile-fields/{id}"), &json!({"label": "Employer", "required": true})).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.data()["label"], "Employer");
    let read = app.get(&format!("/v1/profile-fields/{id}")).await;
    assert_eq!((read.status, &read.data()["required"]), (200, &json!(true)), "{:?}", read.body);
    let key_change = app.patch(&format!("/v1/profile-fields/{id}"), &json!({"key": "other"})).await;
    assert!(matches!(key_change.status, 400 | 422), "the key is fixed");
    assert_eq!(app.send(&app.caller, Method::DELETE, &format!("/v1/profile-fields/{id}"), None).await.status, 200);
    assert_eq!(app.get(&format!("/v1/profile-fields/{id}")).await.status, 404);
    let other = app.other_account().await;
    let second_id = second.data()["id"].as_str().unwrap();
    assert_eq!(app.send(&other, Method::GET, &format!("/v1/profile-fields/{second_id}"), None).await.status, 404);
    let types = app.audit_types().await;
    for expected in ["profile_field.created", "profile_field.updated", "profile_field.deleted"] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

#[actix_web::test]
async fn sign_up_and_user_writes_are_checked_against_the_schema_and_store_nothing_on_failure() {
    let app = spawn_app().await;
    for field in [
        json!({"key": "plan", "label": "Plan", "field_type": "select", "options": ["free", "pro"], "required": true}),
        json!({"key": "seats", "label": "Seats", "field_type": "number"}),
        json!({"key": "newsletter", "label": "News", "field_type": "boolean"}),
        json!({"key": "birthday", "label": "Birthday", "field_type": "date"}),
        json!({"key": "site", "label": "Site", "field_type": "url"}),
        json!({"key": "tags", "label": "Tags", "field_type": "multi_select", "options": ["a", "b"]}),
    ] {
        assert_eq!(app.post("/v1/profile-fields", &field).await.status, 201);
    }
    let sign_up = |profile: serde_json::Value| {
        let app = &app;
        async move {
            public_post(
                app,
                &app.caller,
                "/v1/auth/sign-up",
                &json!({"email": "ada@example.com", "password": PASSWORD, "profile": profile}),
            )
            .await
        }
    };
    for (profile, field) in [
        (json!({}), "profile.plan"),
        (json!({"plan": "enterprise"}), "profile.plan"),
        (json!({"plan": "pro", "seats": "ten"}), "profile.seats"),
        (json!({"plan": "pro", "newsletter": "yes"}), "profile.newsletter"),
        (json!({"plan": "pro", "birthday": "2020-13-01"}), "profile.birthday"),
        (json!({"plan": "pro", "site": "javascript:alert(1)"}), "profile.site"),
        (json!({"plan": "pro", "tags": ["a", "c"]}), "profile.tags"),
        (json!({"plan": "pro", "tags": ["a", "a"]}), "profile.tags"),
        (json!({"plan": "pro", "unknown": 1}), "profile.unknown"),
    ] {
        let reply = sign_up(profile.clone()).await;
        assert_eq!(reply.status, 422, "{profile}: {:?}", reply.body);
        assert_eq!(reply.body["error"]["details"][0]["field"], field, "{profile}");
    }
    assert_eq!(app.get("/v1/users").await.data().as_array().unwrap().len(), 0, "nothing stored");
    let ok = sign_up(json!({"plan": "pro", "seats": 10, "newsletter": true, "birthday": "1990-02-28", "site": "https://a.example", "tags": ["b"]})).await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);
    assert_eq!(ok.data()["user"]["profile"]["plan"], "pro");
    let id = ok.data()["user"]["id"].as_str().unwrap();

    let bad_create = app.post("/v1/users", &json!({"email": "bob@example.com", "profile": {"plan": "gold"}})).await;
    assert_eq!(bad_create.status, 422);
    let bad_update = app.patch(&format!("/v1/users/{id}"), &json!({"profile": {"seats": 3}})).await;
    assert_eq!(bad_update.status, 422, "the required plan is missing");
    assert_eq!(app.get(&format!("/v1/users/{id}")).await.data()["profile"]["seats"], 10, "unchanged");
}
