//! Secrets: the credential format and its checksum, the master key, sealing
//! of values at rest with AES-256-GCM, and hashing of credentials.
pub mod foreign_hashes;
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

/// A short code's hash at rest (a 6-digit email code, a recovery code):
/// HMAC-SHA256 under a key derived from the master key for `purpose`, over
/// the user's id and the code. A plain hash of a few digits falls to an
/// offline search; this one needs the master key.
pub fn user_code_hash(master_key: &master_key::MasterKey, purpose: &str, user_id: uuid::Uuid, code: &str) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    let key = sha256_hex(&[master_key.hashing_secret().as_slice(), b"/", purpose.as_bytes()].concat());
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
    mac.update(user_id.as_bytes());
    mac.update(code.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Compares two byte strings in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
