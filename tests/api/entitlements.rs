//! Entitlements (operation 18): features, plans, an organization's plan and
//! overrides; resolution, its explanation, and the rules that keep them
//! consistent.
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

async fn put(app: &TestApp, path: &str, body: Value) -> crate::helpers::Reply {
    app.send(&app.caller, Method::PUT, path, Some(&body)).await
}

async fn delete(app: &TestApp, path: &str) -> crate::helpers::Reply {
    app.send(&app.caller, Method::DELETE, path, None).await
}

fn summary(reply: &crate::helpers::Reply) -> Vec<(String, String, Value)> {
    let rows = reply.data().as_array().unwrap_or_else(|| panic!("{:?}", reply.body));
    rows.iter()
        .map(|e| (e["feature_key"].as_str().unwrap().into(), e["source"].as_str().unwrap().into(), e["value"].clone()))
        .collect()
}

#[actix_web::test]
async fn entitlements_resolve_override_then_plan_then_default_one_per_feature_sorted() {
    let app = spawn_app().await;
    assert_eq!(put(&app, "/v1/features/sso", json!({"kind": "toggle", "default_value": true})).await.status, 422);
    assert_eq!(put(&app, "/v1/features/seats", json!({"kind": "limit", "default_value": -1})).await.status, 422);
    assert_eq!(put(&app, "/v1/features/Bad Key", json!({"kind": "boolean", "default_value": true})).await.status, 422);
    for (key, kind, default) in
        [("sso", "boolean", json!(false)), ("seats", "limit", json!(3)), ("theme", "config", json!({"color": "blue"}))]
    {
        let created = put(&app, &format!("/v1/features/{key}"), json!({"kind": kind, "default_value": default})).await;
        assert_eq!(created.status, 200, "{:?}", created.body);
        assert_eq!(created.data()["feature_key"], key);
    }
    let wrong = put(&app, "/v1/plans/pro", json!({"name": "Pro", "grants": {"seats": true, "nope": 1}})).await;
    assert_eq!(wrong.status, 422);
    let fields: Vec<_> =
        wrong.body["error"]["details"].as_array().unwrap().iter().map(|d| d["field"].clone()).collect();
    assert_eq!(fields, [json!("grants.nope"), json!("grants.seats")]);
    let pro = put(&app, "/v1/plans/pro", json!({"name": "Pro", "grants": {"seats": 25, "sso": true}})).await;
    assert_eq!(pro.status, 200, "{:?}", pro.body);

    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let entitlements = format!("/v1/organizations/{org}/entitlements");
    let bare = app.get(&entitlements).await;
    assert_eq!(
        summary(&bare),
        [
            ("seats".into(), "default".into(), json!(3)),
            ("sso".into(), "default".into(), json!(false)),
            ("theme".into(), "default".into(), json!({"color": "blue"})),
        ]
    );
    assert_eq!(bare.data()[0]["kind"], "limit");
    assert_eq!(put(&app, &format!("/v1/organizations/{org}/plan"), json!({"plan_key": "free"})).await.status, 422);
    let on_pro = put(&app, &format!("/v1/organizations/{org}/plan"), json!({"plan_key": "pro"})).await;
    assert_eq!((on_pro.status, on_pro.data()["plan_key"].as_str()), (200, Some("pro")), "{:?}", on_pro.body);
    let overrides = format!("/v1/organizations/{org}/entitlement-overrides");
    assert_eq!(put(&app, &format!("{overrides}/seats"), json!({"value": "many"})).await.status, 422);
    assert_eq!(put(&app, &format!("{overrides}/nope"), json!({"value": 1})).await.status, 404);
    assert_eq!(put(&app, &format!("{overrides}/seats"), json!({"value": 100})).await.status, 200);
    assert_eq!(
        summary(&app.get(&entitlements).await),
        [
            ("seats".into(), "override".into(), json!(100)),
            ("sso".into(), "plan".into(), json!(true)),
            ("theme".into(), "default".into(), json!({"color": "blue"})),
        ]
    );
    let explained = app.get(&format!("{entitlements}/seats/explain")).await;
    assert_eq!(explained.status, 200, "{:?}", explained.body);
    assert_eq!(
        (explained.data()["source"].as_str(), explained.data()["plan_key"].as_str()),
        (Some("override"), Some("pro"))
    );
    let candidates: Vec<_> = explained.data()["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["source"].as_str().unwrap().to_string(), c["value"].clone(), c["applies"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        candidates,
        [("override".into(), json!(100), true), ("plan".into(), json!(25), false), ("default".into(), json!(3), false)]
    );
    assert_eq!(app.get(&format!("{entitlements}/nope/explain")).await.status, 404);

    // What is in use cannot change kind or go.
    let retyped = put(&app, "/v1/features/seats", json!({"kind": "boolean", "default_value": true})).await;
    assert_eq!((retyped.status, retyped.error_code()), (409, "conflict"));
    assert_eq!(delete(&app, "/v1/features/sso").await.status, 409, "the plan grants it");
    assert_eq!(delete(&app, "/v1/plans/pro").await.status, 409, "the organization is on it");
    assert_eq!(delete(&app, "/v1/features/theme").await.status, 200);
    assert_eq!(delete(&app, "/v1/features/theme").await.status, 404);

    // Every change shows at once.
    assert_eq!(delete(&app, &format!("{overrides}/seats")).await.status, 200);
    assert_eq!(delete(&app, &format!("{overrides}/seats")).await.status, 404);
    assert_eq!(put(&app, "/v1/plans/pro", json!({"name": "Pro", "grants": {"seats": 50}})).await.status, 200);
    assert_eq!(
        summary(&app.get(&entitlements).await),
        [("seats".into(), "plan".into(), json!(50)), ("sso".into(), "default".into(), json!(false))]
    );
    assert_eq!(put(&app, &format!("/v1/organizations/{org}/plan"), json!({"plan_key": null})).await.status, 200);
    assert_eq!(app.get(&entitlements).await.data()[0]["source"], "default");
    assert_eq!(delete(&app, "/v1/plans/pro").await.status, 200);
    let features = app.get("/v1/features").await;
    assert_eq!(features.data().as_array().unwrap().len(), 2);
    assert_eq!(app.get("/v1/plans").await.data().as_array().unwrap().len(), 0);

    // Unknown and foreign organizations are 404; a deleted one too.
    assert_eq!(app.get(&format!("/v1/organizations/{}/entitlements", uuid::Uuid::now_v7())).await.status, 404);
    let other = app.other_account().await;
    assert_eq!(app.send(&other, Method::GET, &entitlements, None).await.status, 404);
    let foreign = app.send(&other, Method::PUT, &format!("{overrides}/seats"), Some(&json!({"value": 1}))).await;
    assert_eq!(foreign.status, 404);
    assert_eq!(app.get(&entitlements).await.status, 200, "the owner's cached answer is its own");
    assert_eq!(delete(&app, &format!("/v1/organizations/{org}")).await.status, 200);
    assert_eq!(app.get(&entitlements).await.status, 404);
    let types = app.audit_types().await;
    for expected in [
        "feature.updated",
        "feature.deleted",
        "plan.updated",
        "plan.deleted",
        "organization.plan_changed",
        "entitlement.override.updated",
        "entitlement.override.deleted",
    ] {
        assert!(types.iter().any(|t| t == expected), "{expected}");
    }
}

fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[actix_web::test]
async fn tokens_carry_the_entitlements_the_application_names_as_ent() {
    let app = spawn_app().await;
    let settings = format!("/v1/applications/{}", app.caller.application_id);
    let too_many: Vec<String> = (0..21).map(|i| format!("f{i}")).collect();
    assert_eq!(app.patch(&settings, &json!({"entitlement_claims": too_many})).await.status, 422);
    assert_eq!(app.patch(&settings, &json!({"entitlement_claims": ["sso", "sso"]})).await.status, 422);
    let named = app.patch(&settings, &json!({"entitlement_claims": ["seats", "sso", "later"]})).await;
    assert_eq!(named.status, 200, "{:?}", named.body);
    assert_eq!(named.data()["entitlement_claims"], json!(["seats", "sso", "later"]));
    for (key, kind, default) in
        [("sso", "boolean", json!(false)), ("seats", "limit", json!(3)), ("theme", "config", json!("dark"))]
    {
        assert_eq!(
            put(&app, &format!("/v1/features/{key}"), json!({"kind": kind, "default_value": default})).await.status,
            200
        );
    }
    let org = app.post("/v1/organizations", &json!({"name": "Acme"})).await.data()["id"].as_str().unwrap().to_string();
    let signed_up = crate::end_users::sign_up(&app, &app.caller, "ada@example.com").await;
    assert!(claims_of(signed_up["access_token"].as_str().unwrap()).get("ent").is_none(), "no organization: no ent");
    let user_id = signed_up["user"]["id"].as_str().unwrap();
    let members = format!("/v1/organizations/{org}/memberships");
    assert_eq!(app.post(&members, &json!({"user_id": user_id, "role": "owner"})).await.status, 201);
    let user = crate::end_users::as_user(&app.caller, signed_up["access_token"].as_str().unwrap());
    let activated = app.send(&user, Method::POST, &format!("/v1/auth/organizations/{org}/activate"), None).await;
    let claims = claims_of(activated.data()["access_token"].as_str().unwrap());
    assert_eq!(claims["ent"], json!({"seats": 3, "sso": false}), "named and defined; theme is not named");

    assert_eq!(
        put(&app, &format!("/v1/organizations/{org}/entitlement-overrides/sso"), json!({"value": true})).await.status,
        200
    );
    let body = json!({"refresh_token": signed_up["refresh_token"]});
    let refreshed = crate::end_users::public_post(&app, &app.caller, "/v1/auth/token", &body).await;
    assert_eq!(refreshed.status, 200, "{:?}", refreshed.body);
    let claims = claims_of(refreshed.data()["access_token"].as_str().unwrap());
    assert_eq!((claims["org"].as_str(), claims["ent"].clone()), (Some(&*org), json!({"seats": 3, "sso": true})));
    // The backend verifies it as it does every token.
    let me = app
        .send(
            &crate::end_users::as_user(&app.caller, refreshed.data()["access_token"].as_str().unwrap()),
            Method::GET,
            "/v1/auth/me",
            None,
        )
        .await;
    assert_eq!(me.status, 200);
}
