//! `gatehouse master-key rotate`: seals every sealed value again under the
//! current master key, online, while the nodes serve with both keys
//! (`security.master_key` the new one, `security.previous_master_key` the
//! old; docs/operations/master-key-rotation.md gives the order).
//!
//! Every sealed column is in [`SEALED`], with how to rebuild the context its
//! values were sealed in; a test holds it to the schema, so a new sealed
//! column cannot be left out. A value is sealed again only if the previous
//! key sealed it, with a compare-and-set on the old bytes: a value a node
//! rewrote meanwhile is left as the node wrote it. An application's values
//! go in transactions of at most [`BATCH`], each with its
//! `master_key.rotated` audit row, so a crash loses nothing and running the
//! command again resumes where it stopped. The catalog's sealed values (the
//! added shards' URLs, the keyed-hash secret) go first. The same list
//! seals an application archive's values under the archive's key and back
//! ([`seal_all_again`], `areas::application_archive`).
//!
//! The queries name tables and columns from these lists, and a regional
//! one always filters by the application (allowed by name for clippy's
//! `disallowed_methods`).
#![allow(clippy::disallowed_methods)]
use std::collections::BTreeMap;

use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Statement, Value};
use serde::Serialize;
use serde_json::json;
use uuid::Uuid;

use crate::{
    areas::{
        applications, billing, hooks, mail_queue, messaging, oauth_providers, provider_sign_in, second_factors::totp,
        sso_connections, users::imports,
    },
    audit::{personal, Actor},
    crypto::{master_key::MasterKey, seal},
    events::{catalog::EventType, delivery},
    storage::{catalog, keyed_hash_secret, shards, Db, Storage, TenantConn, TenantScope},
    tokens::keys,
};

/// Values sealed again per transaction.
const BATCH: u64 = 500;

/// A column of sealed values in the regional tables.
pub struct SealedColumn {
    pub table: &'static str,
    pub column: &'static str,
    /// The row's column that, with the application's id, made the context.
    part: Part,
    context: fn(Uuid, &PartValue) -> String,
}

