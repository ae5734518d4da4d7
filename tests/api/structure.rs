//! The structure that makes isolation and audit hold by construction: the
//! registry of tenant tables, the commit that refuses an unaudited change,
//! and a settings change that survives a crash with its audit row.
use entity::organization;
use gatehouse::{areas::master_key_rotation, auth::public_scope, storage::tenant_tables};
use sea_orm::{ActiveValue::Set, ConnectionTrait, DbBackend, Statement};
use serde_json::{json, Value};

use crate::{
    binary::Binary,
    helpers::{first_shard, spawn_app},
};

#[actix_web::test]
async fn every_regional_table_with_an_application_id_is_a_registered_tenant_table() {
    let app = spawn_app().await;
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let sql = match shard.backend() {
        DbBackend::Sqlite => {
            "SELECT m.name AS t FROM sqlite_master m JOIN pragma_table_info(m.name) c \
             WHERE m.type = 'table' AND c.name = 'application_id'"
        }
        _ => {
            "SELECT table_name AS t FROM information_schema.columns \
             WHERE column_name = 'application_id' AND table_schema = current_schema()"
        }
    };
    let rows = shard.conn.query_all(Statement::from_string(shard.backend(), sql)).await.unwrap();
    let mut found: Vec<String> = rows.iter().map(|r| r.try_get::<String>("", "t").unwrap()).collect();
    found.sort();
    assert!(found.len() >= 15, "the schema query found the tables: {found:?}");
    let registered = tenant_tables();
    let missing: Vec<&String> = found.iter().filter(|t| !registered.contains(&t.as_str())).collect();
    assert!(missing.is_empty(), "tables with application_id not registered as tenant tables: {missing:?}");
}

#[actix_web::test]
async fn every_sealed_column_of_the_regional_schema_is_one_a_master_key_rotation_seals_again() {
    let app = spawn_app().await;
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let sql = match shard.backend() {
        DbBackend::Sqlite => {
            "SELECT m.name || '.' || c.name AS t FROM sqlite_master m JOIN pragma_table_info(m.name) c \
             WHERE m.type = 'table' AND c.name LIKE '%sealed'"
        }
        _ => {
            "SELECT table_name || '.' || column_name AS t FROM information_schema.columns \
             WHERE column_name LIKE '%sealed' AND table_schema = current_schema()"
        }
    };
    let rows = shard.conn.query_all(Statement::from_string(shard.backend(), sql)).await.unwrap();
    let mut found: Vec<String> = rows.iter().map(|r| r.try_get::<String>("", "t").unwrap()).collect();
    found.sort();
    let mut registered: Vec<String> =
        master_key_rotation::SEALED.iter().map(|c| format!("{}.{}", c.table, c.column)).collect();
    registered.sort();
    assert_eq!(found, registered, "sealed columns in the schema, and those the rotation knows");
}

#[actix_web::test]
async fn a_change_without_an_audit_row_refuses_to_commit_and_leaves_nothing() {
    let app = spawn_app().await;
    let id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(id).await.unwrap().unwrap();
    let scope = public_scope(&app.state, tenant).unwrap();
    let mut txn = scope.begin().await.unwrap();
    let now = chrono::Utc::now();
    let row = organization::ActiveModel {
        id: Set(uuid::Uuid::now_v7()),
        application_id: Set(uuid::Uuid::nil()), // the handle sets the real one
        name: Set("Unaudited".into()),
        slug: Set("unaudited".into()),
        plan_key: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    };
    txn.insert(row).await.unwrap();
    let refused = txn.commit().await.unwrap_err();
    assert!(refused.to_string().contains("no audit row"), "{refused}");
    assert_eq!(app.get("/v1/organizations").await.data(), &json!([]), "nothing was written");
    // The same change with its audit row commits.
    let created = app.post("/v1/organizations", &json!({"name": "Audited"})).await;
    assert_eq!(created.status, 201);
}

