//! Every event type the service emits (audit rows and webhook events
//! alike), in one list: each audit row's type is an [`EventType`], so a
//! call site cannot misspell one, and `docs/reference/events.md` is generated from
//! this list ([`markdown`]; a test fails when the file differs).
//!
//! Names follow contract §8: `<resource>.<past verb>`, resource in
//! snake_case, a dotted family for sub-resources (`team.invitation.*`,
//! `entitlement.override.*`), so a webhook filter on a family takes all of
//! its events.

macro_rules! catalog {
    ($($variant:ident => $name:literal, $meaning:literal;)*) => {
        /// An event type; [`EventType::as_str`] is its name on the wire.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType {
            $($variant,)*
        }

        impl EventType {
            /// Every type, in the order of the catalog.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant,)*];

            /// The name audit rows and webhook events carry.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$variant => $name,)*
                }
            }

            /// What the event means: one sentence, for the catalog in the docs.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $(EventType::$variant => $meaning,)*
                }
            }
        }
    };
}

catalog! {
    ApplicationCreated => "application.created", "An application was created (with its first secret key).";
    ApplicationUpdated => "application.updated", "An application's settings changed; `data.changed` names the fields.";
    ApplicationRegionChanged => "application.region_changed", "An application's data finished moving to another region.";
    ApplicationExported => "application.exported", "The whole application was exported as an archive (`gatehouse export`); the archive ends with this row.";
    ApplicationImported => "application.imported", "The application was imported from an archive (`gatehouse import`) into this deployment; `data` says what did not carry over.";
    ApplicationRegionMoveRolledBack => "application.region_move_rolled_back", "A region move was given up before its switch (its copy failed within the bound, or an operator cancelled it); the application stays where it was.";
    MasterKeyRotated => "master_key.rotated", "The application's sealed secrets were sealed again under the deployment's new master key (`gatehouse master-key rotate`); `values` counts them.";
    ApiKeyCreated => "api_key.created", "A secret key, personal key or service-account key was created.";
    ApiKeyRevoked => "api_key.revoked", "A secret key, personal key or service-account key was revoked.";
    ApiKeyUseRefused => "api_key.use_refused", "A revoked or expired key was presented and refused (at most once a minute per key and reason).";
    SigningKeyCreated => "signing_key.created", "The application's first token-signing key was made.";
    SigningKeyRotated => "signing_key.rotated", "The token-signing key was rotated.";
    UserCreated => "user.created", "An end user signed up or was created.";
    UserUpdated => "user.updated", "An end user's profile, email or state changed.";
    UserImportQueued => "user_import.queued", "A bulk import of users was queued; `lines` counts its lines.";
    UserImportCompleted => "user_import.completed", "A bulk import of users took its last line; `created`, `skipped` and `failed` count them.";
    UserDeleted => "user.deleted", "An end user was erased: `rows_deleted` and `keys_destroyed` say what went, not who (see the data-rights guide).";
    UserEmailVerificationSent => "user.email_verification_sent", "An email-verification message was sent.";
    UserEmailVerificationFailed => "user.email_verification_failed", "An email-verification token was refused.";
    UserEmailVerificationUsed => "user.email_verification_used", "An email-verification token was used.";
    UserEmailVerified => "user.email_verified", "An end user's email address was verified.";
    UserPasswordResetRequested => "user.password_reset_requested", "A password reset was requested.";
    UserPasswordReset => "user.password_reset", "An end user's password was reset with a reset token.";
    IdentityLinked => "identity.linked", "An identity provider's account was linked to an end user.";
    SessionCreated => "session.created", "A session began (a sign-up or sign-in).";
    SessionRefreshed => "session.refreshed", "A session's refresh token was rotated.";
    SessionRevoked => "session.revoked", "A session was revoked (sign-out, an administrator, a reuse detected).";
    SessionSteppedUp => "session.stepped_up", "A session reached a higher assurance level with a second factor.";
    SessionOrganizationActivated => "session.organization_activated", "A session made an organization its active one.";
    SignInSucceeded => "sign_in.succeeded", "An end user signed in.";
    SignInFailed => "sign_in.failed", "A sign-in was refused.";
    SignInChallenged => "sign_in.challenged", "A sign-in needs a second factor before it succeeds.";
    MfaEnrollmentStarted => "mfa.enrollment_started", "An end user began enrolling a TOTP authenticator.";
    MfaEnrolled => "mfa.enrolled", "An end user confirmed a TOTP authenticator.";
    MfaRemoved => "mfa.removed", "A TOTP authenticator was removed.";
    MfaChallengeFailed => "mfa.challenge_failed", "A second-factor code was refused.";
    PasskeyRegistered => "passkey.registered", "A passkey was registered.";
    PasskeyRegistrationFailed => "passkey.registration_failed", "A passkey registration was refused.";
    PasskeyRemoved => "passkey.removed", "A passkey was removed.";
    OrganizationCreated => "organization.created", "An organization was created.";
    OrganizationUpdated => "organization.updated", "An organization's name or slug changed.";
    OrganizationDeleted => "organization.deleted", "An organization was deleted, with its memberships, invitations and SCIM directories.";
    OrganizationPlanChanged => "organization.plan_changed", "An organization's plan was set or cleared.";
    OrganizationMembershipCreated => "organization.membership.created", "A user joined an organization.";
    OrganizationMembershipUpdated => "organization.membership.updated", "A member's role changed.";
    OrganizationMembershipDeleted => "organization.membership.deleted", "A user left or was removed from an organization.";
    TeamInvitationCreated => "team.invitation.created", "Someone was invited to an organization.";
    TeamInvitationAccepted => "team.invitation.accepted", "An invitation was accepted (the membership has its own event).";
    TeamInvitationRevoked => "team.invitation.revoked", "An invitation was revoked before it was accepted.";
    SsoDomainCreated => "sso_domain.created", "An organization claimed an email domain (verification pending).";
    SsoDomainVerified => "sso_domain.verified", "A claimed domain's DNS TXT record was found.";
    SsoDomainDeleted => "sso_domain.deleted", "A domain claim was removed.";
    SsoDomainAutoJoinRefused => "sso_domain.auto_join_refused", "A user who proved an address at a verified domain was not added to its organization (separation of duties, or a role its claimer may no longer grant).";
    FeatureUpdated => "feature.updated", "An entitlement feature was created or changed.";
    FeatureDeleted => "feature.deleted", "An entitlement feature was deleted.";
    PlanUpdated => "plan.updated", "A plan was created or changed.";
    PlanDeleted => "plan.deleted", "A plan was deleted.";
    EntitlementOverrideUpdated => "entitlement.override.updated", "An organization's override of a feature was set.";
    EntitlementOverrideDeleted => "entitlement.override.deleted", "An organization's override of a feature was removed.";
    WebhookCreated => "webhook.created", "A webhook endpoint was registered.";
    WebhookUpdated => "webhook.updated", "A webhook endpoint's URL, description, filter or status changed.";
    WebhookDeleted => "webhook.deleted", "A webhook endpoint was deleted.";
    WebhookSecretRotated => "webhook.secret_rotated", "A webhook endpoint's signing secret was rotated.";
    WebhookDeliveryRetried => "webhook.delivery.retried", "A delivery was sent again on request.";
    WebhookEndpointDisabled => "webhook.endpoint.disabled", "An endpoint that kept failing was disabled.";
    HookCreated => "hook.created", "A hook was registered.";
    HookUpdated => "hook.updated", "A hook changed.";
    HookDeleted => "hook.deleted", "A hook was deleted.";
    HookCalled => "hook.called", "A hook was called during a sign-up; `data` has its decision or failure.";
    SignUpRestrictionsUpdated => "sign_up_restrictions.updated", "The email domains new end users may sign up with changed.";
    ProfileFieldCreated => "profile_field.created", "A profile field was defined.";
    ProfileFieldUpdated => "profile_field.updated", "A profile field's definition changed.";
    ProfileFieldDeleted => "profile_field.deleted", "A profile field was deleted.";
    ProviderUpdated => "provider.updated", "An identity or messaging provider's settings changed.";
    HostGroupCreated => "host_group.created", "A host group for device enrollment was created.";
    EnrollmentTokenCreated => "enrollment_token.created", "An enrollment token was created.";
    EnrollmentTokenUsed => "enrollment_token.used", "A device enrolled with a token.";
    EnrollmentTokenRevoked => "enrollment_token.revoked", "An enrollment token was revoked.";
    BillingConnectedAccountClaimed => "billing.connected_account.claimed", "The application claimed a payment-processor account (trusted once a signed processor event names the application).";
    BillingConnectedAccountVerified => "billing.connected_account.verified", "A signed processor event named the application: its claim is the account's link.";
    BillingConnectedAccountUnverified => "billing.connected_account.unverified", "The account's link moved to another application that a signed processor event named.";
    BillingConnectStatusUpdated => "billing.connect_status.updated", "A processor event changed the connected account's status.";
    BillingPaymentMethodUpdated => "billing.payment_method.updated", "The application's payment method was set.";
    BillingProcessorEventSuperseded => "billing.processor_event.superseded", "A processor event older than the one applied was received and ignored.";
    SodPolicyCreated => "sod_policy.created", "A separation-of-duties policy was created.";
    SodPolicyUpdated => "sod_policy.updated", "A separation-of-duties policy changed.";
    SodPolicyDeleted => "sod_policy.deleted", "A separation-of-duties policy was deleted.";
    SodViolationDetected => "sod.violation_detected", "A change was refused, or found, against a separation-of-duties policy.";
    ServiceAccountCreated => "service_account.created", "A service account was created.";
    ServiceAccountUpdated => "service_account.updated", "A service account changed (name, scopes, disabled).";
    ServiceAccountDeleted => "service_account.deleted", "A service account was deleted, with its keys.";
    OAuthClientCreated => "oauth_client.created", "An OAuth client (a relying party of the application's OpenID Provider) was registered.";
    OAuthClientUpdated => "oauth_client.updated", "An OAuth client changed (name, redirect URIs, grant types, scopes).";
    OAuthClientDeleted => "oauth_client.deleted", "An OAuth client was deleted; its secret stops authenticating at once.";
    OAuthClientSecretRotated => "oauth_client.secret_rotated", "An OAuth client's secret was replaced; the old one stops authenticating at once.";
    OAuthConsentGranted => "oauth_consent.granted", "A user allowed a third party's client scopes on the hosted consent page; it is not asked again for them.";
    OAuthConsentWithdrawn => "oauth_consent.withdrawn", "A user withdrew their consent to a client; the sessions issued to it ended.";
    AccessReviewCreated => "access_review.created", "An access review was opened, with one item per membership.";
    AccessReviewItemDecided => "access_review.item.decided", "A reviewer kept or revoked one item of an access review.";
    AccessReviewClosed => "access_review.closed", "An access review was closed.";
    ScimDirectoryCreated => "scim_directory.created", "A SCIM directory was made for an organization.";
    ScimDirectoryUpdated => "scim_directory.updated", "A SCIM directory's name or group roles changed.";
    ScimDirectoryDeleted => "scim_directory.deleted", "A SCIM directory was deleted with its users and groups; the memberships it granted stay.";
    ScimDirectoryTokenRotated => "scim_directory.token_rotated", "A SCIM directory's token was replaced; the old one stops at once.";
    ScimUserCreated => "scim.user.created", "A directory provisioned a user.";
    ScimUserUpdated => "scim.user.updated", "A directory changed a user; `data.changed` names the attributes.";
    ScimUserDeleted => "scim.user.deleted", "A directory deleted a user.";
    ScimUserDeprovisioned => "scim.user.deprovisioned", "A directory deprovisioned a user: the membership ended and every session was revoked.";
    ScimGroupCreated => "scim.group.created", "A directory created a group.";
    ScimGroupUpdated => "scim.group.updated", "A directory changed a group (its name or members).";
    ScimGroupDeleted => "scim.group.deleted", "A directory deleted a group.";
    SsoConnectionCreated => "sso_connection.created", "An SSO connection was made for an organization.";
    SsoConnectionUpdated => "sso_connection.updated", "An SSO connection changed (its settings, its client, or its issuer's endpoints read again).";
    SsoConnectionDeleted => "sso_connection.deleted", "An SSO connection was deleted with the identities linked through it; its users and memberships stay.";
}

