//! SCIM 2.0 directories: an organization's identity provider provisions
//! its people (RFC 7643, 7644) with the directory's token. Provisioned users
//! join the organization with the role their groups give; deprovisioning
//! ends the membership and every session at once; a directory cannot take
//! over an account outside its organization; each token opens only its own
//! directory. (scim2-tester checks the protocol itself: tests/scim/run.py.)
use reqwest::Method;
use sea_orm::EntityTrait;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{
    end_users::{public_post, sign_up},
    helpers::{first_shard, spawn_app, Caller, Reply, TestApp},
};

const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const PATCH: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

struct Directory {
    id: String,
    base_url: String,
    token: String,
}

async fn organization(app: &TestApp, caller: &Caller, name: &str) -> String {
    let made = app.send(caller, Method::POST, "/v1/organizations", Some(&json!({"name": name}))).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    made.data()["id"].as_str().unwrap().to_string()
}

async fn directory(app: &TestApp, caller: &Caller, organization_id: &str, group_roles: Value) -> Directory {
    let path = format!("/v1/organizations/{organization_id}/scim-directories");
    let body = json!({"name": "Okta", "group_roles": group_roles});
    let made = app.send(caller, Method::POST, &path, Some(&body)).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let data = made.data();
    Directory {
        id: data["id"].as_str().unwrap().to_string(),
        base_url: data["base_url"].as_str().unwrap().to_string(),
        token: data["token"].as_str().unwrap().to_string(),
    }
}

/// A SCIM request under the directory's base URL, with `token`.
async fn scim_with(
    app: &TestApp,
    base_url: &str,
    token: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let mut request = app.client.request(method, format!("{base_url}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/scim+json").body(body.to_string());
    }
    app.raw(request).await
}

async fn scim(app: &TestApp, directory: &Directory, method: Method, path: &str, body: Option<Value>) -> Reply {
    scim_with(app, &directory.base_url, Some(&directory.token), method, path, body).await
}

fn user(user_name: &str, email: &str) -> Value {
    json!({
        "schemas": [USER],
        "userName": user_name,
        "externalId": format!("okta-{user_name}"),
        "name": {"givenName": "Ada", "familyName": "Lovelace"},
        "emails": [{"value": email, "type": "work", "primary": true}],
        "active": true,
    })
}

async fn provision(app: &TestApp, directory: &Directory, email: &str) -> Value {
    let made = scim(app, directory, Method::POST, "/Users", Some(user(email, email))).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    made.body
}

/// `(user_id, role)` of each member of the organization.
async fn members(app: &TestApp, organization_id: &str) -> Vec<(String, String)> {
    let listed = app.get(&format!("/v1/organizations/{organization_id}/memberships")).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let rows = listed.data().as_array().unwrap().clone();
    rows.iter().map(|m| (m["user_id"].as_str().unwrap().to_string(), m["role"].as_str().unwrap().to_string())).collect()
}

async fn user_id_of(app: &TestApp, email: &str) -> String {
    let found = app.get(&format!("/v1/users?email={email}")).await;
    found.data()[0]["id"].as_str().unwrap_or_else(|| panic!("no user {email}: {:?}", found.body)).to_string()
}

fn patch(operations: Value) -> Option<Value> {
    Some(json!({"schemas": [PATCH], "Operations": operations}))
}

