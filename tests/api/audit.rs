//! Operation 10: the hash chain, its filters, and its verification.
use entity::{audit_event, webhook_message};
use reqwest::Method;
use sea_orm::{sea_query::Expr, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::{first_shard, spawn_app};

/// The chain hash, computed here from the contract's words.
fn expected_hash(row: &Value) -> String {
    let text = [
        row["prev_hash"].as_str().unwrap().to_string(),
        row["seq"].to_string(),
        row["id"].as_str().unwrap().to_string(),
        row["type"].as_str().unwrap().to_string(),
        row["actor_kind"].as_str().unwrap().to_string(),
        row["actor_id"].as_str().unwrap_or("").to_string(),
        row["aggregate_id"].as_str().unwrap_or("").to_string(),
        row["occurred_at"].as_str().unwrap().to_string(),
        serde_jcs::to_string(&row["data"]).unwrap(),
    ]
    .join("\n");
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[actix_web::test]
async fn exported_rows_form_a_chain_verifiable_from_the_export_alone() {
    let app = spawn_app().await;
    for i in 0..3 {
        app.post("/v1/api-keys", &json!({"name": format!("k{i}")})).await;
    }
    let export = app.get("/v1/audit-logs/export").await;
    assert_eq!(export.status, 200);
    let rows = export.data().as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let mut prev = "0".repeat(64);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["seq"], i as i64 + 1);
        assert_eq!(row["prev_hash"], prev.as_str());
        assert_eq!(row["hash"], expected_hash(row).as_str());
        prev = row["hash"].as_str().unwrap().to_string();
    }
    let created = &rows[2];
    assert_eq!(created["type"], "api_key.created");
    assert_eq!(created["actor_kind"], "api_key");
    assert!(created["actor_id"].is_string());
    assert!(!export.body.to_string().contains(&app.caller.key), "no secret in the audit log");
}

#[actix_web::test]
async fn filters_select_families_actors_aggregates_text_and_time() {
    let app = spawn_app().await;
    let created = app.post("/v1/api-keys", &json!({"name": "k"})).await;
    let key_id = created.data()["id"].as_str().unwrap().to_string();
    app.post(&format!("/v1/api-keys/{key_id}/revoke"), &json!({})).await;
    let count = |reply: crate::helpers::Reply| reply.data().as_array().map(Vec::len).unwrap_or(usize::MAX);
    assert_eq!(count(app.get("/v1/audit-logs?type=api_key").await), 3);
    assert_eq!(count(app.get("/v1/audit-logs?type=api_key.revoked").await), 1);
    assert_eq!(count(app.get("/v1/audit-logs?type=api").await), 0, "a family is a whole dotted segment");
    assert_eq!(count(app.get("/v1/audit-logs?actor_kind=system").await), 2);
    assert_eq!(count(app.get("/v1/audit-logs?actor_kind=api_key").await), 2);
    assert_eq!(count(app.get(&format!("/v1/audit-logs?aggregate_id={key_id}")).await), 2);
    assert_eq!(count(app.get("/v1/audit-logs?search=revok").await), 1);
    assert_eq!(count(app.get("/v1/audit-logs?search=%25").await), 0, "wildcards match themselves");
    let all = app.get("/v1/audit-logs").await;
    let third = all.data()[2]["occurred_at"].as_str().unwrap().to_string();
    let encoded = third.replace(':', "%3A");
    assert_eq!(count(app.get(&format!("/v1/audit-logs?after={encoded}")).await), 2, "after is inclusive");
    assert_eq!(count(app.get(&format!("/v1/audit-logs?before={encoded}")).await), 3, "before is inclusive");
    let paged = app.get("/v1/audit-logs?limit=2&offset=1").await;
    assert_eq!(paged.data()[0]["seq"], 2);
    assert_eq!(paged.body["meta"]["has_more"], true);
    assert_eq!(count(app.get("/v1/audit-logs/export?limit=1000").await), 4);
}

#[actix_web::test]
async fn out_of_range_or_ill_typed_filters_are_422() {
    let app = spawn_app().await;
    for query in [
        "limit=101",
        "limit=0",
        "offset=-1",
        "actor_kind=robot",
        "aggregate_id=nope",
        "after=yesterday",
        "before=2026-13-01T00:00:00Z",
        "type=%00",
        "search=a%00b",
        "actor_kind=user%0A",
    ] {
        let reply = app.get(&format!("/v1/audit-logs?{query}")).await;
        assert_eq!((reply.status, reply.error_code()), (422, "validation_failed"), "{query}");
    }
    assert_eq!(app.get("/v1/audit-logs/export?limit=1000").await.status, 200);
    assert_eq!(app.get("/v1/audit-logs/export?limit=1001").await.status, 422);
}