enum Part {
    Id(&'static str),
    Name(&'static str),
    None,
}

enum PartValue {
    Id(Uuid),
    Name(String),
    None,
}

impl PartValue {
    fn id(&self) -> Uuid {
        match self {
            PartValue::Id(id) => *id,
            _ => Uuid::nil(),
        }
    }

    fn name(&self) -> &str {
        match self {
            PartValue::Name(name) => name,
            _ => "",
        }
    }
}

/// Every sealed column of the regional databases.
pub const SEALED: &[SealedColumn] = &[
    SealedColumn {
        table: "signing_keys",
        column: "private_key_sealed",
        part: Part::Id("id"),
        context: |app, part| keys::seal_context(app, part.id()),
    },
    SealedColumn {
        table: "webhooks",
        column: "secret_sealed",
        part: Part::Id("id"),
        context: |app, part| delivery::secret_context(app, part.id()),
    },
    SealedColumn {
        table: "webhooks",
        column: "previous_secret_sealed",
        part: Part::Id("id"),
        context: |app, part| delivery::secret_context(app, part.id()),
    },
    SealedColumn {
        table: "hooks",
        column: "secret_sealed",
        part: Part::Id("id"),
        context: |app, part| hooks::secret_context(app, part.id()),
    },
    SealedColumn {
        table: "mfa_factors",
        column: "secret_sealed",
        part: Part::Id("user_id"),
        context: |app, part| totp::context(app, part.id()),
    },
    SealedColumn {
        table: "personal_keys",
        column: "key_sealed",
        part: Part::Id("subject_id"),
        context: |app, part| personal::key_context(app, part.id()),
    },
    SealedColumn {
        table: "oauth_providers",
        column: "client_secret_sealed",
        part: Part::Name("provider"),
        context: |app, part| oauth_providers::secret_context(app, part.name()),
    },
    SealedColumn {
        table: "sso_connections",
        column: "client_secret_sealed",
        part: Part::Id("id"),
        context: |app, part| sso_connections::secret_context(app, part.id()),
    },
    SealedColumn {
        table: "sso_connections",
        column: "sp_key_sealed",
        part: Part::Id("id"),
        context: |app, part| sso_connections::saml::credentials::key_context(app, part.id()),
    },
    SealedColumn {
        table: "oauth_flows",
        column: "code_verifier_sealed",
        part: Part::Id("id"),
        context: |app, part| provider_sign_in::verifier_context(app, part.id()),
    },
    SealedColumn {
        table: "messaging_providers",
        column: "secret_sealed",
        part: Part::Name("channel"),
        context: |app, part| messaging::secret_context(app, part.name()),
    },
    SealedColumn {
        table: "billing_profiles",
        column: "payment_token_sealed",
        part: Part::None,
        context: |app, _| billing::token_context(app),
    },
    SealedColumn {
        table: "mail_queue",
        column: "sealed",
        part: Part::Id("id"),
        context: |app, part| mail_queue::sealing_context(app, part.id()),
    },
    SealedColumn {
        table: "user_imports",
        column: "lines_sealed",
        part: Part::Id("id"),
        context: |app, part| imports::sealing_context(app, part.id()),
    },
];

/// What a run did.
#[derive(Debug, Default, Serialize)]
pub struct Rotation {
    pub key_id: u8,
    pub previous_key_id: Option<u8>,
    /// Values sealed again, in the catalog and in applications.
    pub resealed: u64,
    pub applications: u64,
    /// Applications left for another run: moving, or in a database this
    /// configuration does not reach.
    pub skipped: Vec<Skipped>,
    /// Values still sealed under another key than the current one, after
    /// the run, in every database reached. 0 (and none skipped): the
    /// previous key is no longer needed.
    pub remaining: u64,
}

#[derive(Debug, Serialize)]
pub struct Skipped {
    pub application_id: Uuid,
    pub why: String,
}

/// Seals every value the previous key sealed again under the current key.
pub async fn rotate(storage: &Storage) -> Result<Rotation, DbErr> {
    let key = storage.master_key();
    let mut rotation =
        Rotation { key_id: key.id, previous_key_id: key.previous().map(|p| p.id), ..Rotation::default() };
    if let Some(previous) = key.previous() {
        rotation.resealed += reseal_catalog(&storage.catalog, key, previous.id).await?;
        for id in catalog::application_ids(&storage.catalog).await? {
            match reseal_application(storage, id, key, previous.id).await? {
                Ok(values) => {
                    rotation.resealed += values;
                    rotation.applications += 1;
                }
                Err(why) => rotation.skipped.push(Skipped { application_id: id, why }),
            }
        }
    }
    rotation.remaining = remaining(storage, key.id).await?;
    Ok(rotation)
}

/// The catalog's sealed columns (table, column, the one context of their
/// values): the added shards' URLs, the deployment's secrets.
const CATALOG_SEALED: [(&str, &str, &str); 2] = [
    ("shards", "database_url_sealed", shards::URL_CONTEXT),
    ("deployment_secrets", "value_sealed", keyed_hash_secret::CONTEXT),
];

/// The catalog's sealed values. Nodes read them rarely; no audit chain
/// holds them.
async fn reseal_catalog(catalog: &Db, key: &MasterKey, previous: u8) -> Result<u64, DbErr> {
    let mut resealed = 0;
    for (table, column, context) in CATALOG_SEALED {
        let backend = catalog.conn.get_database_backend();
        let select = format!(
            "SELECT {column} AS sealed FROM {table} WHERE substr({column}, 1, 1) = {}",
            placeholder(backend, 1)
        );
        let rows = catalog
            .conn
            .query_all(Statement::from_sql_and_values(backend, select, [Value::from(vec![previous])]))
            .await?;
        for row in rows {
            let old: Vec<u8> = row.try_get("", "sealed")?;
            let Ok(plain) = seal::open(key, context, &old) else { continue };
            let update = format!(
                "UPDATE {table} SET {column} = {} WHERE {column} = {}",
                placeholder(backend, 1),
                placeholder(backend, 2)
            );
            let values = [Value::from(seal::seal(key, context, &plain)), Value::from(old)];
            resealed +=
                catalog.conn.execute(Statement::from_sql_and_values(backend, update, values)).await?.rows_affected();
        }
    }
    Ok(resealed)
}

/// One application's values, in audited batches. `Err`: skipped, and why.
async fn reseal_application(
    storage: &Storage,
    id: Uuid,
    key: &MasterKey,
    previous: u8,
) -> Result<Result<u64, String>, DbErr> {
    let tenant = match applications::find(storage, id).await {
        Ok(tenant) => tenant,
        Err(err) => return Ok(Err(err.to_string())),
    };
    if tenant.moving_to.is_some() {
        return Ok(Err("it is moving; run the command again once the move has ended".into()));
    }
    let Some(db) = storage.database(tenant.shard()).await? else {
        return Ok(Err(format!("shard `{}`'s database is not configured here", tenant.shard())));
    };
    let scope = TenantScope::new(tenant, db.clone(), Actor::system());
    let mut resealed = 0;
    loop {
        // Read before the transaction, written in it by compare-and-set: its
        // first statement writes, so SQLite waits for another process's
        // writer instead of failing a read snapshot gone stale.
        let mut found = Vec::new();
        for column in SEALED {
            let room = BATCH.saturating_sub(found.len() as u64);
            if room == 0 {
                break;
            }
            let (values, _) = sealed_again(&db.conn, column, id, key, key, Some(previous), Some(room)).await?;
            found.extend(values);
        }
        let mut txn = scope.begin().await?;
        let mut batch = BTreeMap::<String, u64>::new();
        for value in found {
            if write_if_unchanged(txn.conn(), id, &value).await? {
                *batch.entry(format!("{}.{}", value.column.table, value.column.column)).or_default() += 1;
            }
        }
        let values: u64 = batch.values().sum();
        if values == 0 {
            return Ok(Ok(resealed));
        }
        let data = json!({"key_id": key.id, "previous_key_id": previous, "values": values, "columns": batch});
        txn.audit(EventType::MasterKeyRotated, Some(id), data).await?;
        txn.commit().await?;
        crate::failpoint::hit("master_key_rotation.batch_committed");
        resealed += values;
    }
}

/// A value sealed under the previous key, and the same sealed again.
struct Resealed {
    column: &'static SealedColumn,
    /// The row's column of the context: with the application, it finds the
    /// row by an index.
    part: PartValue,
    old: Vec<u8>,
    new: Vec<u8>,
}

/// Seals every sealed value of the application in `conn` again: opened
/// with `from`, sealed with `to` (an application archive's export and
/// import). Fails on a value `from` does not open.
pub async fn seal_all_again(
    conn: &impl ConnectionTrait,
    application_id: Uuid,
    from: &MasterKey,
    to: &MasterKey,
) -> Result<u64, DbErr> {
    let mut resealed = 0;
    for column in SEALED {
        let (values, unopened) = sealed_again(conn, column, application_id, from, to, None, None).await?;
        if unopened > 0 {
            return Err(DbErr::Custom(format!(
                "{unopened} value(s) of {}.{} do not open under the key in use (a rotation unfinished?)",
                column.table, column.column
            )));
        }
        for value in values {
            resealed += u64::from(write_if_unchanged(conn, application_id, &value).await?);
        }
    }
    Ok(resealed)
}

/// One column's values of the application (an empty one is no value: a
/// finished import's lines are emptied; only those sealed under key
/// `only`, when given; at most `limit`), opened with `from` and sealed again
/// with `to`; and how many did not open, which are left as they are (and
/// stay counted in [`Rotation::remaining`]).
async fn sealed_again(
    conn: &impl ConnectionTrait,
    column: &'static SealedColumn,
    application_id: Uuid,
    from: &MasterKey,
    to: &MasterKey,
    only: Option<u8>,
    limit: Option<u64>,
) -> Result<(Vec<Resealed>, u64), DbErr> {
    let backend = conn.get_database_backend();
    let (table, name) = (column.table, column.column);
    let part = match column.part {
        Part::Id(part) | Part::Name(part) => part,
        Part::None => "application_id",
    };
    let mut select = format!(
        "SELECT {part} AS part, {name} AS sealed FROM {table} WHERE application_id = {} AND length({name}) > 0",
        placeholder(backend, 1)
    );
    let mut values = vec![Value::from(application_id)];
    if let Some(only) = only {
        select += &format!(" AND substr({name}, 1, 1) = {}", placeholder(backend, 2));
        values.push(Value::from(vec![only]));
    }
    if let Some(limit) = limit {
        select += &format!(" LIMIT {limit}");
    }
    let (mut found, mut unopened) = (Vec::new(), 0);
    for row in conn.query_all(Statement::from_sql_and_values(backend, select, values)).await? {
        let old: Vec<u8> = row.try_get("", "sealed")?;
        let part = part_value(&column.part, &row)?;
        let context = (column.context)(application_id, &part);
        match seal::open(from, &context, &old) {
            Ok(plain) => found.push(Resealed { column, part, new: seal::seal(to, &context, &plain), old }),
            Err(_) => {
                tracing::warn!(%application_id, table, name, "a sealed value does not open; left as it is");
                unopened += 1;
            }
        }
    }
    Ok((found, unopened))
}

/// Writes the value sealed again where the old one still is: a node that
/// rewrote it meanwhile keeps its write.
async fn write_if_unchanged(
    conn: &impl ConnectionTrait,
    application_id: Uuid,
    value: &Resealed,
) -> Result<bool, DbErr> {
    let backend = conn.get_database_backend();
    let (table, name) = (value.column.table, value.column.column);
    let mut update = format!(
        "UPDATE {table} SET {name} = {} WHERE application_id = {} AND {name} = {}",
        placeholder(backend, 1),
        placeholder(backend, 2),
        placeholder(backend, 3),
    );
    let mut values = vec![Value::from(value.new.clone()), Value::from(application_id), Value::from(value.old.clone())];
    let row = match (&value.column.part, &value.part) {
        (Part::Id(part), PartValue::Id(id)) => Some((part, Value::from(*id))),
        (Part::Name(part), PartValue::Name(name)) => Some((part, Value::from(name.clone()))),
        _ => None,
    };
    if let Some((part, key)) = row {
        update += &format!(" AND {part} = {}", placeholder(backend, 4));
        values.push(key);
    }
    Ok(conn.execute(Statement::from_sql_and_values(backend, update, values)).await?.rows_affected() > 0)
}

fn part_value(part: &Part, row: &QueryResult) -> Result<PartValue, DbErr> {
    Ok(match part {
        Part::Id(_) => PartValue::Id(row.try_get("", "part")?),
        Part::Name(_) => PartValue::Name(row.try_get("", "part")?),
        Part::None => PartValue::None,
    })
}

/// Values sealed under another key than `current`, in the catalog and in
/// every regional database this configuration reaches.
async fn remaining(storage: &Storage, current: u8) -> Result<u64, DbErr> {
    let catalog_columns: Vec<(&str, &str)> =
        CATALOG_SEALED.iter().map(|(table, column, _)| (*table, *column)).collect();
    let mut count = count_other_keys(&storage.catalog, &catalog_columns, current).await?;
    let regional: Vec<(&str, &str)> = SEALED.iter().map(|s| (s.table, s.column)).collect();
    for shard in storage.known_databases() {
        if let Some(db) = storage.database(shard).await? {
            count += count_other_keys(&db, &regional, current).await?;
        }
    }
    Ok(count)
}

async fn count_other_keys(db: &Db, columns: &[(&str, &str)], current: u8) -> Result<u64, DbErr> {
    let backend = db.conn.get_database_backend();
    let mut count = 0;
    for (table, column) in columns {
        let select = format!(
            "SELECT COUNT(*) AS n FROM {table} WHERE length({column}) > 0 AND substr({column}, 1, 1) <> {}",
            placeholder(backend, 1)
        );
        let statement = Statement::from_sql_and_values(backend, select, [Value::from(vec![current])]);
        if let Some(row) = db.conn.query_one(statement).await? {
            count += u64::try_from(row.try_get::<i64>("", "n")?).unwrap_or(0);
        }
    }
    Ok(count)
}

fn placeholder(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => "?".to_string(),
    }
}
