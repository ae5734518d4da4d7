//! Verifying a provider's ID token (OpenID Connect Core 1.0, 3.1.3.7): the
//! signature against the provider's published keys (RS256/384/512,
//! ES256/384, EdDSA; never `none` or a MAC), then `iss`, `aud` (and `azp`
//! when there are several audiences), `nonce`, `exp`, `iat` and `nbf`.
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ring::signature::{self, UnparsedPublicKey};
use serde::Deserialize;

use crate::{crypto::constant_time_eq, tokens::jwt};

/// Clock skew allowed between us and the provider.
pub const LEEWAY_SECONDS: i64 = 60;
const MAX_TOKEN_LEN: usize = 16 * 1024;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdTokenError {
    #[error("the ID token is not a signed JWT")]
    Malformed,
    #[error("the ID token's algorithm `{0}` is not accepted")]
    Algorithm(String),
    #[error("no key of the provider matches the ID token")]
    UnknownKey,
    #[error("the ID token's signature does not verify")]
    Signature,
    #[error("the ID token was issued by `{0}`")]
    Issuer(String),
    #[error("the ID token is for another client")]
    Audience,
    #[error("the ID token's nonce does not match")]
    Nonce,
    #[error("the ID token has expired")]
    Expired,
    #[error("the ID token is not valid yet")]
    NotYetValid,
}

impl IdTokenError {
    /// For the audit row of the failed sign-in.
    pub fn reason(&self) -> &'static str {
        match self {
            IdTokenError::Malformed => "id_token_malformed",
            IdTokenError::Algorithm(_) => "id_token_algorithm",
            IdTokenError::UnknownKey => "id_token_unknown_key",
            IdTokenError::Signature => "id_token_signature",
            IdTokenError::Issuer(_) => "id_token_issuer",
            IdTokenError::Audience => "id_token_audience",
            IdTokenError::Nonce => "id_token_nonce",
            IdTokenError::Expired => "id_token_expired",
            IdTokenError::NotYetValid => "id_token_not_yet_valid",
        }
    }
}

/// A provider's published key (RFC 7517), as far as verification needs it.
#[derive(Clone, Debug, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(default, rename = "use")]
    pub usage: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
    #[serde(default)]
    pub crv: Option<String>,
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub y: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

/// What the token must say.
pub struct Expected<'a> {
    /// `{tenantid}` in it stands for the token's `tid`.
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: &'a str,
    pub now: i64,
}

/// The claims Gatehouse reads.
#[derive(Clone, Debug, Deserialize)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    aud: Audience,
    exp: i64,
    #[serde(default)]
    iat: Option<i64>,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    tid: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    email_verified: Option<Flag>,
    /// Read leniently: a provider's odd `amr` is no reason to refuse its token.
    #[serde(default)]
    amr: Option<serde_json::Value>,
    /// Every other claim (`name`, `groups`, a provider's own).
    #[serde(flatten)]
    others: serde_json::Map<String, serde_json::Value>,
}

impl IdClaims {
    /// The token's claims about the user: all but those about the token
    /// itself (`iss`, `aud`, `exp`, `iat`, `nbf`, `nonce`, `azp`).
    pub fn about_the_user(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut claims = self.others.clone();
        claims.insert("sub".into(), self.sub.clone().into());
        let named: [(&str, Option<serde_json::Value>); 2] =
            [("email", self.email.clone().map(Into::into)), ("tid", self.tid.clone().map(Into::into))];
        for (name, value) in named {
            if let Some(value) = value {
                claims.insert(name.into(), value);
            }
        }
        if let Some(verified) = &self.email_verified {
            claims.insert("email_verified".into(), verified.is_true().into());
        }
        if let Some(amr) = &self.amr {
            claims.insert("amr".into(), amr.clone());
        }
        claims
    }

    pub fn email_verified(&self) -> bool {
        self.email_verified.as_ref().is_some_and(Flag::is_true)
    }