#[actix_web::test]
async fn a_directory_provisions_users_into_its_organization_with_the_roles_of_their_groups() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([{"group": "Admins", "role": "admin"}])).await;
    assert!(directory.token.starts_with("scim_test_"), "{}", directory.token);
    assert!(directory.base_url.ends_with(&format!("/scim/v2/{}", directory.id)), "{}", directory.base_url);

    let made = scim(&app, &directory, Method::POST, "/Users", Some(user("Ada@Acme.example", "ada@acme.example"))).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert_eq!(made.header("content-type"), Some("application/scim+json"));
    let ada = made.body.clone();
    let ada_scim = ada["id"].as_str().unwrap().to_string();
    assert_eq!(made.header("etag"), ada["meta"]["version"].as_str());
    assert_eq!(made.header("location"), ada["meta"]["location"].as_str());
    assert_eq!(ada["meta"]["location"], format!("{}/Users/{ada_scim}", directory.base_url));
    assert_eq!(ada["name"]["givenName"], "Ada");

    let ada_id = user_id_of(&app, "ada@acme.example").await;
    assert_eq!(members(&app, &org).await, vec![(ada_id.clone(), "member".to_string())]);

    // The lookup a directory makes before it creates, without case.
    let found =
        scim(&app, &directory, Method::GET, "/Users?filter=userName%20eq%20%22ADA%40acme.example%22", None).await;
    assert_eq!(
        (found.body["totalResults"].as_u64(), found.body["Resources"][0]["id"].as_str()),
        (Some(1), Some(ada_scim.as_str()))
    );
    let twice =
        scim(&app, &directory, Method::POST, "/Users", Some(user("ada@acme.example", "other@acme.example"))).await;
    assert_eq!((twice.status, twice.body["scimType"].as_str()), (409, Some("uniqueness")), "{:?}", twice.body);

    // A group named in `group_roles` gives its role; leaving it takes it back.
    let group = json!({"schemas": [GROUP], "displayName": "admins", "members": [{"value": ada_scim}]});
    let admins = scim(&app, &directory, Method::POST, "/Groups", Some(group)).await;
    assert_eq!(admins.status, 201, "{:?}", admins.body);
    assert_eq!(members(&app, &org).await, vec![(ada_id.clone(), "admin".to_string())]);
    let admins_path = format!("/Groups/{}", admins.body["id"].as_str().unwrap());
    let left = scim(
        &app,
        &directory,
        Method::PATCH,
        &admins_path,
        patch(json!([{"op": "remove", "path": format!("members[value eq \"{ada_scim}\"]")}])),
    )
    .await;
    assert_eq!(left.status, 200, "{:?}", left.body);
    assert_eq!(members(&app, &org).await, vec![(ada_id.clone(), "member".to_string())]);
    // A group replaced whole (PUT) with her in it gives the role back.
    let replaced = json!({"schemas": [GROUP], "displayName": "admins", "members": [{"value": ada_scim}]});
    let put = scim(&app, &directory, Method::PUT, &admins_path, Some(replaced)).await;
    assert_eq!(
        (put.status, put.body["members"][0]["value"].as_str()),
        (200, Some(ada_scim.as_str())),
        "{:?}",
        put.body
    );
    assert_eq!(members(&app, &org).await, vec![(ada_id.clone(), "admin".to_string())]);
    let left = scim(
        &app,
        &directory,
        Method::PATCH,
        &admins_path,
        patch(json!([{"op": "replace", "path": "members", "value": []}])),
    )
    .await;
    assert_eq!(left.status, 200, "{:?}", left.body);

    // A user without an email is kept, and is nobody in Gatehouse yet.
    let nameless =
        scim(&app, &directory, Method::POST, "/Users", Some(json!({"schemas": [USER], "userName": "u-1234"}))).await;
    assert_eq!(nameless.status, 201, "{:?}", nameless.body);
    assert_eq!(members(&app, &org).await.len(), 1);
    let listed = scim(&app, &directory, Method::GET, "/Users?count=1&startIndex=2&attributes=userName", None).await;
    assert_eq!(listed.body["totalResults"], 2);
    assert_eq!(listed.body["itemsPerPage"], 1);
    assert_eq!(listed.body["Resources"][0]["userName"], "u-1234");
    assert!(listed.body["Resources"][0].get("meta").is_none(), "{:?}", listed.body);

    let types = app.audit_types().await;
    for wanted in [
        "scim_directory.created",
        "scim.user.created",
        "scim.group.created",
        "scim.group.updated",
        "organization.membership.updated",
    ] {
        assert!(types.iter().any(|t| t == wanted), "{wanted} in {types:?}");
    }
}

