//! Personal data in audit rows, sealed per data subject (crypto-shredding).
//!
//! A row that says something about a person (a user's email, a device's
//! name) keeps it out of its plain `data`: the fields are sealed with
//! AES-256-GCM under the subject's own key and stored as
//! `data.personal = {"subject": id, "sealed": base64url}`, and the chain
//! hashes that sealed form. Erasing the user deletes the key
//! ([`erase`]): every such row still verifies, and no longer says anything
//! about them. Readers open the fields ([`open_rows`], [`reveal_payload`])
//! or learn that they were erased.
//!
//! A subject is a user, or an email no user holds yet (a failed sign-in
//! with an unknown address, an invitation), whose key id is derived from
//! the address so that erasing a user with that address finds it too.
//! Each key is 32 random bytes sealed under the master key.
//!
//! Queries here name the application explicitly: the webhook delivery
//! worker reads keys outside a tenant handle.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use entity::personal_key;
use rand::{rngs::OsRng, RngCore};
use sea_orm::{sea_query::OnConflict, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::crypto::{master_key::MasterKey, seal};

/// The key of `data` that holds the sealed fields.
pub const FIELD: &str = "personal";

/// Whose personal data a row carries.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    User(Uuid),
    /// An address no user holds (in its normal form).
    Email(&'a str),
}

impl Subject<'_> {
    /// The subject's key id: a user's id, or one derived from the address
    /// with a key only the master key gives (a UUIDv8).
    pub fn id(&self, master_key: &MasterKey, application_id: Uuid) -> Uuid {
        match self {
            Subject::User(id) => *id,
            Subject::Email(email) => {
                use hmac::{Hmac, Mac};
                let mut mac =
                    Hmac::<sha2::Sha256>::new_from_slice(master_key.hashing_secret()).expect("any key length");
                mac.update(b"personal-subject\n");
                mac.update(application_id.as_bytes());
                mac.update(email.as_bytes());
                let digest = mac.finalize().into_bytes();
                let bytes: [u8; 16] = digest[..16].try_into().expect("a SHA-256 digest has 32 bytes");
                uuid::Builder::from_custom_bytes(bytes).into_uuid()
            }
        }
    }
}

pub fn key_context(application_id: Uuid, subject_id: Uuid) -> String {
    format!("{application_id}/personal_key/{subject_id}")
}

fn data_context(application_id: Uuid, subject_id: Uuid) -> String {
    format!("{application_id}/personal/{subject_id}")
}

/// The subject's key, made (and stored in the caller's transaction) on
/// first use: one read for a known subject, a read and an insert for a new
/// one. Two transactions making the same key: the first to commit wins and
/// the other reads it.
async fn key_for(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    subject_id: Uuid,
) -> Result<[u8; 32], DbErr> {
    if let Some(key) = stored_keys(db, master_key, application_id, &[subject_id]).await?.remove(&subject_id) {
        return Ok(key);
    }
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    let row = personal_key::ActiveModel {
        subject_id: Set(subject_id),
        application_id: Set(application_id),
        key_sealed: Set(seal::seal(master_key, &key_context(application_id, subject_id), &key)),
        created_at: Set(crate::clock::now()),
    };
    let keep_the_first = OnConflict::column(personal_key::Column::SubjectId).do_nothing().to_owned();
    let inserted =
        personal_key::Entity::insert(row).on_conflict(keep_the_first).do_nothing().exec_without_returning(db).await?;
    if matches!(inserted, sea_orm::TryInsertResult::Inserted(1)) {
        return Ok(key);
    }
    stored_keys(db, master_key, application_id, &[subject_id])
        .await?
        .remove(&subject_id)
        .ok_or_else(|| DbErr::Custom("a personal data key was stored and then not found".to_string()))
}

/// The keys of these subjects that exist, opened.
async fn stored_keys(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    subject_ids: &[Uuid],
) -> Result<HashMap<Uuid, [u8; 32]>, DbErr> {
    if subject_ids.is_empty() {
        return Ok(HashMap::new());
    }
    // By the primary key alone, the application checked on the rows found:
    // beside the application's filter, four ids or more make SQLite's
    // planner (no statistics) read every key of the application.
    let rows = personal_key::Entity::find()
        .filter(personal_key::Column::SubjectId.is_in(subject_ids.iter().copied()))
        .all(db)
        .await?;
    let mut keys = HashMap::new();
    for row in rows.into_iter().filter(|row| row.application_id == application_id) {
        let opened = seal::open(master_key, &key_context(application_id, row.subject_id), &row.key_sealed)
            .map_err(|_| DbErr::Custom(format!("the personal data key of {} does not open", row.subject_id)))?;
        let key: [u8; 32] = opened
            .try_into()
            .map_err(|_| DbErr::Custom(format!("the personal data key of {} is not 32 bytes", row.subject_id)))?;
        keys.insert(row.subject_id, key);
    }
    Ok(keys)
}

