//! `{:?}` and `{:#?}` of every type that holds a secret show a placeholder,
//! never the secret, and still show the fields that identify the value.
use chrono::{TimeZone, Utc};
use entity::{api_key, hook, refresh_token, signing_key, user, user_api_key, webhook};
use uuid::Uuid;

use super::master_key::MasterKey;

const HASH: &str = "SECRET-HASH";
const SEALED: &[u8] = b"SECRET-SEALED";
const PREVIOUS: &[u8] = b"SECRET-PREVIOUS";
const ID: &str = "01900000-0000-7000-8000-00000000abcd";

fn id() -> Uuid {
    Uuid::parse_str(ID).unwrap()
}

/// Checks both renderings of `value`: no secret text, no secret bytes as
/// `Vec<u8>` prints them (`[83, 69, 67, …]`, one number a line under `{:#?}`),
/// and the identifying text is there.
fn assert_redacted(label: &str, value: &dyn std::fmt::Debug, visible: &str) {
    let secret_bytes: Vec<&[u8]> = vec![SEALED, PREVIOUS, HASH.as_bytes(), &[0x53; 32]];
    for rendered in [format!("{value:?}"), format!("{value:#?}")] {
        assert!(!rendered.contains("SECRET"), "{label} shows a secret: {rendered}");
        let compact: String = rendered.chars().filter(|c| !c.is_whitespace()).collect();
        for bytes in &secret_bytes {
            let listed = format!("{:?}", &bytes[..3]).replace(['[', ']', ' '], "");
            assert!(!compact.contains(&listed), "{label} shows secret bytes {listed}: {rendered}");
        }
        assert!(rendered.contains(visible), "{label} hides its identifier {visible}: {rendered}");
    }
}

#[test]
fn models_with_secret_columns_print_a_placeholder() {
    let at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
    let scopes = serde_json::json!(["users:read"]);

    let user = user::Model {
        id: id(),
        application_id: id(),
        email: "someone@example.com".into(),
        password_hash: Some(format!("$argon2id$v=19$m=19456,t=2,p=1${HASH}")),
        profile: serde_json::json!({}),
        last_sign_in_at: None,
        email_verified_at: None,
        created_at: at,
        updated_at: at,
        external_id: None,
    };
    let signing_key = signing_key::Model {
        id: id(),
        application_id: id(),
        public_key: b"public".to_vec(),
        private_key_sealed: SEALED.to_vec(),
        created_at: at,
        retired_at: None,
        signs_from: None,
        algorithm: "EdDSA".into(),
    };
    let refresh_token = refresh_token::Model {
        token_hash: HASH.as_bytes().to_vec(),
        application_id: id(),
        session_id: id(),
        created_at: at,
        rotated_at: None,
    };
    let api_key = api_key::Model {
        id: id(),
        application_id: id(),
        name: "ci".into(),
        prefix: "sk_test_abcd".into(),
        secret_hash: HASH.as_bytes().to_vec(),
        scopes: scopes.clone(),
        expires_at: None,
        created_at: at,
        last_used_at: None,
        revoked_at: None,
    };
    let user_api_key = user_api_key::Model {
        id: id(),
        application_id: id(),
        user_id: id(),
        name: "laptop".into(),
        prefix: "uk_test_abcd".into(),
        secret_hash: HASH.as_bytes().to_vec(),
        scopes,
        expires_at: None,
        created_at: at,
        last_used_at: None,
        revoked_at: None,
    };
    let webhook = webhook::Model {
        id: id(),
        application_id: id(),
        url: "https://example.com/hook".into(),
        description: None,
        event_types: serde_json::json!([]),
        status: "active".into(),
        secret_sealed: SEALED.to_vec(),
        previous_secret_sealed: Some(PREVIOUS.to_vec()),
        previous_secret_expires_at: Some(at),
        created_at: at,
        updated_at: at,
    };
    let hook = hook::Model {
        id: id(),
        application_id: id(),
        point: "pre_sign_up".into(),
        url: "https://example.com/pre".into(),
        description: None,
        enabled: true,
        fail_open: false,
        timeout_ms: 2000,
        secret_sealed: SEALED.to_vec(),
        created_at: at,
        updated_at: at,
    };

    assert_redacted("user", &user, ID);
    assert_redacted("signing_key", &signing_key, ID);
    assert_redacted("refresh_token", &refresh_token, ID);
    assert_redacted("api_key", &api_key, ID);
    assert_redacted("user_api_key", &user_api_key, ID);
    assert_redacted("webhook", &webhook, ID);
    assert_redacted("hook", &hook, ID);
    for rendered in [format!("{user:?}"), format!("{webhook:#?}")] {
        assert!(rendered.contains(entity::REDACTED), "{rendered}");
    }

    // A model inside another value (an Option, a tuple in an error) stays redacted.
    assert_redacted("nested", &(Some(&user), [&webhook]), ID);
}

#[test]
fn the_master_key_prints_its_id_only() {
    // 32 bytes of `S` (83).
    let base64 = "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1M=";
    let key = MasterKey::from_base64(base64).unwrap();
    assert_eq!(key.bytes(), &[0x53; 32]);
    assert_redacted("master_key", &key, "id: 1");
    for rendered in [format!("{key:?}"), format!("{key:#?}")] {
        assert!(!rendered.contains(base64), "{rendered}");
    }
}

#[test]
fn settings_print_no_master_key_and_no_redis_password() {
    let settings = crate::config::Settings::load(None).unwrap();
    let mut settings = settings;
    settings.security.master_key = Some("U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1M=".into());
    settings.cache.redis_url = Some("redis://:hunter2-SECRET@127.0.0.1:6379".into());
    for rendered in [format!("{settings:?}"), format!("{settings:#?}")] {
        assert!(!rendered.contains("U1NTU1NT") && !rendered.contains("SECRET"), "{rendered}");
        assert!(rendered.contains("password_hash_queue"), "the rest still prints: {rendered}");
    }
}
