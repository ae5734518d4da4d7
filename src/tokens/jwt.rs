//! Compact JWS with EdDSA (Ed25519), and RS256 for the ID tokens of
//! clients that ask for it, written for exactly the tokens this service
//! issues. Verification is strict: three base64url segments without
//! padding, a header of exactly `alg`, `typ` and `kid` (`alg` must be
//! `EdDSA` for an access token, and the key's own for an ID token; `jku`,
//! `jwk`, `x5u`, `crit` and the rest are refused, never followed), a `kid`
//! resolved only inside the application's own key set, a canonical
//! signature, and claims of the right types, each once.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ed25519_compact::{PublicKey, SecretKey, Signature};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::algorithms::{Algorithm, PrivateKey, VerifyingKey};

/// Longer tokens are refused before any parsing.
pub const MAX_TOKEN_LEN: usize = 4096;
/// Clock skew allowed on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECONDS: i64 = 30;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    alg: String,
    typ: String,
    kid: String,
}

/// The claims of an access token (contract section 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub sub: Uuid,
    pub sid: Uuid,
    pub aal: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub org: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub org_role: Option<String>,
    /// The active organization's entitlements the application asked tokens
    /// to carry (`entitlement_claims`), `{feature_key: value}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ent: Option<serde_json::Map<String, serde_json::Value>>,
    /// Whether the user proved the email (a code, or a provider that verified it).
    #[serde(default)]
    pub email_verified: bool,
    /// The OAuth client of a client's token (RFC 9068, `typ: at+jwt`);
    /// none on the application's own tokens.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub client_id: Option<Uuid>,
    /// The scopes granted to the client, space-separated (RFC 9068).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scope: Option<String>,
    /// How the user signed in (RFC 8176), on the tokens of an enterprise
    /// SSO sign-in's session: `["sso"]`, or the identity provider's own.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amr: Option<Vec<String>>,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: Uuid,
}

impl Claims {
    /// `typ` of the token: an OAuth client's is RFC 9068's, which the end
    /// user's own routes refuse by its header.
    pub fn typ(&self) -> &'static str {
        if self.client_id.is_some() {
            CLIENT_TYPE
        } else {
            END_USER_TYPE
        }
    }
}

/// The claims of a machine token (RFC 9068's JWT profile for OAuth 2.0
/// access tokens), issued to a service account by `client_credentials`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineClaims {
    pub iss: String,
    pub aud: String,
    /// The service account.
    pub sub: Uuid,
    /// The service account too: it is its own client.
    pub client_id: Uuid,
    /// Space-separated, as RFC 9068 and RFC 8693 write it.
    pub scope: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: Uuid,
}

/// The claims of an ID token (OpenID Connect Core section 2), issued to an
/// OAuth client at the code exchange.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdTokenClaims {
    pub iss: String,
    pub sub: Uuid,
    /// The client.
    pub aud: Uuid,
    /// The client too: the party the token was issued to.
    pub azp: Uuid,
    pub exp: i64,
    pub iat: i64,
    /// When the user signed in (seconds).
    pub auth_time: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub nonce: Option<String>,
    /// `aal1` or `aal2`: the session's assurance level.
    pub acr: String,
    /// How the user signed in (RFC 8176): `pwd`, with `mfa` and `otp` after a second factor.
    pub amr: Vec<String>,
    /// The access token's hash ([`at_hash`]).
    pub at_hash: String,
    /// The session the client's tokens belong to.
    pub sid: Uuid,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email_verified: Option<bool>,
    /// The organization chosen for a client granted the `organization` scope.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub org: Option<Uuid>,
}

/// `at_hash` of an access token, for an ID token signed with `algorithm`:
/// the left half of the access token's hash under the algorithm's own hash
/// function, base64url (OIDC Core section 3.1.3.6): SHA-512 for EdDSA over
/// Ed25519, SHA-256 for RS256.
pub fn at_hash(algorithm: Algorithm, access_token: &str) -> String {
    use sha2::{Digest, Sha256, Sha512};
    match algorithm {
        Algorithm::EdDSA => URL_SAFE_NO_PAD.encode(&Sha512::digest(access_token.as_bytes())[..32]),
        Algorithm::RS256 => URL_SAFE_NO_PAD.encode(&Sha256::digest(access_token.as_bytes())[..16]),
    }
}