/// RFC 7644 section 4: what a client reads before it provisions.
#[actix_web::test]
async fn the_discovery_endpoints_describe_what_the_directory_supports() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let config = scim(&app, &directory, Method::GET, "/ServiceProviderConfig", None).await;
    assert_eq!(config.status, 200, "{:?}", config.body);
    assert_eq!((&config.body["patch"]["supported"], &config.body["bulk"]["supported"]), (&json!(true), &json!(false)));
    let types = scim(&app, &directory, Method::GET, "/ResourceTypes", None).await;
    let names: Vec<&str> =
        types.body["Resources"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["User", "Group"], "{:?}", types.body);
    let user_type = scim(&app, &directory, Method::GET, "/ResourceTypes/User", None).await;
    assert_eq!((user_type.status, user_type.body["schema"].as_str()), (200, Some(USER)), "{:?}", user_type.body);
    let schemas = scim(&app, &directory, Method::GET, "/Schemas", None).await;
    let ids: Vec<&str> =
        schemas.body["Resources"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&USER) && ids.contains(&GROUP), "{ids:?}");
    let user_schema = scim(&app, &directory, Method::GET, &format!("/Schemas/{USER}"), None).await;
    assert_eq!((user_schema.status, user_schema.body["name"].as_str()), (200, Some("User")), "{:?}", user_schema.body);
    let unknown = scim(&app, &directory, Method::GET, "/ResourceTypes/Printer", None).await;
    assert_eq!(unknown.status, 404, "{:?}", unknown.body);
}

#[actix_web::test]
async fn deprovisioning_ends_the_membership_and_every_session_at_once() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    // Ada signed up before the directory, and the organization has her.
    let signed_up = sign_up(&app, &app.caller, "ada@acme.example").await;
    let ada_id = signed_up["user"]["id"].as_str().unwrap().to_string();
    let added =
        app.post(&format!("/v1/organizations/{org}/memberships"), &json!({"user_id": ada_id, "role": "member"})).await;
    assert_eq!(added.status, 201, "{:?}", added.body);
    let ada = provision(&app, &directory, "ada@acme.example").await;
    let path = format!("/Users/{}", ada["id"].as_str().unwrap());

    // Entra ID's form: no path, the boolean as a string.
    let off =
        scim(&app, &directory, Method::PATCH, &path, patch(json!([{"op": "Replace", "value": {"active": "False"}}])))
            .await;
    assert_eq!((off.status, &off.body["active"]), (200, &json!(false)), "{:?}", off.body);
    assert!(members(&app, &org).await.is_empty());
    let refresh = signed_up["refresh_token"].as_str().unwrap();
    let refused = public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": refresh})).await;
    assert_eq!(refused.status, 401, "{:?}", refused.body);
    assert!(app.audit_types().await.iter().any(|t| t == "scim.user.deprovisioned"));

    // Back on, a member again; DELETE deprovisions the same way.
    let on = scim(
        &app,
        &directory,
        Method::PATCH,
        &path,
        patch(json!([{"op": "replace", "path": "active", "value": true}])),
    )
    .await;
    assert_eq!(on.status, 200, "{:?}", on.body);
    assert_eq!(members(&app, &org).await, vec![(ada_id.clone(), "member".to_string())]);
    let deleted = scim(&app, &directory, Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 204, "{:?}", deleted.body);
    assert!(members(&app, &org).await.is_empty());
    assert_eq!(scim(&app, &directory, Method::GET, &path, None).await.status, 404);
    // The account stays: the directory ended her access, not her account.
    assert_eq!(user_id_of(&app, "ada@acme.example").await, ada_id);
}

#[actix_web::test]
async fn a_directory_takes_over_an_account_only_when_its_organization_vouches_for_the_address() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    sign_up(&app, &app.caller, "bob@acme.example").await;
    let refused = scim(&app, &directory, Method::POST, "/Users", Some(user("bob", "bob@acme.example"))).await;
    assert_eq!((refused.status, refused.body["scimType"].as_str()), (409, Some("uniqueness")), "{:?}", refused.body);
    let none = scim(&app, &directory, Method::GET, "/Users", None).await;
    assert_eq!(none.body["totalResults"], 0, "a refusal leaves nothing: {:?}", none.body);
    assert!(members(&app, &org).await.is_empty());

    // Once the organization has verified acme.example, the directory may.
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let now = chrono::Utc::now();
    let domain = entity::sso_domain::Model {
        id: Uuid::now_v7(),
        application_id: app.caller.application_id.parse().unwrap(),
        organization_id: org.parse().unwrap(),
        domain: "acme.example".into(),
        verification_token: "t".into(),
        status: "verified".into(),
        auto_join_role: None,
        claimed_by: None,
        created_at: now,
        verified_at: Some(now),
    };
    entity::sso_domain::Entity::insert(entity::sso_domain::ActiveModel::from(domain)).exec(shard).await.unwrap();
    provision(&app, &directory, "bob@acme.example").await;
    let bob = user_id_of(&app, "bob@acme.example").await;
    assert_eq!(members(&app, &org).await, vec![(bob, "member".to_string())]);
}

