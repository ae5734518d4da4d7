//! Events: every audit row is also a webhook event, its type one of
//! [`catalog`]'s (the one list of every type). [`outbox`] writes one
//! message per matching endpoint in the transaction of the change;
//! [`delivery`] workers (one per held region, leased, safe on many nodes)
//! send them, signed as [`signing`] says, to URLs that [`url_safety`] allows,
//! retrying by [`schedule`].
pub mod catalog;
pub mod delivery;
pub mod outbox;
pub mod processor_signature;
pub mod schedule;
pub mod signing;
pub mod url_safety;