/// `typ` of end users' tokens.
pub const END_USER_TYPE: &str = "JWT";
/// `typ` of machine tokens (RFC 9068 section 2.1): an end-user route,
/// which accepts only [`END_USER_TYPE`], refuses them by their header.
pub const MACHINE_TYPE: &str = "at+jwt";
/// `typ` of OAuth clients' access tokens (RFC 9068 too): refused by the end
/// user's own routes, accepted by userinfo and introspection.
pub const CLIENT_TYPE: &str = "at+jwt";

pub fn sign(claims: &Claims, kid: Uuid, key: &SecretKey) -> String {
    sign_typed(claims, claims.typ(), kid, key)
}

pub fn sign_typed(claims: &impl Serialize, typ: &str, kid: Uuid, key: &SecretKey) -> String {
    signed(claims, Algorithm::EdDSA, typ, kid, |text| key.sign(text, None).to_vec())
}

/// A token signed with `key`, of either algorithm.
pub fn sign_with(claims: &impl Serialize, typ: &str, kid: Uuid, key: &PrivateKey) -> String {
    match key {
        PrivateKey::Ed25519(key) => sign_typed(claims, typ, kid, key),
        PrivateKey::Rsa(pair) => signed(claims, Algorithm::RS256, typ, kid, |text| {
            let mut signature = vec![0; pair.public().modulus_len()];
            // Fails only for a buffer of the wrong length or a broken
            // system random source (PKCS #1 v1.5 uses none of its output).
            pair.sign(&ring::signature::RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), text, &mut signature)
                .expect("an RSA signature of the modulus' length");
            signature
        }),
    }
}

/// `header.claims.signature`: `sign` signs the first two.
fn signed(
    claims: &impl Serialize,
    alg: Algorithm,
    typ: &str,
    kid: Uuid,
    sign: impl FnOnce(&[u8]) -> Vec<u8>,
) -> String {
    let header = Header { alg: alg.as_str().into(), typ: typ.into(), kid: kid.to_string() };
    let mut token = encode_json(&header);
    token.push('.');
    token.push_str(&encode_json(claims));
    let signature = sign(token.as_bytes());
    token.push('.');
    token.push_str(&URL_SAFE_NO_PAD.encode(signature));
    token
}

fn encode_json(value: &impl Serialize) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).expect("token parts serialise"))
}

/// Why a token was refused; logged and counted, never told to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    Malformed,
    Algorithm,
    UnknownKey,
    Signature,
    Claims,
    Expired,
    NotYetValid,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::Algorithm => "algorithm",
            Rejection::UnknownKey => "unknown_key",
            Rejection::Signature => "signature",
            Rejection::Claims => "claims",
            Rejection::Expired => "expired",
            Rejection::NotYetValid => "not_yet_valid",
        }
    }
}

/// A token split and its header read; the signature not yet checked.
pub struct Unverified<'a> {
    signed: &'a str,
    payload: Vec<u8>,
    signature: Vec<u8>,
    algorithm: Algorithm,
    typ: String,
    pub kid: Uuid,
}

/// A compact JWS taken apart: header, payload and signature decoded from
/// base64url, and the signed text (`header.payload`). `None` for anything
/// longer than `max_len` or not three parts of base64url.
pub struct Parts<'a> {
    pub header: Vec<u8>,
    pub payload: Vec<u8>,
    pub signature: Vec<u8>,
    pub signed: &'a str,
}

pub fn split(token: &str, max_len: usize) -> Option<Parts<'_>> {
    if token.len() > max_len {
        return None;
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).ok();
    Some(Parts {
        header: decode(header)?,
        payload: decode(payload)?,
        signature: decode(signature)?,
        signed: &token[..token.len() - signature.len() - 1],
    })
}

