//! Recovery codes: ten per user, made when a factor is confirmed (replacing
//! any earlier ones), shown once, kept as HMAC-SHA256 under a key derived
//! from the master key, each accepted once in place of a TOTP code. A code
//! is ten characters of base32 (50 bits) shown as `xxxxx-xxxxx`; spaces,
//! dashes and case are ignored when one is typed back.
use entity::recovery_code;
use rand::Rng;
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, IntoActiveModel, QueryFilter, UpdateMany};
use uuid::Uuid;

use crate::{
    crypto::master_key::MasterKey,
    storage::{TenantConn, TenantTxn},
};

pub const COUNT: usize = 10;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

fn code_hash(master_key: &MasterKey, user_id: Uuid, normalized: &str) -> Vec<u8> {
    crate::crypto::user_code_hash(master_key, "recovery-codes", user_id, normalized)
}

/// A typed code as stored: lower case, without spaces or dashes; `None`
/// when it cannot be a recovery code.
pub fn normalize(typed: &str) -> Option<String> {
    let kept: String = typed.chars().filter(|c| !matches!(c, '-' | ' ')).map(|c| c.to_ascii_lowercase()).collect();
    (kept.len() == 10 && kept.bytes().all(|b| ALPHABET.contains(&b))).then_some(kept)
}

fn new_code() -> String {
    let mut rng = rand::thread_rng();
    let chars: String = (0..10).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect();
    format!("{}-{}", &chars[..5], &chars[5..])
}

/// Replaces the user's recovery codes with ten new ones; answers them.
pub async fn replace(txn: &mut TenantTxn, master_key: &MasterKey, user_id: Uuid) -> Result<Vec<String>, DbErr> {
    txn.delete::<recovery_code::Entity>(recovery_code::Column::UserId.eq(user_id)).await?;
    let codes: Vec<String> = (0..COUNT).map(|_| new_code()).collect();
    let now = crate::clock::now();
    let rows = codes.iter().map(|code| {
        let normalized = normalize(code).expect("a new code is well formed");
        recovery_code::Model {
            id: Uuid::now_v7(),
            application_id: txn.application_id(),
            user_id,
            code_hash: code_hash(master_key, user_id, &normalized),
            used_at: None,
            created_at: now,
        }
        .into_active_model()
    });
    let rows: Vec<_> = rows.collect();
    txn.insert_many(rows).await?;
    Ok(codes)
}

/// Uses one of the user's codes, once (a conditional update decides
/// between two uses at the same moment).
pub async fn consume(txn: &mut TenantTxn, master_key: &MasterKey, user_id: Uuid, typed: &str) -> Result<bool, DbErr> {
    let Some(normalized) = normalize(typed) else {
        return Ok(false);
    };
    let hash = code_hash(master_key, user_id, &normalized);
    let used = txn
        .update_many(|q: UpdateMany<recovery_code::Entity>| {
            q.col_expr(recovery_code::Column::UsedAt, Expr::value(crate::clock::now()))
                .filter(recovery_code::Column::UserId.eq(user_id))
                .filter(recovery_code::Column::CodeHash.eq(hash))
                .filter(recovery_code::Column::UsedAt.is_null())
        })
        .await?;
    Ok(used == 1)
}

/// How many of the user's codes are left.
pub async fn remaining(conn: &impl TenantConn, user_id: Uuid) -> Result<u64, DbErr> {
    use sea_orm::PaginatorTrait;
    conn.find::<recovery_code::Entity>()
        .filter(recovery_code::Column::UserId.eq(user_id))
        .filter(recovery_code::Column::UsedAt.is_null())
        .count(conn.conn())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_ten_base32_characters_and_typing_them_back_is_forgiving() {
        let code = new_code();
        assert_eq!(code.len(), 11);
        assert_eq!(normalize(&code).unwrap().len(), 10);
        assert_eq!(normalize(" ABCDE-fgh23 "), Some("abcdefgh23".into()));
        assert_eq!(normalize("abcde-fgh21"), None, "1 is not base32");
        assert_eq!(normalize("123456"), None, "a TOTP code is not a recovery code");
    }
}
