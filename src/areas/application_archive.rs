//! `gatehouse export` and `gatehouse import`: a whole application as an
//! archive that another deployment (or region) restores. The archive is a
//! directory:
//!
//! - `application.db`: a SQLite database with the catalog's schema and the
//!   regional one, holding the application's catalog rows (its account's and
//!   its own) and every row of it in every tenant table. These are the rows
//!   a region move copies, read in one snapshot. Its migrations are its
//!   version: an import first migrates an older archive to this version, and
//!   refuses a later one.
//! - `manifest.json`: [`FORMAT`], the application, the rows, the exporting
//!   version.
//!
//! Every sealed value in it is sealed again under a key of the archive's
//! own, which is written to a separate file (`--key-file`), so the archive
//! alone opens nothing. The import seals every value again under the
//! importing deployment's master key. The audit chain goes whole: it
//! verifies in the archive and after the import, and ends with
//! `application.exported`, then `application.imported`.
//!
//! Keyed hashes are the exporting deployment's (recovery codes; the keys of
//! addresses as data subjects, which an erasure finds by the address's
//! HMAC). Into another deployment they cannot carry over. The import deletes
//! the recovery codes and destroys the address keys (their audit rows read
//! as erased), so an erasure there leaves nothing readable behind. Its audit
//! row counts both.
use std::path::{Path, PathBuf};

use entity::{personal_key, recovery_code};
use sea_orm::{AccessMode, ColumnTrait, Condition, DbErr, IsolationLevel, TransactionTrait};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::{applications, master_key_rotation::seal_all_again};
use crate::{
    application::{Tenant, TenantSnapshot},
    audit::Actor,
    config::Settings,
    crypto::{master_key::MasterKey, sha256_hex},
    events::catalog::EventType,
    storage::{catalog, shards, tenant_tables, Db, Storage, TenantConn, TenantScope},
};

pub const FORMAT: &str = "gatehouse.application_archive.v1";
const MANIFEST: &str = "manifest.json";
const DATABASE: &str = "application.db";

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub application_id: Uuid,
    pub name: String,
    pub region: String,
    pub exported_at: String,
    pub version: String,
    /// Rows of the application in tenant tables.
    pub rows: u64,
    /// Identifies the exporting deployment's keyed-hash secret (a digest
    /// of a digest, which reveals nothing of it): an import into a
    /// deployment with another secret drops what was keyed with it.
    pub keyed_hashes: String,
}

#[derive(Debug, Serialize)]
pub struct Imported {
    pub application_id: Uuid,
    pub region: String,
    pub shard: String,
    pub rows: u64,
    pub recovery_codes_deleted: u64,
    pub address_keys_destroyed: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Db(#[from] DbErr),
}

fn refused(why: impl Into<String>) -> ArchiveError {
    ArchiveError::Refused(why.into())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io { path: path.to_path_buf(), source }
}

/// Writes the application into `to` (absent or empty) and the archive's key
/// into `key_file` (new, mode 0600).
pub async fn export(storage: &Storage, id: Uuid, to: &Path, key_file: &Path) -> Result<Manifest, ArchiveError> {
    let tenant = applications::find(storage, id).await.map_err(|err| refused(err.to_string()))?;
    if tenant.moving_to.is_some() {
        return Err(refused("the application is moving between regions: export it once the move has ended"));
    }
    let db = storage
        .database(tenant.shard())
        .await?
        .ok_or_else(|| refused(format!("shard `{}`'s database is not configured here", tenant.shard())))?;
    if std::fs::read_dir(to).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(refused(format!("{} is not empty: an archive goes to a new directory", to.display())));
    }
    if key_file.exists() {
        return Err(refused(format!("{} exists: the archive's key goes to a new file", key_file.display())));
    }
    std::fs::create_dir_all(to).map_err(io(to))?;
    let written = write_archive(storage, tenant, db, to, key_file).await;
    if written.is_err() {
        // Nothing half-made stays behind to be mistaken for an archive.
        let _ = std::fs::remove_dir_all(to);
        let _ = std::fs::remove_file(key_file);
    }
    written
}