#[actix_web::test]
async fn a_token_opens_only_its_own_directory_and_a_rotation_or_a_deletion_ends_it() {
    let app = spawn_app().await;
    let acme = organization(&app, &app.caller, "Acme").await;
    let globex = organization(&app, &app.caller, "Globex").await;
    let mine = directory(&app, &app.caller, &acme, json!([])).await;
    let theirs = directory(&app, &app.caller, &globex, json!([])).await;
    let other_app = app.other_account().await;
    let other_org = organization(&app, &other_app, "Initech").await;
    let foreign = directory(&app, &other_app, &other_org, json!([])).await;

    let ok = scim(&app, &mine, Method::GET, "/Users", None).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    for (base, token) in [
        (&theirs.base_url, Some(mine.token.as_str())),
        (&mine.base_url, None),
        (&mine.base_url, Some(app.caller.key.as_str())),
        (&mine.base_url, Some(foreign.token.as_str())),
        // The other application's directory id under this application.
        (&mine.base_url.replace(&mine.id, &foreign.id), Some(foreign.token.as_str())),
    ] {
        let refused = scim_with(&app, base, token, Method::GET, "/Users", None).await;
        assert_eq!(refused.status, 401, "{base} {token:?}: {:?}", refused.body);
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
        assert_eq!(refused.body["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error");
    }
    // Another organization's directory is 404 to the management routes.
    let elsewhere = app.get(&format!("/v1/organizations/{globex}/scim-directories/{}", mine.id)).await;
    assert_eq!(elsewhere.status, 404, "{:?}", elsewhere.body);
    let listed = app.get(&format!("/v1/organizations/{acme}/scim-directories")).await;
    assert_eq!(listed.data().as_array().unwrap().len(), 1);
    assert!(listed.data()[0].get("token").is_none(), "a token is shown once: {:?}", listed.body);
    let path = format!("/v1/organizations/{acme}/scim-directories/{}", mine.id);
    let renamed = app.patch(&path, &json!({"name": "Okta (production)"})).await;
    assert_eq!(
        (renamed.status, renamed.data()["name"].as_str()),
        (200, Some("Okta (production)")),
        "{:?}",
        renamed.body
    );
    let read = app.get(&path).await;
    assert_eq!((read.status, read.data()["name"].as_str()), (200, Some("Okta (production)")), "{:?}", read.body);
    assert!(read.data().get("token").is_none(), "{:?}", read.body);

    let rotated =
        app.post(&format!("/v1/organizations/{acme}/scim-directories/{}/rotate-token", mine.id), &json!({})).await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.body);
    let new_token = rotated.data()["token"].as_str().unwrap();
    assert_eq!(scim(&app, &mine, Method::GET, "/Users", None).await.status, 401);
    assert_eq!(scim_with(&app, &mine.base_url, Some(new_token), Method::GET, "/Users", None).await.status, 200);

    let deleted = app
        .send(&app.caller, Method::DELETE, &format!("/v1/organizations/{acme}/scim-directories/{}", mine.id), None)
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(scim_with(&app, &mine.base_url, Some(new_token), Method::GET, "/Users", None).await.status, 401);
    // An organization deleted takes its directories with it.
    assert_eq!(scim(&app, &theirs, Method::GET, "/Users", None).await.status, 200);
    let gone = app.send(&app.caller, Method::DELETE, &format!("/v1/organizations/{globex}"), None).await;
    assert_eq!(gone.status, 200, "{:?}", gone.body);
    assert_eq!(scim(&app, &theirs, Method::GET, "/Users", None).await.status, 401);
}