    /// The token's `amr` (RFC 8176): its values that are short words, at
    /// most 8; `None` when it has none.
    pub fn amr(&self) -> Option<Vec<String>> {
        let values: Vec<String> = self
            .amr
            .as_ref()?
            .as_array()?
            .iter()
            .filter_map(serde_json::Value::as_str)
            .filter(|v| {
                (1..=32).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .take(8)
            .map(str::to_string)
            .collect();
        (!values.is_empty()).then_some(values)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

/// A boolean, or Apple's `"true"`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Flag {
    Bool(bool),
    Text(String),
}

impl Flag {
    pub fn is_true(&self) -> bool {
        matches!(self, Flag::Bool(true)) || matches!(self, Flag::Text(t) if t == "true")
    }
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

/// A token split and decoded, its signature not yet checked.
pub struct Unverified {
    header: Header,
    signed: String,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

pub fn parse(token: &str) -> Result<Unverified, IdTokenError> {
    let parts = jwt::split(token, MAX_TOKEN_LEN).ok_or(IdTokenError::Malformed)?;
    let header: Header = serde_json::from_slice(&parts.header).map_err(|_| IdTokenError::Malformed)?;
    Ok(Unverified { header, signed: parts.signed.to_string(), payload: parts.payload, signature: parts.signature })
}

impl Unverified {
    /// Checks the signature with the matching key of `keys` (`UnknownKey`:
    /// none matches; the caller may fetch the keys again), then the claims.
    pub fn verify(&self, keys: &Jwks, expected: &Expected) -> Result<IdClaims, IdTokenError> {
        let family = family(&self.header.alg)?;
        let candidates: Vec<&Jwk> = keys
            .keys
            .iter()
            .filter(|k| k.kty == family)
            .filter(|k| k.alg.as_deref().is_none_or(|alg| alg == self.header.alg))
            .filter(|k| k.usage.as_deref().is_none_or(|usage| usage == "sig"))
            .filter(|k| self.header.kid.is_none() || k.kid == self.header.kid)
            .collect();
        if candidates.is_empty() {
            return Err(IdTokenError::UnknownKey);
        }
        if !candidates
            .iter()
            .any(|key| verify_signature(&self.header.alg, key, self.signed.as_bytes(), &self.signature))
        {
            return Err(IdTokenError::Signature);
        }
        let claims: IdClaims = serde_json::from_slice(&self.payload).map_err(|_| IdTokenError::Malformed)?;
        check_claims(&claims, expected)?;
        Ok(claims)
    }
}

fn family(alg: &str) -> Result<&'static str, IdTokenError> {
    match alg {
        "RS256" | "RS384" | "RS512" => Ok("RSA"),
        "ES256" | "ES384" => Ok("EC"),
        "EdDSA" => Ok("OKP"),
        other => Err(IdTokenError::Algorithm(other.chars().take(16).collect())),
    }
}

fn verify_signature(alg: &str, key: &Jwk, message: &[u8], signature: &[u8]) -> bool {
    let decode = |value: &Option<String>| value.as_deref().and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    match alg {
        "RS256" | "RS384" | "RS512" => {
            let (Some(n), Some(e)) = (decode(&key.n), decode(&key.e)) else { return false };
            let parameters = match alg {
                "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                _ => &signature::RSA_PKCS1_2048_8192_SHA512,
            };
            signature::RsaPublicKeyComponents { n: &n, e: &e }.verify(parameters, message, signature).is_ok()
        }
        "ES256" | "ES384" => {
            let (curve, parameters) = if alg == "ES256" {
                ("P-256", &signature::ECDSA_P256_SHA256_FIXED)
            } else {
                ("P-384", &signature::ECDSA_P384_SHA384_FIXED)
            };
            let (Some(x), Some(y)) = (decode(&key.x), decode(&key.y)) else { return false };
            if key.crv.as_deref() != Some(curve) {
                return false;
            }
            let point: Vec<u8> = [&[4u8][..], &x, &y].concat();
            UnparsedPublicKey::new(parameters, point).verify(message, signature).is_ok()
        }
        "EdDSA" => {
            let Some(x) = decode(&key.x) else { return false };
            key.crv.as_deref() == Some("Ed25519")
                && UnparsedPublicKey::new(&signature::ED25519, x).verify(message, signature).is_ok()
        }
        _ => false,
    }
}

fn check_claims(claims: &IdClaims, expected: &Expected) -> Result<(), IdTokenError> {
    let issuer = match (expected.issuer.contains("{tenantid}"), &claims.tid) {
        (false, _) => expected.issuer.to_string(),
        (true, Some(tid)) => expected.issuer.replace("{tenantid}", tid),
        (true, None) => return Err(IdTokenError::Issuer(claims.iss.chars().take(256).collect())),
    };
    if claims.iss != issuer {
        return Err(IdTokenError::Issuer(claims.iss.chars().take(256).collect()));
    }
    let audiences: Vec<&str> = match &claims.aud {
        Audience::One(one) => vec![one.as_str()],
        Audience::Many(many) => many.iter().map(String::as_str).collect(),
    };
    if !audiences.contains(&expected.client_id) {
        return Err(IdTokenError::Audience);
    }
    // Several audiences, or an authorized party named: it must be us.
    if (audiences.len() > 1 || claims.azp.is_some()) && claims.azp.as_deref() != Some(expected.client_id) {
        return Err(IdTokenError::Audience);
    }
    let nonce = claims.nonce.as_deref().unwrap_or_default();
    if !constant_time_eq(nonce.as_bytes(), expected.nonce.as_bytes()) {
        return Err(IdTokenError::Nonce);
    }
    if claims.exp + LEEWAY_SECONDS <= expected.now {
        return Err(IdTokenError::Expired);
    }
    let future = |at: Option<i64>| at.is_some_and(|at| at - LEEWAY_SECONDS > expected.now);
    if future(claims.iat) || future(claims.nbf) {
        return Err(IdTokenError::NotYetValid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use ring::{
        rand::SystemRandom,
        signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
    };
    use serde_json::{json, Value};

    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn claims() -> Value {
        json!({"iss": "https://idp.example", "sub": "u-1", "aud": "client-a", "exp": NOW + 300, "iat": NOW,
            "nonce": "n-1", "email": "a@example.com", "email_verified": true})
    }

    fn expected() -> Expected<'static> {
        Expected { issuer: "https://idp.example", client_id: "client-a", nonce: "n-1", now: NOW }
    }

    fn b64(value: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(value)
    }

    struct Es256 {
        pair: EcdsaKeyPair,
        kid: String,
    }

    impl Es256 {
        fn new(kid: &str) -> Es256 {
            let rng = SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
            Es256 { pair, kid: kid.into() }
        }

        fn jwk(&self) -> Jwk {
            let point = self.pair.public_key().as_ref();
            serde_json::from_value(json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig",
                "x": b64(&point[1..33]), "y": b64(&point[33..65])}))
            .unwrap()
        }

        fn sign(&self, header: Value, claims: &Value) -> String {
            let signed = format!("{}.{}", b64(header.to_string().as_bytes()), b64(claims.to_string().as_bytes()));
            let signature = self.pair.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
            format!("{signed}.{}", b64(signature.as_ref()))
        }

        fn token(&self, claims: &Value) -> String {
            self.sign(json!({"alg": "ES256", "kid": self.kid}), claims)
        }
    }

    fn verify(token: &str, keys: &[Jwk]) -> Result<IdClaims, IdTokenError> {
        parse(token)?.verify(&Jwks { keys: keys.to_vec() }, &expected())
    }

    #[test]
    fn a_good_token_verifies_and_says_who_signed_in() {
        let key = Es256::new("k1");
        let claims = verify(&key.token(&claims()), &[key.jwk()]).unwrap();
        assert_eq!(claims.sub, "u-1");
        assert_eq!(claims.email.as_deref(), Some("a@example.com"));
        assert!(claims.email_verified());
    }

    #[test]
    fn each_claim_is_checked() {
        let key = Es256::new("k1");
        let with = |field: &str, value: Value| {
            let mut claims = claims();
            claims[field] = value;
            verify(&key.token(&claims), &[key.jwk()]).map(|_| ())
        };
        assert_eq!(
            with("iss", json!("https://evil.example")),
            Err(IdTokenError::Issuer("https://evil.example".into()))
        );
        assert_eq!(with("aud", json!("client-b")), Err(IdTokenError::Audience));
        assert_eq!(with("aud", json!(["client-a", "client-b"])), Err(IdTokenError::Audience));
        assert_eq!(with("azp", json!("client-b")), Err(IdTokenError::Audience));
        assert_eq!(with("nonce", json!("n-2")), Err(IdTokenError::Nonce));
        assert_eq!(with("nonce", Value::Null), Err(IdTokenError::Nonce));
        assert_eq!(with("exp", json!(NOW - LEEWAY_SECONDS)), Err(IdTokenError::Expired));
        assert_eq!(with("iat", json!(NOW + 2 * LEEWAY_SECONDS)), Err(IdTokenError::NotYetValid));
        assert_eq!(with("exp", json!(NOW - 10)), Ok(()), "within the leeway");
        let mut several = claims();
        several["aud"] = json!(["client-a", "client-b"]);
        several["azp"] = json!("client-a");
        assert!(verify(&key.token(&several), &[key.jwk()]).is_ok());
    }

    #[test]
    fn a_token_from_another_key_or_altered_is_refused() {
        let key = Es256::new("k1");
        let other = Es256::new("k1");
        assert_eq!(verify(&other.token(&claims()), &[key.jwk()]).err(), Some(IdTokenError::Signature));
        assert_eq!(verify(&key.token(&claims()), &[Es256::new("k2").jwk()]).err(), Some(IdTokenError::UnknownKey));
        let token = key.token(&claims());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let (header, _) = signed.split_once('.').unwrap();
        let mut altered = claims();
        altered["sub"] = json!("u-2");
        let forged = format!("{header}.{}.{signature}", b64(altered.to_string().as_bytes()));
        assert_eq!(verify(&forged, &[key.jwk()]).err(), Some(IdTokenError::Signature));
    }

    #[test]
    fn none_and_mac_algorithms_and_mismatched_key_types_are_refused() {
        let key = Es256::new("k1");
        let body = b64(claims().to_string().as_bytes());
        let none = format!("{}.{body}.", b64(br#"{"alg":"none"}"#));
        assert_eq!(verify(&none, &[key.jwk()]).err(), Some(IdTokenError::Algorithm("none".into())));
        let hs = key.sign(json!({"alg": "HS256", "kid": "k1"}), &claims());
        assert_eq!(verify(&hs, &[key.jwk()]).err(), Some(IdTokenError::Algorithm("HS256".into())));
        // An EC signature presented as RS256: no RSA key to take it.
        let rs = key.sign(json!({"alg": "RS256", "kid": "k1"}), &claims());
        assert_eq!(verify(&rs, &[key.jwk()]).err(), Some(IdTokenError::UnknownKey));
        assert_eq!(verify("a.b", &[key.jwk()]).err(), Some(IdTokenError::Malformed));
    }

    #[test]
    fn ed25519_tokens_verify_and_microsofts_issuer_takes_the_tenant() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let jwk: Jwk =
            serde_json::from_value(json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())}))
                .unwrap();
        let mut claims = claims();
        claims["iss"] = json!("https://login.example/t-9/v2.0");
        claims["tid"] = json!("t-9");
        let signed = format!("{}.{}", b64(br#"{"alg":"EdDSA"}"#), b64(claims.to_string().as_bytes()));
        let token = format!("{signed}.{}", b64(pair.sign(signed.as_bytes()).as_ref()));
        let expected = Expected { issuer: "https://login.example/{tenantid}/v2.0", ..expected() };
        assert!(parse(&token).unwrap().verify(&Jwks { keys: vec![jwk.clone()] }, &expected).is_ok());
        claims["tid"] = json!("t-8");
        let signed = format!("{}.{}", b64(br#"{"alg":"EdDSA"}"#), b64(claims.to_string().as_bytes()));
        let token = format!("{signed}.{}", b64(pair.sign(signed.as_bytes()).as_ref()));
        assert!(matches!(
            parse(&token).unwrap().verify(&Jwks { keys: vec![jwk] }, &expected),
            Err(IdTokenError::Issuer(_))
        ));
    }
}