/// Which access tokens a route takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// The application's own (`typ: JWT`): the end user's own routes.
    OwnTokens,
    /// OAuth clients' (`typ: at+jwt`) too: userinfo and introspection.
    ClientTokensToo,
}

/// An access token taken apart: EdDSA only, of a `typ` the route accepts.
pub fn parse(token: &str, accepts: Accepts) -> Result<Unverified<'_>, Rejection> {
    let parsed = parse_any(token)?;
    let typ_accepted =
        parsed.typ == END_USER_TYPE || (accepts == Accepts::ClientTokensToo && parsed.typ == CLIENT_TYPE);
    if parsed.algorithm != Algorithm::EdDSA || !typ_accepted {
        return Err(Rejection::Algorithm);
    }
    Ok(parsed)
}

/// An ID token taken apart: EdDSA, or RS256 for the clients that ask for it.
pub fn parse_id_token(token: &str) -> Result<Unverified<'_>, Rejection> {
    let parsed = parse_any(token)?;
    if parsed.typ != END_USER_TYPE {
        return Err(Rejection::Algorithm);
    }
    Ok(parsed)
}

fn parse_any(token: &str) -> Result<Unverified<'_>, Rejection> {
    let parts = split(token, MAX_TOKEN_LEN).ok_or(Rejection::Malformed)?;
    let header: Header = serde_json::from_slice(&parts.header).map_err(|_| Rejection::Malformed)?;
    let algorithm = Algorithm::parse(&header.alg).ok_or(Rejection::Algorithm)?;
    let kid = Uuid::parse_str(&header.kid).map_err(|_| Rejection::UnknownKey)?;
    let (signed, payload, signature, typ) = (parts.signed, parts.payload, parts.signature, header.typ);
    Ok(Unverified { signed, payload, signature, algorithm, typ, kid })
}

/// What a verified token must say.
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub now: i64,
}

