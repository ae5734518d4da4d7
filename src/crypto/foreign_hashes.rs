//! Password hashes made elsewhere, brought by an import: checked once in
//! their own scheme at the user's next sign-in, which then rehashes the
//! password to our argon2id. Each is stored in its usual string form:
//!
//! - argon2id, argon2i, argon2d and scrypt as PHC strings
//!   (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`, `$scrypt$ln=…,r=…,p=…$salt$hash`)
//! - bcrypt as `$2a$`, `$2b$` or `$2y$` with its cost
//! - PBKDF2-SHA256 as passlib writes it (`$pbkdf2-sha256$rounds$salt$hash`)
//! - Firebase's modified scrypt, which the import receives as an object,
//!   as `$firebase-scrypt$ln=…,r=…$salt$separator$signer_key$hash` (standard
//!   base64 without padding)
//!
//! [`parse`] refuses a string it cannot check and costs past the bounds
//! below: a hash is checked on a hashing thread, and an imported one must
//! not hold it for seconds or take gigabytes.
use aes::cipher::{KeyIvInit, StreamCipher};
use base64::{
    alphabet,
    engine::{general_purpose::STANDARD_NO_PAD, DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
    Engine,
};
use serde::Deserialize;

/// Memory one check may take: 256 MiB.
const MAX_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
const MAX_ARGON2_PASSES: u32 = 16;
const MAX_PARALLELISM: u32 = 16;
const MAX_BCRYPT_COST: u32 = 16;
const MAX_PBKDF2_ROUNDS: u32 = 2_000_000;

/// A foreign hash, parsed and within bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// Any argon2 PHC string (the argon2 crate checks it).
    Argon2,
    Bcrypt,
    Scrypt {
        log_n: u8,
        r: u32,
        p: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
    },
    Pbkdf2Sha256 {
        rounds: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
    },
    FirebaseScrypt {
        log_n: u8,
        r: u32,
        salt: Vec<u8>,
        separator: Vec<u8>,
        signer_key: Vec<u8>,
        hash: Vec<u8>,
    },
}

/// Why a hash cannot be taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("is not a hash in a scheme Gatehouse checks (argon2, bcrypt, scrypt, pbkdf2-sha256, firebase_scrypt)")]
    Unknown,
    #[error("is malformed for its scheme")]
    Malformed,
    #[error(
        "costs more than a sign-in may spend (at most 256 MiB, 16 passes, bcrypt cost 16, 2,000,000 PBKDF2 rounds)"
    )]
    TooCostly,
}

/// Base64 as hash strings write it: with or without padding, and passlib's
/// adapted alphabet (`.` for `+`) read as the standard one.
fn b64(text: &str) -> Result<Vec<u8>, Refused> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(text.replace('.', "+")).map_err(|_| Refused::Malformed)
}

/// `k=v,k=v` parameters by name.
fn param(params: &str, name: &str) -> Result<u64, Refused> {
    params
        .split(',')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
        .ok_or(Refused::Malformed)
}

fn scrypt_bounds(log_n: u64, r: u64, p: u64) -> Result<(u8, u32, u32), Refused> {
    if !(1..=30).contains(&log_n) || r == 0 || p == 0 {
        return Err(Refused::Malformed);
    }
    if 128 * r * (1 << log_n) > MAX_MEMORY_BYTES || p > u64::from(MAX_PARALLELISM) || r > 64 {
        return Err(Refused::TooCostly);
    }
    Ok((log_n as u8, r as u32, p as u32))
}

/// Parses a stored or imported hash string.
pub fn parse(stored: &str) -> Result<Foreign, Refused> {
    let parts: Vec<&str> = stored.split('$').collect();
    match parts.get(1).copied() {
        Some("argon2id" | "argon2i" | "argon2d") => {
            let parsed = argon2::PasswordHash::new(stored).map_err(|_| Refused::Malformed)?;
            let params = argon2::Params::try_from(&parsed).map_err(|_| Refused::Malformed)?;
            if u64::from(params.m_cost()) * 1024 > MAX_MEMORY_BYTES
                || params.t_cost() > MAX_ARGON2_PASSES
                || params.p_cost() > MAX_PARALLELISM
            {
                return Err(Refused::TooCostly);
            }
            parsed.hash.ok_or(Refused::Malformed)?;
            Ok(Foreign::Argon2)
        }
        Some("2a" | "2b" | "2y") => {
            let cost: u32 = parts.get(2).and_then(|c| c.parse().ok()).ok_or(Refused::Malformed)?;
            if parts.len() != 4 || parts[3].len() != 53 {
                return Err(Refused::Malformed);
            }
            if cost > MAX_BCRYPT_COST {
                return Err(Refused::TooCostly);
            }
            Ok(Foreign::Bcrypt)
        }
        Some("scrypt") if parts.len() == 5 => {
            let (log_n, r, p) = scrypt_bounds(param(parts[2], "ln")?, param(parts[2], "r")?, param(parts[2], "p")?)?;
            let (salt, hash) = (b64(parts[3])?, b64(parts[4])?);
            if hash.len() < 16 || hash.len() > 128 {
                return Err(Refused::Malformed);
            }
            Ok(Foreign::Scrypt { log_n, r, p, salt, hash })
        }
        Some("pbkdf2-sha256") if parts.len() == 5 => {
            let rounds: u32 = parts[2].parse().map_err(|_| Refused::Malformed)?;
            if rounds == 0 {
                return Err(Refused::Malformed);
            }
            if rounds > MAX_PBKDF2_ROUNDS {
                return Err(Refused::TooCostly);
            }
            let (salt, hash) = (b64(parts[3])?, b64(parts[4])?);
            if hash.len() < 16 || hash.len() > 64 {
                return Err(Refused::Malformed);
            }
            Ok(Foreign::Pbkdf2Sha256 { rounds, salt, hash })
        }
        Some("firebase-scrypt") if parts.len() == 7 => {
            let (log_n, r, _) = scrypt_bounds(param(parts[2], "ln")?, param(parts[2], "r")?, 1)?;
            let (salt, separator, signer_key, hash) = (b64(parts[3])?, b64(parts[4])?, b64(parts[5])?, b64(parts[6])?);
            if signer_key.is_empty() || hash.len() != signer_key.len() {
                return Err(Refused::Malformed);
            }
            Ok(Foreign::FirebaseScrypt { log_n, r, salt, separator, signer_key, hash })
        }
        _ => Err(Refused::Unknown),
    }
}

