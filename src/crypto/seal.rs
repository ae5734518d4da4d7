//! AES-256-GCM sealing of values at rest. A sealed value is
//! `key_id (1 byte) || nonce (12 random bytes) || ciphertext+tag`, and the
//! associated data binds it to where it belongs (application, record, field),
//! so a ciphertext copied into another tenant's row does not open.
use aes_gcm::{
    aead::{Aead, KeyInit, Payload},
    Aes256Gcm, Nonce,
};
use rand::{rngs::OsRng, RngCore};

use super::master_key::MasterKey;

#[derive(Debug, thiserror::Error)]
#[error("a sealed value could not be opened")]
pub struct OpenError;

pub fn seal(key: &MasterKey, context: &str, plaintext: &[u8]) -> Vec<u8> {
    let mut out = vec![key.id];
    out.extend(seal_with(key.bytes(), context, plaintext));
    out
}

/// Opens a value sealed under `key` or, during a rotation, its previous key.
pub fn open(key: &MasterKey, context: &str, sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
    let (id, rest) = sealed.split_first().ok_or(OpenError)?;
    open_with(key.sealed_by(*id).ok_or(OpenError)?.bytes(), context, rest)
}

/// The id of the master key that sealed `sealed`.
pub fn key_id(sealed: &[u8]) -> Option<u8> {
    sealed.first().copied()
}

/// `nonce || ciphertext+tag` under a raw key (a data subject's, for one).
pub fn seal_with(key: &[u8; 32], context: &str, plaintext: &[u8]) -> Vec<u8> {
    let cipher = Aes256Gcm::new(key.into());
    let mut nonce = [0u8; 12];
    OsRng.fill_bytes(&mut nonce);
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad: context.as_bytes() })
        .expect("AES-GCM encryption of an in-memory buffer cannot fail");
    let mut out = Vec::with_capacity(12 + sealed.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

pub fn open_with(key: &[u8; 32], context: &str, sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
    if sealed.len() < 12 + 16 {
        return Err(OpenError);
    }
    let cipher = Aes256Gcm::new(key.into());
    cipher
        .decrypt(Nonce::from_slice(&sealed[..12]), Payload { msg: &sealed[12..], aad: context.as_bytes() })
        .map_err(|_| OpenError)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MasterKey {
        MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap()
    }

    #[test]
    fn a_sealed_value_opens_only_in_its_own_context_and_untampered() {
        let sealed = seal(&key(), "app-a/webhook/secret", b"whsec_x");
        assert_eq!(open(&key(), "app-a/webhook/secret", &sealed).unwrap(), b"whsec_x");
        assert!(open(&key(), "app-b/webhook/secret", &sealed).is_err());
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(open(&key(), "app-a/webhook/secret", &flipped).is_err());
        assert!(open(&key(), "app-a/webhook/secret", &sealed[..20]).is_err());
        assert_ne!(seal(&key(), "c", b"same"), seal(&key(), "c", b"same"), "nonces are random");
    }

    #[test]
    fn a_new_key_opens_what_its_previous_key_sealed_and_seals_under_its_own_id() {
        let old = seal(&key(), "c", b"secret");
        let new_key = MasterKey::from_base64(&MasterKey::generate(2)).unwrap();
        assert!(open(&new_key, "c", &old).is_err(), "without the previous key");
        let rotating = new_key.with_previous(Some(key())).unwrap();
        assert_eq!(open(&rotating, "c", &old).unwrap(), b"secret");
        let sealed = seal(&rotating, "c", b"secret");
        assert_eq!(key_id(&sealed), Some(2));
        assert_eq!(open(&rotating, "c", &sealed).unwrap(), b"secret");
        let other_with_id_1 = MasterKey::from_base64(&MasterKey::generate(1)).unwrap();
        assert!(key().with_previous(Some(other_with_id_1)).is_err(), "two keys with one id");
        assert_eq!(key().with_previous(Some(key())).unwrap().previous().map(|p| p.id), None, "one key twice is one");
        assert!(MasterKey::from_base64("0:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").is_err());
    }
}