async fn write_archive(
    storage: &Storage,
    tenant: Tenant,
    db: Db,
    to: &Path,
    key_file: &Path,
) -> Result<Manifest, ArchiveError> {
    let id = tenant.id;
    let archive_key = MasterKey::generate(1);
    crate::crypto::master_key::write_private(key_file, archive_key.as_bytes()).map_err(io(key_file))?;
    let archive_key = MasterKey::from_base64(&archive_key).expect("a generated key reads");

    let scope = TenantScope::new(tenant.clone(), db.clone(), Actor::system());
    let mut txn = scope.begin().await?;
    txn.audit(EventType::ApplicationExported, Some(id), json!({"format": FORMAT})).await?;
    txn.commit().await?;

    let archive = storage.open_archive(&to.join(DATABASE)).await?;
    catalog::copy_application_rows(&storage.catalog.conn, &archive.conn, id, None).await?;
    let snapshot = read_snapshot(&db).await?;
    let rows = tenant_tables::copy_all(&snapshot, &archive.conn, id).await?;
    snapshot.commit().await?;
    let sealing = archive.conn.begin().await?;
    seal_all_again(&sealing, id, storage.master_key(), &archive_key).await?;
    sealing.commit().await?;
    close(archive).await?;

    let manifest = Manifest {
        format: FORMAT.to_string(),
        application_id: id,
        name: tenant.name.clone(),
        region: tenant.region.as_str().to_string(),
        exported_at: crate::clock::format(crate::clock::now()),
        version: crate::telemetry::VERSION.to_string(),
        rows,
        keyed_hashes: keyed_hashes_digest(storage.master_key()),
    };
    let path = to.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(manifest)
}

/// Restores the archive in `from` (opened with the key in `key_file`) into
/// `region` (the archive's when `None`) of this deployment, where the
/// application must not exist.
pub async fn import(
    storage: &Storage,
    settings: &Settings,
    from: &Path,
    key_file: &Path,
    region: Option<&str>,
) -> Result<Imported, ArchiveError> {
    let text = std::fs::read_to_string(from.join(MANIFEST)).map_err(io(&from.join(MANIFEST)))?;
    let manifest: Manifest = serde_json::from_str(&text)
        .ok()
        .filter(|m: &Manifest| m.format == FORMAT)
        .ok_or_else(|| refused(format!("{} is not a Gatehouse application archive ({FORMAT})", from.display())))?;
    let key_text = std::fs::read_to_string(key_file).map_err(io(key_file))?;
    let archive_key = MasterKey::from_base64(&key_text).map_err(|err| refused(format!("the key file: {err}")))?;
    let id = manifest.application_id;
    if catalog::find_application(&storage.catalog, id).await?.is_some() {
        return Err(refused(format!(
            "application {id} exists in this deployment (a region move is the way between regions)"
        )));
    }
    let name = region.unwrap_or(&manifest.region);
    let region = settings.region_named(name).ok_or_else(|| {
        refused(format!("region `{name}` is not one of this deployment's ({})", settings.region_names()))
    })?;
    let shard = shards::place(storage, region).await?;
    let db = storage
        .database(shard)
        .await?
        .ok_or_else(|| refused(format!("shard `{shard}`'s database is not configured here")))?;

    // The archive is migrated to this version in a copy: the archive stays as it was.
    let copy = std::env::temp_dir().join(format!("gatehouse-import-{}.db", Uuid::now_v7()));
    std::fs::copy(from.join(DATABASE), &copy).map_err(io(&from.join(DATABASE)))?;
    let imported = import_from(storage, &copy, id, &archive_key, &db, shard, &manifest).await;
    let _ = std::fs::remove_file(&copy);
    let (rows, recovery_codes_deleted, address_keys_destroyed) = imported?;
    Ok(Imported {
        application_id: id,
        region: region.as_str().to_string(),
        shard: shard.name.as_str().to_string(),
        rows,
        recovery_codes_deleted,
        address_keys_destroyed,
    })
}