impl Unverified<'_> {
    /// The claims of an ID token this issuer signed with `key`, as a hint
    /// (RP-Initiated Logout's `id_token_hint`): its `exp` may have passed.
    /// The header's `alg` must be the key's.
    pub fn id_token_hint(self, key: &VerifyingKey, issuer: &str) -> Result<IdTokenClaims, Rejection> {
        if key.algorithm() != self.algorithm {
            return Err(Rejection::Algorithm);
        }
        if !key.verifies(self.signed.as_bytes(), &self.signature) {
            return Err(Rejection::Signature);
        }
        let claims: IdTokenClaims = serde_json::from_slice(&self.payload).map_err(|_| Rejection::Claims)?;
        if claims.iss != issuer {
            return Err(Rejection::Claims);
        }
        Ok(claims)
    }

    pub fn verify(self, key: &PublicKey, expected: &Expected) -> Result<Claims, Rejection> {
        let signature = Signature::from_slice(&self.signature).map_err(|_| Rejection::Signature)?;
        key.verify(self.signed.as_bytes(), &signature).map_err(|_| Rejection::Signature)?;
        let claims: Claims = serde_json::from_slice(&self.payload).map_err(|_| Rejection::Claims)?;
        if claims.iss != expected.issuer || claims.aud != expected.audience || claims.typ() != self.typ {
            return Err(Rejection::Claims);
        }
        if claims.exp + LEEWAY_SECONDS <= expected.now {
            return Err(Rejection::Expired);
        }
        if claims.nbf - LEEWAY_SECONDS > expected.now || claims.iat - LEEWAY_SECONDS > expected.now {
            return Err(Rejection::NotYetValid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use ed25519_compact::{KeyPair, Seed};

    use super::*;

    fn claims(now: i64) -> Claims {
        Claims {
            iss: "http://x/v1/applications/a".into(),
            aud: "a".into(),
            sub: Uuid::now_v7(),
            sid: Uuid::now_v7(),
            aal: "aal1".into(),
            org: None,
            org_role: None,
            amr: None,
            ent: None,
            email_verified: false,
            client_id: None,
            scope: None,
            iat: now,
            nbf: now,
            exp: now + 300,
            jti: Uuid::now_v7(),
        }
    }

    fn expected(now: i64) -> Expected<'static> {
        Expected { issuer: "http://x/v1/applications/a", audience: "a", now }
    }

    #[test]
    fn a_signed_token_verifies_and_a_changed_one_does_not() {
        let pair = KeyPair::from_seed(Seed::generate());
        let kid = Uuid::now_v7();
        let token = sign(&claims(1000), kid, &pair.sk);
        let parsed = parse(&token, Accepts::OwnTokens).unwrap();
        assert_eq!(parsed.kid, kid);
        assert_eq!(parsed.verify(&pair.pk, &expected(1000)).unwrap().aal, "aal1");

        let other = KeyPair::from_seed(Seed::generate());
        assert_eq!(
            parse(&token, Accepts::OwnTokens).unwrap().verify(&other.pk, &expected(1000)),
            Err(Rejection::Signature)
        );
        assert_eq!(
            parse(&token, Accepts::OwnTokens).unwrap().verify(&pair.pk, &expected(1331)),
            Err(Rejection::Expired)
        );
        assert_eq!(
            parse(&token, Accepts::OwnTokens).unwrap().verify(&pair.pk, &expected(969)),
            Err(Rejection::NotYetValid)
        );
        assert!(
            parse(&token, Accepts::OwnTokens).unwrap().verify(&pair.pk, &expected(1329)).is_ok(),
            "inside the leeway"
        );
        assert!(parse(&format!("{token}="), Accepts::OwnTokens).is_err(), "padding");
        assert!(parse(&format!("{token}.x"), Accepts::OwnTokens).is_err(), "four segments");
    }

    #[test]
    fn a_clients_token_is_at_jwt_and_only_routes_that_take_client_tokens_accept_it() {
        let pair = KeyPair::from_seed(Seed::generate());
        let client = Claims { client_id: Some(Uuid::now_v7()), scope: Some("openid email".into()), ..claims(1000) };
        let token = sign(&client, Uuid::now_v7(), &pair.sk);
        assert_eq!(parse(&token, Accepts::OwnTokens).err(), Some(Rejection::Algorithm), "the end user's own routes");
        let verified = parse(&token, Accepts::ClientTokensToo).unwrap().verify(&pair.pk, &expected(1000)).unwrap();
        assert_eq!(verified.scope.as_deref(), Some("openid email"));
        // A client's claims under the application's own `typ` do not verify.
        let relabelled = sign_typed(&client, END_USER_TYPE, Uuid::now_v7(), &pair.sk);
        let parsed = parse(&relabelled, Accepts::OwnTokens).unwrap();
        assert_eq!(parsed.verify(&pair.pk, &expected(1000)), Err(Rejection::Claims));
    }

    #[test]
    fn a_signature_with_a_non_canonical_s_is_refused() {
        // S + L verifies under the group law but is not the canonical
        // encoding (RFC 8032 §5.1.7): a malleated signature.
        const L: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let pair = KeyPair::from_seed(Seed::generate());
        let token = sign(&claims(1000), Uuid::now_v7(), &pair.sk);
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(signature).unwrap();
        let mut carry = 0u16;
        for (byte, l) in bytes[32..].iter_mut().zip(L) {
            let sum = u16::from(*byte) + u16::from(l) + carry;
            *byte = sum as u8;
            carry = sum >> 8;
        }
        assert_eq!(carry, 0, "S + L fits in 32 bytes since S < L < 2^253");
        let malleated = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(
            parse(&malleated, Accepts::OwnTokens).unwrap().verify(&pair.pk, &expected(1000)),
            Err(Rejection::Signature)
        );
        assert!(parse(&token, Accepts::OwnTokens).unwrap().verify(&pair.pk, &expected(1000)).is_ok());
    }
}