#[actix_web::test]
async fn another_applications_rows_are_never_listed() {
    let app = spawn_app().await;
    let other = app.other_account().await;
    app.post("/v1/api-keys", &json!({"name": "mine"})).await;
    let theirs = app.send(&other, Method::GET, "/v1/audit-logs/export", None).await;
    assert_eq!(theirs.data().as_array().unwrap().len(), 2);
    assert!(!theirs.body.to_string().contains("mine"));
}

#[actix_web::test]
async fn concurrent_writers_never_fork_the_chain_and_a_tampered_row_is_named() {
    let app = spawn_app().await;
    let bodies: Vec<Value> = (0..20).map(|i| json!({"name": format!("c{i}")})).collect();
    let writes = bodies.iter().map(|body| app.post("/v1/api-keys", body));
    assert!(futures_util::future::join_all(writes).await.iter().all(|r| r.status == 201));
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    assert_eq!(gatehouse::audit::query::verify(shard, application_id).await.unwrap(), Ok(22));

    audit_event::Entity::update_many()
        .col_expr(audit_event::Column::EventType, Expr::value("api_key.deleted"))
        .filter(audit_event::Column::ApplicationId.eq(application_id))
        .filter(audit_event::Column::Seq.eq(7))
        .exec(shard)
        .await
        .unwrap();
    let broken = gatehouse::audit::query::verify(shard, application_id).await.unwrap().unwrap_err();
    assert_eq!(broken.seq, 7);
}

/// Verification reads a chain that writers are still extending: the rows
/// up to the head it read first, so a batch linked meanwhile is never
/// taken for a break.
#[actix_web::test]
async fn the_chain_verifies_while_writers_extend_it() {
    let app = spawn_app().await;
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let writing = std::cell::Cell::new(true);
    let writers = async {
        let bodies: Vec<Value> = (0..40).map(|i| json!({"name": format!("w{i}")})).collect();
        for chunk in bodies.chunks(4) {
            let writes = chunk.iter().map(|body| app.post("/v1/api-keys", body));
            assert!(futures_util::future::join_all(writes).await.iter().all(|r| r.status == 201));
        }
        writing.set(false);
    };
    let verifier = async {
        let mut verified = 0;
        while writing.get() {
            let rows = gatehouse::audit::query::verify(shard, application_id).await.unwrap();
            assert!(rows.is_ok(), "mid-write verification: {rows:?}");
            verified += 1;
        }
        verified
    };
    let ((), verified) = futures_util::future::join(writers, verifier).await;
    assert!(verified > 1, "verified {verified} times while writing");
    assert_eq!(gatehouse::audit::query::verify(shard, application_id).await.unwrap(), Ok(42));
}

/// A sign-in appends twice in one transaction (`session.created`, then
/// `sign_in.succeeded`): the second append chains on from the head the
/// first one locked, and the head is written once, at the commit.
#[actix_web::test]
async fn transactions_appending_twice_at_once_keep_one_chain_and_fan_out_every_row() {
    use crate::end_users::{public_post, sign_up, PASSWORD};
    let app = spawn_app().await;
    assert_eq!(app.post("/v1/webhooks", &json!({"url": "http://127.0.0.1:1/hook"})).await.status, 201);
    sign_up(&app, &app.caller, "ada@example.com").await;
    let body = json!({"email": "ada@example.com", "password": PASSWORD});
    let sign_ins = (0..6).map(|_| public_post(&app, &app.caller, "/v1/auth/sign-in", &body));
    assert!(futures_util::future::join_all(sign_ins).await.iter().all(|r| r.status == 200));

    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let rows = gatehouse::audit::query::verify(shard, application_id).await.unwrap().unwrap();
    // Every row from the endpoint's own `webhook.created` (after the
    // bootstrap's two) has a message.
    let from_the_endpoint_on = audit_event::Entity::find()
        .filter(audit_event::Column::ApplicationId.eq(application_id))
        .filter(audit_event::Column::Seq.gt(2))
        .count(shard)
        .await
        .unwrap();
    assert!(from_the_endpoint_on >= 2 + 2 * 6, "{from_the_endpoint_on} rows from the endpoint on, {rows} in all");
    let messages = webhook_message::Entity::find()
        .filter(webhook_message::Column::ApplicationId.eq(application_id))
        .count(shard)
        .await
        .unwrap();
    assert_eq!(messages, from_the_endpoint_on);
}

