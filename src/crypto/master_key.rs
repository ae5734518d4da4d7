//! The master key that seals secrets at rest. Production sets
//! `security.master_key` (base64 of 32 bytes); the embedded default generates
//! `{data_dir}/master.key` (mode 0600) on first start.
use std::path::Path;

use base64::{engine::general_purpose::STANDARD, Engine};
use rand::{rngs::OsRng, RngCore};

#[derive(Clone)]
pub struct MasterKey {
    bytes: [u8; 32],
    /// Identifies the key in sealed values, so that a rotation can tell old
    /// values from new ones.
    pub id: u8,
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKey").field("id", &self.id).finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MasterKeyError {
    #[error("security.master_key must be base64 of exactly 32 bytes")]
    Malformed,
    #[error("cannot read or write the master key file {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

impl MasterKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    pub fn from_base64(value: &str) -> Result<Self, MasterKeyError> {
        let decoded = STANDARD.decode(value.trim()).map_err(|_| MasterKeyError::Malformed)?;
        let bytes: [u8; 32] = decoded.try_into().map_err(|_| MasterKeyError::Malformed)?;
        Ok(Self { bytes, id: 1 })
    }

    /// Reads the configured key, or the key file under `data_dir`, creating
    /// it when absent.
    pub fn load_or_generate(configured: Option<&str>, data_dir: &Path) -> Result<Self, MasterKeyError> {
        if let Some(value) = configured {
            return Self::from_base64(value);
        }
        let path = data_dir.join("master.key");
        let io = |source| MasterKeyError::Io { path: path.display().to_string(), source };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_base64(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).map_err(io)?;
                let mut bytes = [0u8; 32];
                OsRng.fill_bytes(&mut bytes);
                write_private(&path, STANDARD.encode(bytes).as_bytes()).map_err(io)?;
                // Another process may have won the race: the file is the truth.
                Self::from_base64(&std::fs::read_to_string(&path).map_err(io)?)
            }
            Err(e) => Err(io(e)),
        }
    }
}

fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
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
