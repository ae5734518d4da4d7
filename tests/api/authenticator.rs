//! A software WebAuthn authenticator for the passkey tests that need to
//! bend what a browser would send (a counter that goes back, an origin
//! not allowed, an assertion replayed): an ES256 key made with `ring`, the
//! `none` attestation, and the JSON `PublicKeyCredential.toJSON()` gives.
//! What a real browser sends is proven in `tests/interop/browser.test.mjs`
//! (headless Chromium's virtual authenticator).
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ring::{
    digest::{digest, SHA256},
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING},
};
use serde_json::{json, Value};

/// User present, user verified; with attested credential data at registration.
const UP_UV: u8 = 0x01 | 0x04;
const ATTESTED: u8 = 0x40;

pub struct SoftPasskey {
    key: EcdsaKeyPair,
    pub credential_id: Vec<u8>,
    user_handle: Vec<u8>,
    rp_id: String,
    /// The signature counter the next assertion carries (then one more).
    pub counter: u32,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(value: &Value) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(value.as_str().expect("a base64url string")).expect("base64url")
}

impl SoftPasskey {
    /// Answers registration `options` (`{publicKey}` as the server sent
    /// them) from a page on `origin`: the new passkey and the credential JSON.
    pub fn create(options: &Value, origin: &str) -> (SoftPasskey, Value) {
        let public_key = &options["publicKey"];
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let mut credential_id = vec![0u8; 32];
        ring::rand::SecureRandom::fill(&rng, &mut credential_id).unwrap();
        let passkey = SoftPasskey {
            key,
            credential_id,
            user_handle: unb64(&public_key["user"]["id"]),
            rp_id: public_key["rp"]["id"].as_str().unwrap().to_string(),
            counter: 1,
        };
        let client_data = client_data("webauthn.create", &public_key["challenge"], origin);
        let point = passkey.key.public_key().as_ref();
        let cose_key = cbor::map(vec![
            (cbor::int(1), cbor::int(2)),
            (cbor::int(3), cbor::int(-7)),
            (cbor::int(-1), cbor::int(1)),
            (cbor::int(-2), cbor::bytes(&point[1..33])),
            (cbor::int(-3), cbor::bytes(&point[33..65])),
        ]);
        let mut auth_data = passkey.auth_data(UP_UV | ATTESTED, 0);
        auth_data.extend([0u8; 16]); // AAGUID
        auth_data.extend((passkey.credential_id.len() as u16).to_be_bytes());
        auth_data.extend(&passkey.credential_id);
        auth_data.extend(cose_key);
        let attestation = cbor::map(vec![
            (cbor::text("fmt"), cbor::text("none")),
            (cbor::text("attStmt"), cbor::map(vec![])),
            (cbor::text("authData"), cbor::bytes(&auth_data)),
        ]);
        let credential = json!({
            "id": b64(&passkey.credential_id),
            "rawId": b64(&passkey.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(&client_data),
                "attestationObject": b64(&attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
        });
        (passkey, credential)
    }

    /// Answers authentication `options` from a page on `origin`, signing
    /// with the current counter (then counting one up).
    pub fn get(&mut self, options: &Value, origin: &str) -> Value {
        let client_data = client_data("webauthn.get", &options["publicKey"]["challenge"], origin);
        let auth_data = self.auth_data(UP_UV, self.counter);
        self.counter += 1;
        let mut signed = auth_data.clone();
        signed.extend(digest(&SHA256, &client_data).as_ref());
        let signature = self.key.sign(&SystemRandom::new(), &signed).unwrap();
        json!({
            "id": b64(&self.credential_id),
            "rawId": b64(&self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64(&client_data),
                "authenticatorData": b64(&auth_data),
                "signature": b64(signature.as_ref()),
                "userHandle": b64(&self.user_handle),
            },
            "clientExtensionResults": {},
        })
    }

    fn auth_data(&self, flags: u8, counter: u32) -> Vec<u8> {
        let mut data = digest(&SHA256, self.rp_id.as_bytes()).as_ref().to_vec();
        data.push(flags);
        data.extend(counter.to_be_bytes());
        data
    }
}

fn client_data(kind: &str, challenge: &Value, origin: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false})).unwrap()
}

/// The little of CBOR (RFC 8949) an attestation needs.
mod cbor {
    fn head(major: u8, n: u64) -> Vec<u8> {
        let m = major << 5;
        match n {
            0..=23 => vec![m | n as u8],
            24..=0xff => vec![m | 24, n as u8],
            0x100..=0xffff => [vec![m | 25], (n as u16).to_be_bytes().to_vec()].concat(),
            _ => [vec![m | 26], (n as u32).to_be_bytes().to_vec()].concat(),
        }
    }

    pub fn int(n: i64) -> Vec<u8> {
        if n >= 0 {
            head(0, n as u64)
        } else {
            head(1, (-1 - n) as u64)
        }
    }

    pub fn bytes(b: &[u8]) -> Vec<u8> {
        [head(2, b.len() as u64), b.to_vec()].concat()
    }

    pub fn text(s: &str) -> Vec<u8> {
        [head(3, s.len() as u64), s.as_bytes().to_vec()].concat()
    }

    pub fn map(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<u8> {
        let mut out = head(5, entries.len() as u64);
        for (k, v) in entries {
            out.extend(k);
            out.extend(v);
        }
        out
    }
}
