//! The kinds of key this service signs with: the JWS algorithm, and a
//! key's public half (as it verifies and as the JWKS shows it) and private
//! half, for Ed25519 and RSA alike.
use std::sync::Arc;

use ed25519_compact::{PublicKey, SecretKey};
use ring::signature::RsaKeyPair;
use serde_json::json;
use uuid::Uuid;

/// The JWS algorithms this service signs with: `EdDSA` (Ed25519) for every
/// token, and `RS256` for the ID tokens of clients that ask for it (OIDC
/// requires an OP to offer it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    EdDSA,
    RS256,
}

impl Algorithm {
    pub const ALL: [Algorithm; 2] = [Algorithm::EdDSA, Algorithm::RS256];

    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::EdDSA => "EdDSA",
            Algorithm::RS256 => "RS256",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|alg| alg.as_str() == name)
    }
}

/// The public half of a key, as it verifies and as the JWKS shows it.
#[derive(Clone)]
pub enum VerifyingKey {
    Ed25519(PublicKey),
    /// The modulus and public exponent, big-endian.
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
}

impl VerifyingKey {
    pub fn algorithm(&self) -> Algorithm {
        match self {
            VerifyingKey::Ed25519(_) => Algorithm::EdDSA,
            VerifyingKey::Rsa { .. } => Algorithm::RS256,
        }
    }

    /// Whether `signature` is this key's over `signed`.
    pub fn verifies(&self, signed: &[u8], signature: &[u8]) -> bool {
        match self {
            VerifyingKey::Ed25519(key) => ed25519_compact::Signature::from_slice(signature)
                .is_ok_and(|signature| key.verify(signed, &signature).is_ok()),
            VerifyingKey::Rsa { n, e } => ring::signature::RsaPublicKeyComponents { n, e }
                .verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, signed, signature)
                .is_ok(),
        }
    }

    pub fn jwk(&self, kid: Uuid) -> serde_json::Value {
        use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
        let (kid, alg) = (kid.to_string(), self.algorithm().as_str());
        match self {
            VerifyingKey::Ed25519(key) => json!({"kty": "OKP", "crv": "Ed25519",
                "x": URL_SAFE_NO_PAD.encode(key.as_ref()), "kid": kid, "alg": alg, "use": "sig"}),
            VerifyingKey::Rsa { n, e } => json!({"kty": "RSA", "n": URL_SAFE_NO_PAD.encode(n),
                "e": URL_SAFE_NO_PAD.encode(e), "kid": kid, "alg": alg, "use": "sig"}),
        }
    }
}

/// The private half of a signing key.
#[derive(Clone)]
pub enum PrivateKey {
    Ed25519(SecretKey),
    Rsa(Arc<RsaKeyPair>),
}