/// Firebase's export of a user's password: its modified scrypt, with the
/// project's parameters (as Firebase's console shows them).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirebaseScrypt {
    pub algorithm: String,
    pub hash: String,
    pub salt: String,
    pub salt_separator: String,
    pub signer_key: String,
    pub rounds: u32,
    pub mem_cost: u32,
}

impl FirebaseScrypt {
    /// The stored string form, checked as [`parse`] checks any.
    pub fn to_stored(&self) -> Result<String, Refused> {
        if self.algorithm != "firebase_scrypt" {
            return Err(Refused::Unknown);
        }
        let canonical = |text: &str| b64(text).map(|bytes| STANDARD_NO_PAD.encode(bytes));
        let stored = format!(
            "$firebase-scrypt$ln={},r={}${}${}${}${}",
            self.mem_cost,
            self.rounds,
            canonical(&self.salt)?,
            canonical(&self.salt_separator)?,
            canonical(&self.signer_key)?,
            canonical(&self.hash)?,
        );
        parse(&stored).map(|_| stored)
    }
}

/// Whether `password` matches `stored`, a foreign hash; false for any
/// string [`parse`] refuses.
pub fn matches(password: &[u8], stored: &str) -> bool {
    use super::constant_time_eq;
    match parse(stored) {
        Err(_) => false,
        Ok(Foreign::Argon2) => {
            use argon2::PasswordVerifier;
            argon2::PasswordHash::new(stored)
                .is_ok_and(|parsed| argon2::Argon2::default().verify_password(password, &parsed).is_ok())
        }
        Ok(Foreign::Bcrypt) => bcrypt::verify(password, stored).unwrap_or(false),
        Ok(Foreign::Scrypt { log_n, r, p, salt, hash }) => {
            let mut out = vec![0u8; hash.len()];
            scrypt_into(password, &salt, log_n, r, p, &mut out) && constant_time_eq(&out, &hash)
        }
        Ok(Foreign::Pbkdf2Sha256 { rounds, salt, hash }) => {
            let mut out = vec![0u8; hash.len()];
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, &salt, rounds, &mut out);
            constant_time_eq(&out, &hash)
        }
        Ok(Foreign::FirebaseScrypt { log_n, r, salt, separator, signer_key, hash }) => {
            // scrypt(password, salt ‖ separator, N = 2^mem_cost, r = rounds, p = 1)
            // keys AES-256-CTR (zero IV), which encrypts the project's signer key.
            let mut key = [0u8; 32];
            if !scrypt_into(password, &[salt, separator].concat(), log_n, r, 1, &mut key) {
                return false;
            }
            let mut encrypted = signer_key;
            ctr::Ctr128BE::<aes::Aes256>::new(&key.into(), &[0u8; 16].into()).apply_keystream(&mut encrypted);
            constant_time_eq(&encrypted, &hash)
        }
    }
}

fn scrypt_into(password: &[u8], salt: &[u8], log_n: u8, r: u32, p: u32, out: &mut [u8]) -> bool {
    scrypt::Params::new(log_n, r, p).is_ok_and(|params| scrypt::scrypt(password, salt, &params, out).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference parameters of Firebase's own scrypt tool
    /// (github.com/firebase/scrypt, its README's example).
    #[test]
    fn firebase_scrypt_checks_the_reference_example() {
        let exported = FirebaseScrypt {
            algorithm: "firebase_scrypt".into(),
            hash: "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==".into(),
            salt: "42xEC+ixf3L2lw==".into(),
            salt_separator: "Bw==".into(),
            signer_key: "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
                .into(),
            rounds: 8,
            mem_cost: 14,
        };
        let stored = exported.to_stored().unwrap();
        assert!(matches(b"user1password", &stored));
        assert!(!matches(b"user2password", &stored));
    }

    #[test]
    fn costs_past_the_bounds_and_unknown_schemes_are_refused() {
        assert_eq!(parse("$scrypt$ln=22,r=8,p=1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA"), Err(Refused::TooCostly));
        assert_eq!(parse("$pbkdf2-sha256$9000000$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA"), Err(Refused::TooCostly));
        assert_eq!(parse("$2b$31$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"), Err(Refused::TooCostly));
        assert_eq!(parse("$md5$x$y"), Err(Refused::Unknown));
        assert_eq!(parse("plaintext"), Err(Refused::Unknown));
        assert_eq!(parse("$scrypt$ln=14,r=8$c2FsdA$aGFzaA"), Err(Refused::Malformed));
    }
}
