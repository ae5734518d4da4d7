//! Secrets: the credential format and its checksum, the master key, sealing
//! of values at rest with AES-256-GCM, and hashing of credentials.
pub mod key_format;
pub mod master_key;
pub mod password;
#[cfg(test)]
mod redaction;
pub mod seal;

use sha2::{Digest, Sha256};

/// SHA-256 of a credential, as stored at rest.
pub fn sha256(value: &str) -> [u8; 32] {
    Sha256::digest(value.as_bytes()).into()
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(value: &[u8]) -> String {
    hex(&Sha256::digest(value))
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Compares two byte strings in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
