//! The client side of signing in with an identity provider: the one table
//! of providers and their endpoints ([`providers`]), the calls to them
//! ([`client`]: code exchange, user info, keys) and ID-token verification
//! against the provider's published keys ([`id_token`]). Nothing here
//! touches the database; the flow is `areas::provider_sign_in`.
pub mod client;
pub mod id_token;
pub mod providers;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use rand::RngCore;

/// `bytes` random bytes, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    URL_SAFE_NO_PAD.encode(buffer)
}

/// The PKCE S256 challenge of a verifier (RFC 7636 section 4.2).
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(crate::crypto::sha256(verifier))
}

/// A PKCE verifier or challenge as RFC 7636 allows: 43 to 128 of
/// `A-Z a-z 0-9 - . _ ~`.
pub fn is_pkce_value(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(super::pkce_challenge(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(super::is_pkce_value(verifier));
        assert!(!super::is_pkce_value("short"));
    }
}
