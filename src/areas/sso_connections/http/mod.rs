//! The routes of enterprise SSO: an organization's connections, managed
//! with a secret key ([`connections`]), and the sign-in through them
//! ([`sign_in`]: home realm discovery from an address, and the identity
//! provider's callback).
pub mod connections;
pub mod sign_in;
