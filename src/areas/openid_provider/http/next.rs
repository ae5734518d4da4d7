//! Where a hosted form that is not the sign-in itself (sign-up, the
//! emailed code, a forgotten password, the return from a provider) leads: a page of its own, or back
//! to the authorization endpoint's steps.
use actix_web::HttpResponse;

use crate::areas::{
    auth::SignedIn,
    openid_provider::authorize::{Checked, Login, Refused},
};

pub(super) enum Next {
    Shown(HttpResponse),
    Refused(Refused),
    /// Signed in: on as after a sign-in.
    SignedIn(Box<Checked>, Box<Login>),
    /// A first factor proven other than by the password form (`oauth`: a
    /// provider's sign-in): a session, or the second factor to ask for.
    FirstFactor(Box<Checked>, Box<SignedIn>, &'static str),
    /// The sign-in page, the email filled in, saying why.
    SignIn(Box<Checked>, String, &'static str),
}
