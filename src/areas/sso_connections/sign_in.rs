//! The rules an SSO sign-in adds to a provider sign-in. An organization's
//! identity provider speaks for its organization's domains only: the
//! address it gives must be at a domain the organization verified, and
//! then it counts as proven (enterprise providers rarely say
//! `email_verified`). An address elsewhere neither links to a user nor
//! creates one: a connection cannot take over an account outside its
//! organization. The user joins the organization with the connection's
//! role through the one grant path.
use entity::{sod_policy, sso_connection};
use sea_orm::DbErr;
use uuid::Uuid;

use super::attributes::{AttributeMapping, EMAIL_CLAIM};
use crate::{
    areas::{
        memberships, organizations::OrganizationError, profile_fields, sessions::SsoSignIn, sod::Grant, sso_domains,
        users,
    },
    oauth::client::Account,
    storage::{TenantConn, TenantTxn},
};

/// Why an SSO sign-in is refused before any user is touched.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the identity provider gave no email address")]
    NoEmail,
    #[error("the address is not at a domain the connection's organization verified")]
    DomainNotVerified,
    #[error("the identity provider says it has not verified the address")]
    NotVerified,
}

impl Refused {
    /// The `error` the browser is sent back with.
    pub fn code(&self) -> &'static str {
        match self {
            Refused::NoEmail => "email_required",
            Refused::DomainNotVerified => "email_domain_not_verified",
            Refused::NotVerified => "email_not_verified",
        }
    }
}

/// Admits the provider's account: its address (the claim the
/// connection's attribute mapping names) proven by the organization's
/// verified domain, and the profile a new user would get from its claims.
pub async fn admit(
    db: &impl TenantConn,
    connection: &sso_connection::Model,
    account: &mut Account,
) -> Result<Result<(), Refused>, DbErr> {
    let mapping = AttributeMapping::of(&connection.attribute_mapping);
    if mapping.email != EMAIL_CLAIM {
        account.email = mapping.email_in(&account.claims);
    }
    account.profile = mapping.profile_in(&account.claims);
    if !account.profile.is_empty() {
        // A field deleted since the mapping named it is left out, not a
        // reason to refuse every first sign-in.
        let fields = profile_fields::schema(db).await?;
        account.profile.retain(|key, _| fields.iter().any(|field| &field.key == key));
    }
    let Some(email) = account.email.as_deref().and_then(users::normalize_email) else {
        return Ok(Err(Refused::NoEmail));
    };
    if !sso_domains::verified_by(db, connection.organization_id, &email).await? {
        return Ok(Err(Refused::DomainNotVerified));
    }
    // The domain proves the address, unless the provider itself says it
    // has not verified its `email`.
    if mapping.email == EMAIL_CLAIM && account.claims.get("email_verified") == Some(&serde_json::Value::Bool(false)) {
        return Ok(Err(Refused::NotVerified));
    }
    account.email_verified = true;
    Ok(Ok(()))
}

/// Makes the user a member of the connection's organization with its
/// role, unless they are one already (whatever their role: an owner
/// signing in through SSO stays an owner). A role an owner set
/// from the dashboard is theirs to grant now, as an SSO domain's auto-join
/// role is its claimer's: set by an owner since demoted, it is refused.
pub async fn join(
    txn: &mut TenantTxn,
    policies: &[sod_policy::Model],
    connection: &sso_connection::Model,
    user_id: Uuid,
) -> Result<(), OrganizationError> {
    if memberships::find(txn, connection.organization_id, user_id).await?.is_some() {
        return Ok(());
    }
    let role = connection.default_role.clone();
    if let Some(granter) = connection.role_granted_by {
        let granting = memberships::granting_role(txn, connection.organization_id, Some(granter)).await?;
        if !memberships::may_grant(granting, &role) {
            return Err(OrganizationError::GrantNotAllowed { granter: granting, role });
        }
    }
    let grant = Grant { organization_id: connection.organization_id, user_id, role };
    memberships::set_role_in(txn, policies, grant).await
}

/// The session an SSO sign-in opens: in the organization, with the
/// provider's own `amr` when its ID token had one, else `sso`.
pub fn session(connection: &sso_connection::Model, account: &Account) -> SsoSignIn {
    let amr = account.amr.as_ref().map_or_else(|| "sso".to_string(), |amr| amr.join(" "));
    SsoSignIn { organization_id: connection.organization_id, amr }
}