/// The personal fields of a row, by name.
pub fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(name, value)| (name.to_string(), value)).collect()
}

/// Seals `fields` under the subject's key: the value to store at
/// `data.personal`.
pub async fn seal(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    subject: Subject<'_>,
    fields: Map<String, Value>,
) -> Result<Value, DbErr> {
    let subject_id = subject.id(master_key, application_id);
    let key = key_for(db, master_key, application_id, subject_id).await?;
    let plaintext = serde_json::to_vec(&fields).map_err(|err| DbErr::Custom(err.to_string()))?;
    let sealed = seal::seal_with(&key, &data_context(application_id, subject_id), &plaintext);
    Ok(serde_json::json!({"subject": subject_id, "sealed": URL_SAFE_NO_PAD.encode(sealed)}))
}

/// What a row says about a person, to its readers.
#[derive(Clone, Debug, PartialEq)]
pub enum Personal {
    /// It carries no personal data.
    None,
    Opened(Map<String, Value>),
    /// Its subject was erased: the key is gone.
    Erased,
}

/// The subject and sealed bytes of a row's `data`, if it has them.
fn envelope(data: &Value) -> Option<(Uuid, &str)> {
    let personal = data.get(FIELD)?;
    let subject = personal.get("subject")?.as_str()?.parse().ok()?;
    Some((subject, personal.get("sealed")?.as_str()?))
}

/// Opens the personal data of each row's `data` (parsed), reading every
/// key the rows need in one query.
pub async fn open_rows(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    datas: &[&Value],
) -> Result<Vec<Personal>, DbErr> {
    let subjects: Vec<Uuid> = datas.iter().filter_map(|data| envelope(data).map(|(subject, _)| subject)).collect();
    let keys = stored_keys(db, master_key, application_id, &subjects).await?;
    Ok(datas
        .iter()
        .map(|data| match envelope(data) {
            None => Personal::None,
            Some((subject, sealed)) => keys
                .get(&subject)
                .and_then(|key| {
                    let sealed = URL_SAFE_NO_PAD.decode(sealed).ok()?;
                    let opened = seal::open_with(key, &data_context(application_id, subject), &sealed).ok()?;
                    serde_json::from_slice(&opened).ok()
                })
                .map_or(Personal::Erased, Personal::Opened),
        })
        .collect())
}

/// A webhook body as it is sent: the sealed fields of its `attributes`
/// opened into them, or `"erased": true` in their place when the subject
/// was erased before the delivery.
pub async fn reveal_payload(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    payload: &str,
) -> Result<String, DbErr> {
    if !payload.contains(FIELD) {
        return Ok(payload.to_string());
    }
    let Ok(mut body) = serde_json::from_str::<Value>(payload) else {
        return Ok(payload.to_string());
    };
    let Some(attributes) = body.pointer_mut("/data/attributes") else {
        return Ok(payload.to_string());
    };
    let personal = open_rows(db, master_key, application_id, &[&*attributes]).await?.remove(0);
    let Some(map) = attributes.as_object_mut() else {
        return Ok(payload.to_string());
    };
    match personal {
        Personal::None => return Ok(payload.to_string()),
        Personal::Opened(fields) => {
            map.remove(FIELD);
            map.extend(fields);
        }
        Personal::Erased => {
            map.remove(FIELD);
            map.insert("erased".to_string(), Value::Bool(true));
        }
    }
    Ok(body.to_string())
}

/// Destroys the keys of these subjects, in the caller's transaction; what
/// they sealed can no longer be opened. Answers how many existed.
pub async fn erase(
    db: &impl ConnectionTrait,
    master_key: &MasterKey,
    application_id: Uuid,
    subjects: &[Subject<'_>],
) -> Result<u64, DbErr> {
    let ids: Vec<Uuid> = subjects.iter().map(|subject| subject.id(master_key, application_id)).collect();
    let deleted = personal_key::Entity::delete_many()
        .filter(personal_key::Column::ApplicationId.eq(application_id))
        .filter(personal_key::Column::SubjectId.is_in(ids))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MasterKey {
        MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap()
    }

    #[test]
    fn an_email_subject_has_one_id_per_application_and_address() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let id = Subject::Email("anna@example.com").id(&key(), a);
        assert_eq!(id, Subject::Email("anna@example.com").id(&key(), a));
        assert_ne!(id, Subject::Email("anna@example.com").id(&key(), b));
        assert_ne!(id, Subject::Email("bert@example.com").id(&key(), a));
        assert_eq!(id.get_version_num(), 8);
    }
}
