//! The secret of keyed hashes (catalog `deployment_secrets`): short codes
//! and addresses as data subjects are stored as HMACs, which cannot be
//! computed again under a new master key. So their secret is not the master
//! key but this one, kept sealed under it, and a rotation seals it again
//! like any other secret. A deployment's first start with it stores the
//! bytes of its current key: what every keyed hash was computed with before
//! (a rotation needs a version that keeps this secret, so none came first).
#![allow(clippy::disallowed_methods)] // a catalog row, not a tenant row (see catalog.rs)

use entity::deployment_secret;
use sea_orm::{sea_query::OnConflict, DbErr, EntityTrait, Set};

use super::Db;
use crate::crypto::{master_key::MasterKey, seal};

const NAME: &str = "keyed_hashes";
pub const CONTEXT: &str = "deployment secret keyed_hashes";

/// Reads the secret into `key` (and every clone of it), storing it first on
/// a deployment's first start. A secret that does not open means the
/// configured key is not this deployment's: start-up stops there.
pub async fn load(catalog: &Db, key: &MasterKey) -> Result<(), DbErr> {
    let row = deployment_secret::ActiveModel {
        name: Set(NAME.to_string()),
        value_sealed: Set(seal::seal(key, CONTEXT, key.bytes())),
        created_at: Set(crate::clock::now()),
    };
    // Nodes starting together: the first insert wins, the others read it.
    let keep_first = OnConflict::column(deployment_secret::Column::Name).do_nothing().to_owned();
    deployment_secret::Entity::insert(row).on_conflict(keep_first).do_nothing().exec(&catalog.conn).await?;
    let stored = deployment_secret::Entity::find_by_id(NAME)
        .one(&catalog.conn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("deployment secret {NAME}")))?;
    let opened = seal::open(key, CONTEXT, &stored.value_sealed).ok().and_then(|bytes| bytes.try_into().ok());
    let secret: [u8; 32] = opened.ok_or_else(|| {
        DbErr::Custom(
            "the deployment's secrets do not open under the configured master key (security.master_key, or \
             security.previous_master_key during a rotation): is it this deployment's key?"
                .to_string(),
        )
    })?;
    key.set_hashing_secret(secret);
    Ok(())
}