/// A transaction appending more rows than one `INSERT` takes (the chain
/// writer writes them 256 to a statement at the commit): every row is in
/// the chain, in order, and every one has its webhook message.
#[actix_web::test]
async fn a_transaction_appending_hundreds_of_rows_keeps_them_all_in_one_chain() {
    use gatehouse::audit::{Actor, Entry};
    let app = spawn_app().await;
    assert_eq!(app.post("/v1/webhooks", &json!({"url": "http://127.0.0.1:1/hook"})).await.status, 201);
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let tenant = app.state.directory.resolve(application_id).await.unwrap().unwrap();
    let scope = gatehouse::auth::public_scope(&app.state, tenant).unwrap();
    let mut txn = scope.begin().await.unwrap();
    let actor = Actor::system();
    let entry = |i: usize| Entry {
        id: None,
        actor: &actor,
        event_type: "test.appended",
        aggregate_id: None,
        data: json!({ "i": i }),
    };
    txn.audit_many((0..200).map(entry).collect()).await.unwrap();
    txn.audit_many((200..600).map(entry).collect()).await.unwrap();
    txn.commit().await.unwrap();

    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let rows = gatehouse::audit::query::verify(shard, application_id).await.unwrap().unwrap();
    let appended = audit_event::Entity::find()
        .filter(audit_event::Column::ApplicationId.eq(application_id))
        .filter(audit_event::Column::EventType.eq("test.appended"))
        .count(shard)
        .await
        .unwrap();
    assert_eq!(appended, 600, "{rows} rows in the chain");
    let messages = webhook_message::Entity::find()
        .filter(webhook_message::Column::ApplicationId.eq(application_id))
        .count(shard)
        .await
        .unwrap();
    assert!(messages >= 600, "{messages} messages");
}

#[actix_web::test]
async fn a_deleted_row_or_a_cut_tail_is_detected() {
    let app = spawn_app().await;
    for i in 0..3 {
        app.post("/v1/api-keys", &json!({"name": format!("k{i}")})).await;
    }
    let shard = &app.state.storage.shard(first_shard("us")).unwrap().conn;
    let application_id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    audit_event::Entity::delete_many()
        .filter(audit_event::Column::ApplicationId.eq(application_id))
        .filter(audit_event::Column::Seq.eq(5))
        .exec(shard)
        .await
        .unwrap();
    let cut = gatehouse::audit::query::verify(shard, application_id).await.unwrap().unwrap_err();
    assert_eq!(cut.seq, 5, "{cut:?}");
    audit_event::Entity::delete_many()
        .filter(audit_event::Column::ApplicationId.eq(application_id))
        .filter(audit_event::Column::Seq.eq(3))
        .exec(shard)
        .await
        .unwrap();
    let gap = gatehouse::audit::query::verify(shard, application_id).await.unwrap().unwrap_err();
    assert_eq!(gap.seq, 3, "{gap:?}");
}

/// Group commit: writers of one application commit side by side and their
/// rows are linked in batches. Sixty concurrent changes each leave their
/// row once, in one chain that verifies, and nothing pending.
#[actix_web::test]
async fn concurrent_changes_of_one_application_each_leave_one_row_in_one_chain() {
    let app = spawn_app().await;
    let bodies: Vec<Value> = (0..60).map(|i| json!({"name": format!("Concurrent {i}")})).collect();
    let created = futures_util::future::join_all(bodies.iter().map(|body| app.post("/v1/organizations", body))).await;
    assert!(created.iter().all(|reply| reply.status == 201));
    let id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let rows = audit_event::Entity::find()
        .filter(audit_event::Column::ApplicationId.eq(id))
        .filter(audit_event::Column::EventType.eq("organization.created"))
        .count(&shard.conn)
        .await
        .unwrap();
    assert_eq!(rows, 60);
    let pending = entity::audit_pending::Entity::find()
        .filter(entity::audit_pending::Column::ApplicationId.eq(id))
        .count(&shard.conn)
        .await
        .unwrap();
    assert_eq!(pending, 0, "every change linked its rows before it answered");
    assert!(gatehouse::audit::query::verify(&shard.conn, id).await.unwrap().is_ok());
}

