//! The chain hash (contract §6, item 10) and its verification:
//! `hash = hex(SHA-256(prev_hash \n seq \n id \n type \n actor_kind \n
//! actor_id \n aggregate_id \n occurred_at \n canonical(data)))`, where
//! canonical is RFC 8785 JSON and the first row's `prev_hash` is 64 zeros.
use crate::crypto::sha256_hex;
use entity::{audit_event, audit_pending};
use uuid::Uuid;

pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// RFC 8785 (JCS) canonical JSON.
pub fn canonical(data: &serde_json::Value) -> Result<String, serde_json::Error> {
    serde_jcs::to_string(data)
}

#[allow(clippy::too_many_arguments)]
pub fn row_hash(
    prev_hash: &str,
    seq: i64,
    id: Uuid,
    event_type: &str,
    actor_kind: &str,
    actor_id: Option<&str>,
    aggregate_id: Option<Uuid>,
    occurred_at: &str,
    canonical_data: &str,
) -> String {
    let aggregate = aggregate_id.map(|a| a.to_string()).unwrap_or_default();
    let text = format!(
        "{prev_hash}\n{seq}\n{id}\n{event_type}\n{actor_kind}\n{}\n{aggregate}\n{occurred_at}\n{canonical_data}",
        actor_id.unwrap_or("")
    );
    sha256_hex(text.as_bytes())
}

/// The chain fields of a new row.
pub struct ChainedRow {
    pub id: Uuid,
    pub seq: i64,
    pub occurred_at: String,
    pub data: String,
    pub prev_hash: String,
    pub hash: String,
}

impl ChainedRow {
    /// `row` (its time and canonical data as written) at `seq` after `prev_hash`.
    pub fn of(row: &audit_pending::Model, seq: i64, prev_hash: String) -> ChainedRow {
        let hash = row_hash(
            &prev_hash,
            seq,
            row.id,
            &row.event_type,
            &row.actor_kind,
            row.actor_id.as_deref(),
            row.aggregate_id,
            &row.occurred_at,
            &row.data,
        );
        ChainedRow { id: row.id, seq, occurred_at: row.occurred_at.clone(), data: row.data.clone(), prev_hash, hash }
    }
}

/// Where and why a chain stops verifying.
#[derive(Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChainBreak {
    pub seq: i64,
    pub reason: String,
}

/// Checks rows in order, resuming from the previous page's last row.
pub struct Verifier {
    next_seq: i64,
    prev_hash: String,
}

impl Default for Verifier {
    fn default() -> Self {
        Self { next_seq: 1, prev_hash: GENESIS.to_string() }
    }
}

impl Verifier {
    pub fn check(&mut self, row: &audit_event::Model) -> Result<(), ChainBreak> {
        let broken = |reason: &str| ChainBreak { seq: self.next_seq, reason: reason.to_string() };
        if row.seq != self.next_seq {
            return Err(broken(&format!("row {} is missing (found seq {} next)", self.next_seq, row.seq)));
        }
        if row.prev_hash != self.prev_hash {
            return Err(broken("prev_hash does not match the previous row's hash"));
        }
        let data: serde_json::Value = serde_json::from_str(&row.data).map_err(|_| broken("data is not valid JSON"))?;
        let canonical = canonical(&data).map_err(|_| broken("data cannot be canonicalised"))?;
        let expected = row_hash(
            &row.prev_hash,
            row.seq,
            row.id,
            &row.event_type,
            &row.actor_kind,
            row.actor_id.as_deref(),
            row.aggregate_id,
            &row.occurred_at,
            &canonical,
        );
        if expected != row.hash {
            return Err(broken("hash does not match the row's contents"));
        }
        self.next_seq += 1;
        self.prev_hash = row.hash.clone();
        Ok(())
    }

    /// After the last row: the chain head must point at it, else rows were
    /// cut from the end.
    pub fn finish(&self, head_seq: i64, head_hash: &str) -> Result<i64, ChainBreak> {
        let verified = self.next_seq - 1;
        if head_seq != verified || head_hash != self.prev_hash {
            return Err(ChainBreak {
                seq: verified + 1,
                reason: format!("the chain head is at seq {head_seq} but rows end at {verified}"),
            });
        }
        Ok(verified)
    }
}