#[actix_web::test]
async fn a_settings_change_killed_between_its_two_databases_keeps_its_audit_row() {
    // Arrange: the real binary, set to abort right after the catalog commit.
    let mut binary = Binary::new(&[("RUST_LOG", "error".into())]);
    let (app, key) = binary.bootstrap();
    let (app, key, base) = (app.as_str(), key.as_str(), binary.base.clone());
    let client = reqwest::Client::new();
    binary.add_env("GATEHOUSE_FAILPOINT", "settings_committed_in_catalog".into());
    let mut server = binary.serve(None).await;
    // Act: the change is committed in the catalog, then the process dies.
    let patch = client
        .patch(format!("{base}/v1/applications/{app}"))
        .bearer_auth(key)
        .header("x-application-id", app)
        .json(&json!({"name": "Renamed"}))
        .send()
        .await;
    assert!(patch.is_err() || !patch.unwrap().status().is_success(), "the process aborted before answering");
    let _ = server.wait();
    // Assert: after a restart the change and its audit row are both there.
    binary.env_remove("GATEHOUSE_FAILPOINT");
    let mut server = binary.serve(None).await;
    let get = |path: String| client.get(format!("{base}{path}")).bearer_auth(key).header("x-application-id", app);
    let application: Value = get(format!("/v1/applications/{app}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(application["data"]["name"], "Renamed");
    // The relay appends the pending row shortly after the start.
    let rows = crate::wait::until_some("the relayed application.updated row", || async {
        let audit: Value =
            get("/v1/audit-logs?type=application.updated".into()).send().await.unwrap().json().await.unwrap();
        let rows = audit["data"].as_array().unwrap_or_else(|| panic!("{audit}")).clone();
        (!rows.is_empty()).then_some(rows)
    })
    .await;
    assert_eq!(rows.len(), 1, "exactly one application.updated row: {rows:?}");
    assert_eq!(rows[0]["data"]["changed"], json!(["name"]));
    let verify = binary.command(&["audit", "verify", "--application", app]).output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    server.kill().unwrap();
    let _ = server.wait();
}

/// Two nodes relaying the same catalog audit row at once: the row is in the
/// chain once, and the relay that finds it already appended (by its id, at
/// the commit, on PostgreSQL) leaves quietly rather than failing.
#[actix_web::test]
async fn two_relays_of_one_pending_audit_row_append_it_once() {
    use entity::{audit_event, pending_audit_event};
    use gatehouse::areas::applications::relay_pending_audit;
    use sea_orm::{ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter};
    let app = spawn_app().await;
    let storage = &app.state.storage;
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let id = uuid::Uuid::now_v7();
    let pending = pending_audit_event::Model {
        id,
        application_id,
        event_type: "application.updated".into(),
        actor_kind: "system".into(),
        actor_id: None,
        aggregate_id: Some(application_id),
        data: json!({"changed": ["name"]}),
        created_at: chrono::Utc::now() - chrono::Duration::minutes(1),
    };
    pending_audit_event::Entity::insert(pending.into_active_model())
        .exec_without_returning(&storage.catalog.conn)
        .await
        .unwrap();

    let (first, second) = futures_util::future::join(
        relay_pending_audit(storage, chrono::Duration::zero()),
        relay_pending_audit(storage, chrono::Duration::zero()),
    )
    .await;

    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    let shard = &storage.shard(first_shard("us")).unwrap().conn;
    let rows = audit_event::Entity::find().filter(audit_event::Column::Id.eq(id)).count(shard).await.unwrap();
    assert_eq!(rows, 1);
    assert!(gatehouse::audit::query::verify(shard, application_id).await.unwrap().is_ok());
    assert_eq!(pending_audit_event::Entity::find().count(&storage.catalog.conn).await.unwrap(), 0);
}

/// Nodes of one deployment starting together on fresh PostgreSQL databases
/// take turns: every one migrates without error, and exactly one makes the
/// first-start application. (SQLite has one node per file: nothing to race.)
#[actix_web::test]
#[cfg_attr(
    not(gatehouse_test_postgres),
    ignore = "needs PostgreSQL: GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test"
)]
async fn nodes_starting_together_migrate_in_turn_and_make_one_first_application() {
    if std::env::var("GATEHOUSE_TEST_POSTGRES_URL").is_err() {
        eprintln!("skipped: GATEHOUSE_TEST_POSTGRES_URL is not set");
        return;
    }
    let mut fresh = crate::helpers::TestStorage::new().await;
    // On PostgreSQL only an explicit setting makes one.
    fresh.settings.bootstrap.first_start_application = gatehouse::config::FirstStartApplication::Always;
    let settings = &fresh.settings;
    let opened = futures_util::future::join_all((0..4).map(|_| gatehouse::startup::open_storage(settings))).await;
    let nodes: Vec<_> = opened.into_iter().map(|node| node.expect("every node migrates")).collect();
    let first =
        futures_util::future::join_all(nodes.iter().map(|node| gatehouse::bootstrap::first_start(node, settings)))
            .await;
    let made = first
        .into_iter()
        .map(|made| made.expect("first start"))
        .filter(|made| matches!(made, gatehouse::bootstrap::FirstStart::Created(_)))
        .count();
    assert_eq!(made, 1);
}