/// Group commit, seen from the database: sixty concurrent changes of one
/// application move its chain head fewer times than they add rows (one
/// update of the head links the rows of many changes: on SQLite those of a
/// group the flush commits together, on PostgreSQL those committed while a
/// linking ran), and the chain verifies.
#[actix_web::test]
async fn concurrent_changes_move_the_chain_head_fewer_times_than_they_add_rows() {
    let app = spawn_app().await;
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    count_head_updates(&shard.conn).await;
    let bodies: Vec<Value> = (0..60).map(|i| json!({"name": format!("Grouped {i}")})).collect();
    let created = futures_util::future::join_all(bodies.iter().map(|body| app.post("/v1/organizations", body))).await;
    assert!(created.iter().all(|reply| reply.status == 201));

    let updates = head_updates(&shard.conn).await;
    assert!((1..60).contains(&updates), "60 changes moved the head {updates} times");
    let id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    assert!(gatehouse::audit::query::verify(&shard.conn, id).await.unwrap().is_ok());
}

/// Counts the updates of chain heads' hashes from now on (a trigger of the
/// test's own, in the test's own database).
async fn count_head_updates(db: &sea_orm::DatabaseConnection) {
    use sea_orm::ConnectionTrait;
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            "CREATE TABLE head_updates (n BIGINT NOT NULL); INSERT INTO head_updates VALUES (0);
             CREATE FUNCTION count_head_update() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN UPDATE head_updates SET n = n + 1; RETURN NEW; END $$;
             CREATE TRIGGER count_head_updates AFTER UPDATE OF hash ON audit_heads
               FOR EACH ROW EXECUTE FUNCTION count_head_update();"
        }
        _ => {
            "CREATE TABLE head_updates (n INTEGER NOT NULL); INSERT INTO head_updates VALUES (0);
             CREATE TRIGGER count_head_updates AFTER UPDATE OF hash ON audit_heads
               BEGIN UPDATE head_updates SET n = n + 1; END;"
        }
    };
    db.execute_unprepared(sql).await.unwrap();
}

async fn head_updates(db: &sea_orm::DatabaseConnection) -> i64 {
    use sea_orm::{ConnectionTrait, Statement};
    let row = db
        .query_one(Statement::from_string(db.get_database_backend(), "SELECT n FROM head_updates"))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "n").unwrap()
}

/// A change whose process died between its commit and the linking of its
/// audit row (here: the row written pending by hand, a few seconds old) has
/// the row linked by the node's sweep, and the chain verifies.
#[actix_web::test]
async fn an_audit_row_committed_and_left_pending_is_linked_by_the_sweep() {
    let app = spawn_app().await;
    let id: uuid::Uuid = app.caller.application_id.parse().unwrap();
    let shard = app.state.storage.shard(first_shard("us")).unwrap();
    let then = chrono::Utc::now() - chrono::Duration::seconds(5);
    let row = entity::audit_pending::Model {
        id: uuid::Uuid::now_v7(),
        application_id: id,
        event_type: "organization.created".into(),
        actor_kind: "system".into(),
        actor_id: None,
        aggregate_id: None,
        occurred_at: gatehouse::clock::format(then),
        data: r#"{"name":"Left pending"}"#.into(),
    };
    #[allow(clippy::disallowed_methods)] // the test plays a change that died after its commit
    entity::audit_pending::Entity::insert(entity::audit_pending::ActiveModel::from(row.clone()))
        .exec_without_returning(&shard.conn)
        .await
        .unwrap();
    crate::wait::until("the sweep linked the row", || async {
        audit_event::Entity::find_by_id(row.id).one(&shard.conn).await.unwrap().is_some()
    })
    .await;
    let linked = audit_event::Entity::find_by_id(row.id).one(&shard.conn).await.unwrap().unwrap();
    assert_eq!((linked.occurred_at, linked.data), (row.occurred_at, row.data), "as it was committed");
    assert!(gatehouse::audit::query::verify(&shard.conn, id).await.unwrap().is_ok());
    assert_eq!(entity::audit_pending::Entity::find_by_id(row.id).one(&shard.conn).await.unwrap(), None);
}
