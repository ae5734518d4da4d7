//! `gatehouse backup` and `gatehouse restore` for the embedded default
//! (SQLite files). A backup copies each database online with `VACUUM
//! INTO` (a consistent snapshot of that file while `serve` keeps writing),
//! the catalog first: an application made during the backup is then at
//! worst rows in its region's copy that no catalog row names, never a
//! catalog row whose data is missing. The master key file goes with them
//! (without it nothing sealed opens; the previous key's too, during a
//! rotation), and `manifest.json` lists what is there. PostgreSQL is
//! backed up with its own tools, per shard and the catalog
//! (docs/operations/postgresql.md).
use std::path::{Path, PathBuf};

use sea_orm::{ConnectionTrait, DbBackend};
use serde::{Deserialize, Serialize};

use super::Storage;

pub const FORMAT: &str = "gatehouse.backup.v1";
const MANIFEST: &str = "manifest.json";
use crate::crypto::master_key::{FILE as MASTER_KEY, PREVIOUS_FILE as PREVIOUS_MASTER_KEY};

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub created_at: String,
    /// The database files, the catalog first: `{label}.db`.
    pub databases: Vec<String>,
    /// Whether `master.key` is in the backup (false: the key is
    /// configured, `security.master_key`, and must be kept with it).
    pub master_key_file: bool,
    /// Whether `master.key.previous` is in the backup: one taken during a
    /// master-key rotation, which the restored node finishes.
    #[serde(default)]
    pub previous_master_key_file: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("the {0} database is not SQLite: back PostgreSQL up with pg_dump or its base backups, per shard and the catalog (docs/operations/postgresql.md)")]
    NotSqlite(&'static str),
    #[error("{0} is not empty: a backup goes to a new directory")]
    NotEmpty(PathBuf),
    #[error("{0} already holds databases: restore into an empty data directory")]
    DataDirInUse(PathBuf),
    #[error("{0} is not a Gatehouse backup ({MANIFEST} missing or of another format)")]
    NotABackup(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io { path: path.to_path_buf(), source }
}

fn is_empty_or_absent(dir: &Path) -> Result<bool, BackupError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(io(dir)(e)),
    }
}

/// Copies every database this node holds, and the master key file from
/// `data_dir`, into `to` (absent or empty).
pub async fn backup(storage: &Storage, data_dir: &Path, to: &Path) -> Result<Manifest, BackupError> {
    if !is_empty_or_absent(to)? {
        return Err(BackupError::NotEmpty(to.to_path_buf()));
    }
    std::fs::create_dir_all(to).map_err(io(to))?;
    let mut databases = Vec::new();
    for db in storage.all() {
        if db.backend() != DbBackend::Sqlite {
            return Err(BackupError::NotSqlite(db.label));
        }
        let file = format!("{}.db", db.label);
        let target = to.join(&file);
        let quoted = target.display().to_string().replace('\'', "''");
        #[allow(clippy::disallowed_methods)] // a whole-file copy, no rows of a tenant
        db.conn.execute_unprepared(&format!("VACUUM INTO '{quoted}'")).await?;
        databases.push(file);
    }
    let mut copied = [false; 2];
    for (file, copied) in [MASTER_KEY, PREVIOUS_MASTER_KEY].into_iter().zip(&mut copied) {
        let key = data_dir.join(file);
        *copied = key.exists();
        if *copied {
            let copy = to.join(file);
            std::fs::copy(&key, &copy).map_err(io(&copy))?;
            private(&copy)?;
        }
    }
    let manifest = Manifest {
        format: FORMAT.to_string(),
        created_at: crate::clock::format(crate::clock::now()),
        databases,
        master_key_file: copied[0],
        previous_master_key_file: copied[1],
    };
    let path = to.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(manifest)
}

/// Copies a backup's files into `data_dir`, which holds no database yet
/// (run before `serve`, with the configuration that names `data_dir`).
pub fn restore(from: &Path, data_dir: &Path) -> Result<Manifest, BackupError> {
    let not_a_backup = || BackupError::NotABackup(from.to_path_buf());
    let text = std::fs::read_to_string(from.join(MANIFEST)).map_err(|_| not_a_backup())?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|_| not_a_backup())?;
    if manifest.format != FORMAT {
        return Err(not_a_backup());
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let in_use = std::fs::read_dir(data_dir)
        .map_err(io(data_dir))?
        .flatten()
        .any(|entry| entry.path().extension().is_some_and(|ext| ext == "db"));
    if in_use || (manifest.master_key_file && data_dir.join(MASTER_KEY).exists()) {
        return Err(BackupError::DataDirInUse(data_dir.to_path_buf()));
    }
    for file in &manifest.databases {
        if file.contains('/') || file.contains("..") {
            return Err(not_a_backup());
        }
        let target = data_dir.join(file);
        std::fs::copy(from.join(file), &target).map_err(io(&target))?;
    }
    let keys = [(MASTER_KEY, manifest.master_key_file), (PREVIOUS_MASTER_KEY, manifest.previous_master_key_file)];
    for (file, _) in keys.into_iter().filter(|(_, in_backup)| *in_backup) {
        let target = data_dir.join(file);
        std::fs::copy(from.join(file), &target).map_err(io(&target))?;
        private(&target)?;
    }
    Ok(manifest)
}

fn private(path: &Path) -> Result<(), BackupError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io(path))?;
    }
    Ok(())
}