async fn import_from(
    storage: &Storage,
    copy: &Path,
    id: Uuid,
    archive_key: &MasterKey,
    db: &Db,
    shard: crate::region::Shard,
    manifest: &Manifest,
) -> Result<(u64, u64, u64), ArchiveError> {
    let archive = storage.open_archive(copy).await?;
    let row =
        catalog::find_application(&archive, id).await?.ok_or_else(|| refused("the archive holds no application"))?;
    let mut row = row;
    (row.region, row.shard, row.moving_to, row.moving_to_shard) =
        (shard.region.as_str().to_string(), shard.stored_name(), None, None);
    let tenant = std::sync::Arc::new(TenantSnapshot::from_model(row).map_err(|err| refused(err.to_string()))?);
    let scope = TenantScope::new(tenant, db.clone(), Actor::system());
    let mut txn = scope.begin().await?;
    // Rows a crashed import left (no catalog row names them) give way.
    tenant_tables::delete_all(txn.conn(), id).await?;
    let rows = tenant_tables::copy_all(&archive.conn, txn.conn(), id).await?;
    seal_all_again(txn.conn(), id, archive_key, storage.master_key()).await.map_err(|err| match err {
        DbErr::Custom(_) => refused("the key file does not open the archive's secrets: is it this archive's key?"),
        err => err.into(),
    })?;
    let same_secret = manifest.keyed_hashes == keyed_hashes_digest(storage.master_key());
    let (mut recovery_codes_deleted, mut address_keys_destroyed) = (0, 0);
    if !same_secret {
        recovery_codes_deleted = txn.delete::<recovery_code::Entity>(Condition::all()).await?;
        let keys = txn.find::<personal_key::Entity>().all(txn.conn()).await?;
        let addresses: Vec<Uuid> = keys
            .iter()
            .map(|key| key.subject_id)
            .filter(|subject| subject.get_version() == Some(uuid::Version::Custom))
            .collect();
        if !addresses.is_empty() {
            address_keys_destroyed =
                txn.delete::<personal_key::Entity>(personal_key::Column::SubjectId.is_in(addresses)).await?;
        }
    }
    let data = json!({
        "format": FORMAT,
        "exported_at": manifest.exported_at,
        "version": manifest.version,
        "rows": rows,
        "same_deployment_secrets": same_secret,
        "recovery_codes_deleted": recovery_codes_deleted,
        "address_keys_destroyed": address_keys_destroyed,
    });
    txn.audit(EventType::ApplicationImported, Some(id), data).await?;
    txn.commit().await?;
    // Last, the catalog row: from here the application is served.
    let place = Some((shard.region.as_str(), shard.stored_name()));
    catalog::copy_application_rows(&archive.conn, &storage.catalog.conn, id, place).await?;
    close(archive).await?;
    Ok((rows, recovery_codes_deleted, address_keys_destroyed))
}

/// A read of the application's rows that sees one moment: PostgreSQL's
/// repeatable read; a SQLite read transaction is one by itself.
async fn read_snapshot(db: &Db) -> Result<sea_orm::DatabaseTransaction, DbErr> {
    match db.backend() {
        sea_orm::DbBackend::Postgres => {
            db.conn.begin_with_config(Some(IsolationLevel::RepeatableRead), Some(AccessMode::ReadOnly)).await
        }
        _ => db.conn.begin().await,
    }
}

/// One file, the write-ahead log folded in.
async fn close(archive: Db) -> Result<(), DbErr> {
    archive.checkpoint().await?;
    archive.conn.close().await
}

/// A digest of a digest of the keyed-hash secret: equal for two
/// deployments with one secret, and nothing to guess it from.
fn keyed_hashes_digest(key: &MasterKey) -> String {
    sha256_hex(sha256_hex(key.hashing_secret()).as_bytes())[..16].to_string()
}
