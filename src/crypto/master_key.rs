//! The master key that seals secrets at rest. Production sets
//! `security.master_key` (base64 of 32 bytes); the embedded default generates
//! `{data_dir}/master.key` (mode 0600) on first start.
use std::{
    path::Path,
    sync::{Arc, OnceLock},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use rand::{rngs::OsRng, RngCore};

use crate::config::SecuritySettings;

/// The keys that seal secrets at rest: the current one seals, and a previous
/// one still opens what it sealed while `gatehouse master-key rotate` seals
/// it again under the current one (`areas::master_key_rotation`).
#[derive(Clone)]
pub struct MasterKey {
    bytes: [u8; 32],
    /// Identifies the key in sealed values, so that a rotation can tell old
    /// values from new ones: `2:` before the base64, 1 when none.
    pub id: u8,
    previous: Option<Box<MasterKey>>,
    /// The secret of keyed hashes (of short codes, of addresses as data
    /// subjects), which cannot be computed again under a new key: it stays
    /// across rotations, kept in the catalog sealed under the current key
    /// (`storage::keyed_hash_secret`). Shared by every clone.
    hashing: Arc<OnceLock<[u8; 32]>>,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let previous = self.previous.as_ref().map(|key| key.id);
        f.debug_struct("MasterKey").field("id", &self.id).field("previous", &previous).finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MasterKeyError {
    #[error("a master key must be base64 of exactly 32 bytes, after an optional id from 1 to 255 and `:`")]
    Malformed,
    #[error("the previous master key has the current one's id ({0}): give the new key another id (`{1}:` before it)")]
    SameId(u8, u8),
    #[error("cannot read or write the master key file {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

impl MasterKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// A key as written in configuration or its file: `[id:]base64`.
    pub fn from_base64(value: &str) -> Result<Self, MasterKeyError> {
        let value = value.trim();
        let (id, encoded) = match value.split_once(':') {
            Some((id, encoded)) => {
                (id.parse::<u8>().ok().filter(|id| *id > 0).ok_or(MasterKeyError::Malformed)?, encoded)
            }
            None => (1, value),
        };
        let decoded = STANDARD.decode(encoded).map_err(|_| MasterKeyError::Malformed)?;
        let bytes: [u8; 32] = decoded.try_into().map_err(|_| MasterKeyError::Malformed)?;
        Ok(Self { bytes, id, previous: None, hashing: Arc::default() })
    }

    /// A new random key with id `id`, as written in configuration.
    pub fn generate(id: u8) -> String {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        format!("{id}:{}", STANDARD.encode(bytes))
    }

    /// Reads the configured keys (`security.master_key` and
    /// `security.previous_master_key`), or the key files under `data_dir`
    /// (`master.key`, created when absent, and `master.key.previous`).
    pub fn load_or_generate(security: &SecuritySettings, data_dir: &Path) -> Result<Self, MasterKeyError> {
        let key = match &security.master_key {
            Some(value) => Self::from_base64(value)?,
            None => Self::from_file(data_dir)?,
        };
        let previous = match &security.previous_master_key {
            Some(value) => Some(Self::from_base64(value)?),
            None if security.master_key.is_none() => read_if_present(&data_dir.join(PREVIOUS_FILE))?,
            None => None,
        };
        key.with_previous(previous)
    }

    /// This key, still opening what `previous` sealed (nothing, if it is
    /// this key: a `master-key new` cut short).
    pub fn with_previous(self, previous: Option<MasterKey>) -> Result<Self, MasterKeyError> {
        match previous.filter(|previous| previous.bytes != self.bytes) {
            Some(previous) if previous.id == self.id => Err(MasterKeyError::SameId(self.id, self.id % 255 + 1)),
            previous => Ok(Self { previous: previous.map(Box::new), ..self }),
        }
    }

    /// The key that sealed `sealed` (by the id it starts with), if held.
    pub fn sealed_by(&self, id: u8) -> Option<&MasterKey> {
        match &self.previous {
            _ if id == self.id => Some(self),
            Some(previous) if previous.id == id => Some(previous),
            _ => None,
        }
    }

    pub fn previous(&self) -> Option<&MasterKey> {
        self.previous.as_deref()
    }

    /// The secret of keyed hashes; see the field. Until storage has set it
    /// (at start-up, before any request), the current key's bytes: what a
    /// deployment's first secret is, and what unit tests use.
    pub fn hashing_secret(&self) -> &[u8; 32] {
        self.hashing.get().unwrap_or(&self.bytes)
    }

    /// Sets the keyed hashes' secret, for this key and all its clones.
    pub fn set_hashing_secret(&self, secret: [u8; 32]) {
        let _ = self.hashing.set(secret);
    }

    fn from_file(data_dir: &Path) -> Result<Self, MasterKeyError> {
        let path = data_dir.join(FILE);
        let io = |source| MasterKeyError::Io { path: path.display().to_string(), source };
        if let Some(key) = read_if_present(&path)? {
            return Ok(key);
        }
        std::fs::create_dir_all(data_dir).map_err(io)?;
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        write_private(&path, STANDARD.encode(bytes).as_bytes()).map_err(io)?;
        // Another process may have won the race: the file is the truth.
        Self::from_base64(&std::fs::read_to_string(&path).map_err(io)?)
    }
}

/// The embedded default's key file, and the previous key's during a rotation.
pub const FILE: &str = "master.key";
pub const PREVIOUS_FILE: &str = "master.key.previous";

/// The embedded default's rotation: a new random key with the next id
/// becomes `master.key`, and the current one `master.key.previous`.
/// Refused while a previous key is still there (a rotation unfinished).
pub fn renew_file(data_dir: &Path) -> Result<u8, String> {
    let (path, previous_path) = (data_dir.join(FILE), data_dir.join(PREVIOUS_FILE));
    let current = MasterKey::from_file(data_dir).map_err(|err| err.to_string())?;
    let previous = read_if_present(&previous_path).map_err(|err| err.to_string())?;
    // A previous key equal to the current one is a renewal cut short: finish it.
    if previous.as_ref().is_some_and(|previous| previous.bytes != current.bytes) {
        return Err(format!(
            "{} exists: finish that rotation first (`gatehouse master-key rotate`, then remove the file)",
            previous_path.display()
        ));
    }
    let io = |err: std::io::Error| format!("{}: {err}", data_dir.display());
    if previous.is_none() {
        let written = format!("{}:{}", current.id, STANDARD.encode(current.bytes));
        write_private(&previous_path, written.as_bytes()).map_err(io)?;
    }
    let id = current.id % 255 + 1;
    // The new key goes in whole or not at all: written aside, then renamed over.
    let next = data_dir.join(format!("{FILE}.next"));
    let _ = std::fs::remove_file(&next);
    write_private(&next, MasterKey::generate(id).as_bytes()).map_err(io)?;
    std::fs::rename(&next, &path).map_err(io)?;
    Ok(id)
}

fn read_if_present(path: &Path) -> Result<Option<MasterKey>, MasterKeyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => MasterKey::from_base64(&text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MasterKeyError::Io { path: path.display().to_string(), source }),
    }
}

/// Writes a new file only its owner reads (an existing one is left as it is).
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => file.write_all(contents),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(dir: &Path) -> MasterKey {
        MasterKey::load_or_generate(&SecuritySettings::default(), dir).unwrap()
    }

    #[test]
    fn a_renewal_makes_the_next_key_current_keeps_the_old_one_opening_and_finishes_when_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let first = load(dir.path());
        assert_eq!((first.id, first.previous().map(|p| p.id)), (1, None));
        // Cut short: the previous file written, the new key not yet.
        std::fs::copy(dir.path().join(FILE), dir.path().join(PREVIOUS_FILE)).unwrap();
        assert_eq!(load(dir.path()).previous().map(|p| p.id), None, "a previous key equal to the current one is none");
        assert_eq!(renew_file(dir.path()), Ok(2), "running it again finishes it");
        let renewed = load(dir.path());
        assert_eq!((renewed.id, renewed.previous().map(|p| p.bytes)), (2, Some(first.bytes)));
        assert!(renew_file(dir.path()).is_err(), "one rotation at a time");
    }
}