#[actix_web::test]
async fn versions_make_changes_conditional() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let ada = provision(&app, &directory, "ada@acme.example").await;
    let path = format!("/Users/{}", ada["id"].as_str().unwrap());
    let version = ada["meta"]["version"].as_str().unwrap().to_string();
    assert_eq!(version, "W/\"1\"");

    let put = |tag: &'static str| {
        let request = app.client.put(format!("{}{path}", directory.base_url)).bearer_auth(&directory.token);
        request.header("if-match", tag).header("content-type", "application/scim+json")
    };
    let stale = app.raw(put("W/\"7\"").body(user("ada@acme.example", "ada@acme.example").to_string())).await;
    assert_eq!(stale.status, 412, "{:?}", stale.body);
    let fresh = app
        .raw(
            put("W/\"1\"")
                .body(json!({"schemas": [USER], "userName": "ada@acme.example", "displayName": "Ada"}).to_string()),
        )
        .await;
    assert_eq!(fresh.status, 200, "{:?}", fresh.body);
    assert_eq!(fresh.body["meta"]["version"], "W/\"2\"");
    assert!(fresh.body.get("emails").is_none(), "PUT replaces the whole resource: {:?}", fresh.body);
    let request = app.client.get(format!("{}{path}", directory.base_url)).bearer_auth(&directory.token);
    let unchanged = app.raw(request.header("if-none-match", "W/\"2\"")).await;
    assert_eq!(unchanged.status, 304);
}

/// A request, and the status and `scimType` it must get.
type BadRequest = (Method, String, Option<Value>, u16, Option<&'static str>);

#[actix_web::test]
async fn bad_requests_get_scim_errors_and_change_nothing() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let ada = provision(&app, &directory, "ada@acme.example").await;
    let path = format!("/Users/{}", ada["id"].as_str().unwrap());
    let cases: Vec<BadRequest> = vec![
        (Method::POST, "/Users".into(), Some(json!("not an object")), 400, Some("invalidSyntax")),
        (Method::POST, "/Users".into(), Some(json!({"schemas": [USER], "userName": 7})), 400, Some("invalidValue")),
        (Method::POST, "/Users".into(), Some(json!({"schemas": [GROUP], "userName": "x"})), 400, Some("invalidSyntax")),
        (Method::GET, "/Users?filter=userName%20zz%20%22a%22".into(), None, 400, Some("invalidFilter")),
        (Method::GET, "/Users?count=many".into(), None, 400, Some("invalidValue")),
        (Method::PATCH, path.clone(), patch(json!([{"op": "remove"}])), 400, Some("noTarget")),
        (Method::PATCH, path.clone(), patch(json!([{"op": "remove", "path": "userName"}])), 400, Some("mutability")),
        (Method::PATCH, path.clone(), Some(json!({"Operations": []})), 400, Some("invalidSyntax")),
        (
            Method::POST,
            "/Groups".into(),
            Some(json!({"schemas": [GROUP], "displayName": "G", "members": [{"value": Uuid::new_v4()}]})),
            400,
            Some("invalidValue"),
        ),
        (Method::GET, format!("/Users/{}", Uuid::new_v4()), None, 404, None),
        (Method::GET, "/Users/not-an-id".into(), None, 404, None),
        (Method::GET, "/Nothing".into(), None, 404, None),
        (Method::POST, "/.search".into(), Some(json!({})), 501, None),
        (Method::POST, "/ServiceProviderConfig".into(), Some(json!({})), 405, None),
    ];
    for (method, at, body, status, scim_type) in cases {
        let answer = scim(&app, &directory, method.clone(), &at, body).await;
        assert_eq!(answer.status, status, "{method} {at}: {:?}", answer.body);
        if status != 405 {
            assert_eq!(answer.body["scimType"].as_str(), scim_type, "{method} {at}: {:?}", answer.body);
            assert_eq!(answer.body["status"], status.to_string(), "{method} {at}");
        }
    }
    let after = scim(&app, &directory, Method::GET, &path, None).await;
    assert_eq!(after.body["meta"]["version"], "W/\"1\"", "nothing changed: {:?}", after.body);
    let groups = scim(&app, &directory, Method::GET, "/Groups", None).await;
    assert_eq!(groups.body["totalResults"], 0);
}

