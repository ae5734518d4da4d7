//! The routes of enterprise SSO: an organization's connections, managed
//! with a secret key ([`connections`]) or by the organization's owners and
//! admins from a dashboard ([`dashboard`]), and the sign-in through them
//! ([`sign_in`]: home realm discovery from an address, and the identity
//! provider's callback), and a SAML connection's service-provider
//! endpoints ([`saml`]).
pub mod connections;
pub mod dashboard;
pub mod saml;
pub mod sign_in;