impl EventType {
    /// The type named `name`, if the service emits one by that name.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.iter().copied().find(|t| t.as_str() == name)
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The event catalog of the docs (`docs/reference/events.md`), generated from the list.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Event types\n\n\
         <!-- Generated from src/events/catalog.rs: edit the list there, then run\n     \
         `GATEHOUSE_WRITE_DOCS=1 cargo test --lib events::catalog` to rewrite this file. -->\n\n\
         Every audit row and every webhook event carries one of these types\n\
         (`<resource>.<past verb>`). A webhook's `event_types` filter\n\
         takes a type or a dotted family: `team.invitation` takes\n\
         `team.invitation.created`, `team.invitation.accepted` and\n\
         `team.invitation.revoked`.\n\n\
         Each event is delivered as a Standard Webhooks message (`webhook-id`, `webhook-timestamp`, \
         `webhook-signature` headers; see the webhooks guide) whose body is the audit row:\n\n\
         ```json\n\
         {\"type\": \"user.created\", \"timestamp\": \"2026-11-28T19:01:49.829123Z\",\n \
         \"data\": {\"event_id\": \"01a22388-fc84-7422-8f64-83ba978e328d\", \"seq\": 5, \"actor_kind\": \"public\", \"actor_id\": null,\n          \
         \"aggregate_id\": \"01a22388-fc83-75b4-90db-f96b967b3cac\", \"attributes\": {\"email\": \"ada@example.com\"}}}\n\
         ```\n\n\
         - `event_id` is the audit row's id, the same in `GET /v1/audit-logs`; `seq` is its place in the chain.\n\
         - `actor_kind` is `api_key` (a secret key or a service account's key), `user` (an end user), `oauth_client`, `system` or `public` (an unauthenticated caller), and `actor_id` the key's, user's or client's id (`null` for the last two).\n\
         - `aggregate_id` is the id of what changed (the user, the webhook, the organization).\n\
         - `attributes` holds the facts of the change (never a secret, a password or a token; a URL only by its host).\n\
         - Personal data (an email, a passkey's name) is in `attributes` as it is when the message is sent. \
         In the audit row it is sealed under the person's own key, so if they are erased before a retry, \
         the retry carries `\"erased\": true` in its place (see the data-rights guide).\n\n\
         | type | what it means |\n|---|---|\n",
    );
    for t in EventType::ALL {
        out.push_str(&format!("| `{}` | {} |\n", t.as_str(), t.meaning()));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Contract §8's list, as amended (issue 35).
    const CONTRACT: &[&str] = &[
        "application.created",
        "application.updated",
        "application.region_changed",
        "api_key.created",
        "api_key.revoked",
        "user.created",
        "user.updated",
        "user.deleted",
        "session.created",
        "session.refreshed",
        "session.revoked",
        "sign_in.succeeded",
        "sign_in.failed",
        "organization.created",
        "organization.updated",
        "organization.deleted",
        "organization.membership.created",
        "organization.membership.updated",
        "organization.membership.deleted",
        "webhook.created",
        "webhook.updated",
        "webhook.deleted",
        "webhook.endpoint.disabled",
        "hook.created",
        "hook.updated",
        "hook.deleted",
        "hook.called",
        "profile_field.created",
        "profile_field.updated",
        "profile_field.deleted",
        "provider.updated",
        "enrollment_token.created",
        "enrollment_token.used",
        "enrollment_token.revoked",
        "billing.payment_method.updated",
        "billing.connect_status.updated",
        "sod_policy.created",
        "sod_policy.updated",
        "sod_policy.deleted",
        "sod.violation_detected",
        "service_account.created",
        "service_account.updated",
        "service_account.deleted",
        "access_review.created",
        "access_review.item.decided",
        "team.invitation.created",
        "team.invitation.accepted",
        "sso_domain.created",
        "sso_domain.verified",
        "sso_domain.deleted",
        "entitlement.override.updated",
    ];

    #[test]
    fn every_type_the_contract_names_is_in_the_catalog() {
        let missing: Vec<_> = CONTRACT.iter().filter(|name| EventType::parse(name).is_none()).collect();
        assert!(missing.is_empty(), "the catalog lacks {missing:?}");
    }

    #[test]
    fn names_are_unique_lowercase_dotted_and_parse_back() {
        let mut seen = BTreeSet::new();
        for t in EventType::ALL {
            let name = t.as_str();
            assert!(seen.insert(name), "`{name}` is listed twice");
            assert_eq!(EventType::parse(name), Some(*t));
            let parts: Vec<_> = name.split('.').collect();
            assert!(parts.len() >= 2, "`{name}` is not <resource>.<verb>");
            for part in parts {
                assert!(
                    part.starts_with(|c: char| c.is_ascii_lowercase())
                        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "`{name}` is not snake_case between dots"
                );
            }
            assert!(!t.meaning().is_empty() && !t.meaning().contains('|'), "`{name}`'s meaning breaks the table");
        }
    }

    #[test]
    fn docs_events_md_is_generated_from_the_catalog() {
        crate::generated_docs::assert_generated("docs/reference/events.md", &markdown());
    }
}
