//! The mail queue: every email a request promises (a verification code, a
//! password reset, an invitation) is a row written in the request's
//! transaction, so an acknowledged request's email survives a crash, a
//! shutdown and a region move; the region's mail worker ([`worker`]) sends
//! it from whichever region holds the application by then.
//!
//! A row says what to send, sealed under the master key (it may hold a
//! code, a reset token, an address). A request that must not reveal
//! whether an email is a user's (a password reset, a resend) queues the
//! same row either way, and the worker looks the email up: its code or
//! token is made when the mail is prepared, once, and the message that
//! carries it replaces the row's job in the same transaction.
pub mod worker;

use entity::mail_queue;
use sea_orm::{DbErr, IntoActiveModel};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::mailer::Message;
use crate::{
    audit::Actor,
    crypto::{master_key::MasterKey, seal},
    events::outbox::PENDING,
    storage::{TenantConn, TenantScope, TenantTxn, Unaudited},
};

/// What a queued row asks for.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mail {
    /// Ready to send.
    Message(Message),
    /// A verification code for the user (none once the email is verified,
    /// or when a code went out in the last minute).
    VerificationCode { user_id: Uuid },
    /// A resend asked for by email: a code for a user whose email is not
    /// verified, nothing otherwise.
    VerificationResend { email: String },
    /// A reset asked for by email: a token for a user's email, nothing
    /// otherwise.
    PasswordReset { email: String, redirect_uri: Option<String> },
}

impl Mail {
    /// The row's `kind`: the one column that says what it is in the clear.
    pub fn kind(&self) -> &'static str {
        match self {
            Mail::Message(_) => "message",
            Mail::VerificationCode { .. } => "verification_code",
            Mail::VerificationResend { .. } => "verification_resend",
            Mail::PasswordReset { .. } => "password_reset",
        }
    }

    /// Who the preparing transaction acts as: the system sends codes (as
    /// before the queue); a reset is the public caller's request.
    fn preparer(&self) -> Actor {
        match self {
            Mail::PasswordReset { .. } => Actor::public(),
            _ => Actor::system(),
        }
    }

    fn seal(&self, master_key: &MasterKey, application_id: Uuid, id: Uuid) -> Vec<u8> {
        let json = serde_json::to_vec(self).expect("a mail serializes");
        seal::seal(master_key, &sealing_context(application_id, id), &json)
    }

    fn open(master_key: &MasterKey, row: &mail_queue::Model) -> Option<Mail> {
        let json = seal::open(master_key, &sealing_context(row.application_id, row.id), &row.sealed).ok()?;
        serde_json::from_slice(&json).ok()
    }
}

/// What a queued mail is sealed to.
pub fn sealing_context(application_id: Uuid, id: Uuid) -> String {
    format!("{application_id}/mail_queue/{id}")
}

/// Queues a mail in the caller's transaction: it is sent once that commits.
pub async fn queue(txn: &mut TenantTxn, master_key: &MasterKey, mail: &Mail) -> Result<(), DbErr> {
    let (id, now) = (Uuid::now_v7(), crate::clock::now());
    let row = mail_queue::Model {
        id,
        application_id: txn.application_id(),
        kind: mail.kind().to_string(),
        sealed: mail.seal(master_key, txn.application_id(), id),
        status: PENDING.to_string(),
        attempts_made: 0,
        next_attempt_at: Some(now),
        lease_until: None,
        created_at: now,
        settled_at: None,
    };
    txn.insert(row.into_active_model()).await
}

/// Queues a mail in a transaction of its own, committed before the caller
/// answers: for a request that writes nothing else (a resend, a reset).
pub async fn queue_alone(scope: &TenantScope, master_key: &MasterKey, mail: &Mail) -> Result<(), DbErr> {
    let mut txn = scope.begin().await?;
    queue(&mut txn, master_key, mail).await?;
    txn.unaudited(Unaudited::MailQueue);
    txn.commit().await
}

/// Deletes the pending mail to or about a user being erased (in the
/// caller's transaction): its address and codes go with them. Answers how
/// many rows went. Settled rows hold no text ([`worker`] empties it).
pub async fn forget(txn: &mut TenantTxn, user_id: Uuid, email: &str) -> Result<u64, DbErr> {
    use sea_orm::{ColumnTrait, QueryFilter};
    let pending =
        txn.find::<mail_queue::Entity>().filter(mail_queue::Column::Status.eq(PENDING)).all(txn.conn()).await?;
    let theirs: Vec<Uuid> = pending
        .iter()
        .filter(|row| match Mail::open(txn.master_key(), row) {
            Some(Mail::Message(message)) => message.to == email,
            Some(Mail::VerificationCode { user_id: of }) => of == user_id,
            Some(Mail::VerificationResend { email: to } | Mail::PasswordReset { email: to, .. }) => to == email,
            None => false,
        })
        .map(|row| row.id)
        .collect();
    if theirs.is_empty() {
        return Ok(0);
    }
    txn.delete::<mail_queue::Entity>(mail_queue::Column::Id.is_in(theirs)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(application_id: Uuid, id: Uuid, sealed: Vec<u8>) -> mail_queue::Model {
        let now = crate::clock::now();
        mail_queue::Model {
            id,
            application_id,
            kind: "password_reset".into(),
            sealed,
            status: PENDING.into(),
            attempts_made: 0,
            next_attempt_at: Some(now),
            lease_until: None,
            created_at: now,
            settled_at: None,
        }
    }

    #[test]
    fn a_queued_mail_is_sealed_to_its_own_row() {
        let key = MasterKey::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let (application, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mail = Mail::PasswordReset { email: "ada@example.com".into(), redirect_uri: None };
        let sealed = mail.seal(&key, application, id);
        assert!(!sealed.windows(3).any(|w| w == b"ada"), "the address is not in the clear");
        let opened = Mail::open(&key, &row(application, id, sealed.clone())).expect("it opens in its own row");
        assert!(matches!(opened, Mail::PasswordReset { email, .. } if email == "ada@example.com"));
        assert!(Mail::open(&key, &row(Uuid::now_v7(), id, sealed.clone())).is_none(), "another application's row");
        assert!(Mail::open(&key, &row(application, Uuid::now_v7(), sealed)).is_none(), "another row");
    }
}