#[actix_web::test]
async fn a_users_export_holds_the_directory_records_of_them_and_erasure_erases_them() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let ada = provision(&app, &directory, "ada@acme.example").await;
    let ada_scim = ada["id"].as_str().unwrap();
    let group = json!({"schemas": [GROUP], "displayName": "Staff", "members": [{"value": ada_scim}]});
    let staff = scim(&app, &directory, Method::POST, "/Groups", Some(group)).await;
    let ada_id = user_id_of(&app, "ada@acme.example").await;
    let exported = app.get(&format!("/v1/users/{ada_id}/export")).await;
    let records = exported.data()["directory_records"].as_array().unwrap().clone();
    assert_eq!(records.len(), 1, "{:?}", exported.body);
    assert_eq!(
        (records[0]["id"].as_str(), &records[0]["attributes"]["name"]["familyName"]),
        (Some(ada_scim), &json!("Lovelace"))
    );
    let erased = app.send(&app.caller, Method::DELETE, &format!("/v1/users/{ada_id}"), None).await;
    assert_eq!(erased.status, 200, "{:?}", erased.body);
    assert_eq!(scim(&app, &directory, Method::GET, &format!("/Users/{ada_scim}"), None).await.status, 404);
    let staff =
        scim(&app, &directory, Method::GET, &format!("/Groups/{}", staff.body["id"].as_str().unwrap()), None).await;
    assert!(staff.body.get("members").is_none(), "{:?}", staff.body);
    assert_eq!(staff.body["meta"]["version"], "W/\"2\"");
}

#[actix_web::test]
async fn a_member_first_provisioned_inactive_is_deprovisioned() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let signed_up = sign_up(&app, &app.caller, "eve@acme.example").await;
    let eve = signed_up["user"]["id"].as_str().unwrap();
    let added =
        app.post(&format!("/v1/organizations/{org}/memberships"), &json!({"user_id": eve, "role": "member"})).await;
    assert_eq!(added.status, 201, "{:?}", added.body);
    let mut inactive = user("eve@acme.example", "eve@acme.example");
    inactive["active"] = json!(false);
    let made = scim(&app, &directory, Method::POST, "/Users", Some(inactive)).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert!(members(&app, &org).await.is_empty());
    let refresh = signed_up["refresh_token"].as_str().unwrap();
    let refused = public_post(&app, &app.caller, "/v1/auth/token", &json!({"refresh_token": refresh})).await;
    assert_eq!(refused.status, 401, "{:?}", refused.body);
    // A change of a user with nothing left to end writes no second deprovisioning.
    let path = format!("/Users/{}", made.body["id"].as_str().unwrap());
    let renamed = scim(
        &app,
        &directory,
        Method::PATCH,
        &path,
        patch(json!([{"op": "add", "path": "displayName", "value": "Eve"}])),
    )
    .await;
    assert_eq!(renamed.status, 200, "{:?}", renamed.body);
    let deprovisioned = app.audit_types().await.into_iter().filter(|t| t == "scim.user.deprovisioned").count();
    assert_eq!(deprovisioned, 1);
}

#[actix_web::test]
async fn concurrent_changes_of_one_group_lose_none_and_one_name_is_created_once() {
    let app = spawn_app().await;
    let org = organization(&app, &app.caller, "Acme").await;
    let directory = directory(&app, &app.caller, &org, json!([])).await;
    let mut ids = Vec::new();
    for i in 0..8 {
        let made = scim(
            &app,
            &directory,
            Method::POST,
            "/Users",
            Some(json!({"schemas": [USER], "userName": format!("u{i}")})),
        )
        .await;
        ids.push(made.body["id"].as_str().unwrap().to_string());
    }
    let group =
        scim(&app, &directory, Method::POST, "/Groups", Some(json!({"schemas": [GROUP], "displayName": "All"}))).await;
    let path = format!("/Groups/{}", group.body["id"].as_str().unwrap());
    let adds = ids.iter().map(|id| {
        scim(
            &app,
            &directory,
            Method::PATCH,
            &path,
            patch(json!([{"op": "add", "path": "members", "value": [{"value": id}]}])),
        )
    });
    for added in futures_util::future::join_all(adds).await {
        assert_eq!(added.status, 200, "{:?}", added.body);
    }
    let after = scim(&app, &directory, Method::GET, &path, None).await;
    assert_eq!(after.body["members"].as_array().unwrap().len(), 8, "{:?}", after.body);
    assert_eq!(after.body["meta"]["version"], "W/\"9\"");

    let creates = (0..6)
        .map(|_| scim(&app, &directory, Method::POST, "/Users", Some(user("same@acme.example", "same@acme.example"))));
    let mut statuses: Vec<u16> = futures_util::future::join_all(creates).await.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, vec![201, 409, 409, 409, 409, 409]);
}
