//! The one table from each area's error to the wire (contract §2): code,
//! message, details, `Retry-After`. Areas say what happened in their own
//! terms; only here does an outcome become a status and a sentence for the
//! caller. Database errors keep their one mapping (`From<DbErr>`: transient
//! → 503, unique violation → 409, else 500 with the cause chain logged).
use super::{ApiError, Code};
use crate::{
    crypto::password::PasswordError,
    events::processor_signature::SignatureError,
    service::{
        access_reviews::AccessReviewError,
        api_keys::ApiKeyError,
        applications::ApplicationError,
        auth::AuthError,
        billing::BillingError,
        email_verifications::EmailVerificationError,
        enrollment::EnrollmentError,
        entitlements::EntitlementError,
        hooks::HookError,
        invitations::InvitationError,
        memberships::Refusal,
        messaging::MessagingError,
        oauth_providers::OAuthProviderError,
        organizations::OrganizationError,
        password_resets::PasswordResetError,
        personal_keys::PersonalKeyError,
        profile_fields::ProfileFieldError,
        provider_sign_in::ProviderSignInError,
        rotations::RotationError,
        second_factors::SecondFactorError,
        service_accounts::ServiceAccountError,
        sessions::SessionError,
        sod::SodError,
        sso_domains::SsoDomainError,
        users::UserError,
        validate::Invalid,
        webhooks::{InvalidUrl, WebhookError},
    },
    storage::{LimitReached, ReserveError},
    tokens::NoSigningKey,
};

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        ApiError::invalid_all(invalid.0)
    }
}

impl From<LimitReached> for ApiError {
    fn from(reached: LimitReached) -> Self {
        ApiError::invalid(reached.0.field, reached.to_string())
    }
}

impl From<ReserveError> for ApiError {
    fn from(err: ReserveError) -> Self {
        match err {
            ReserveError::Reached(reached) => reached.into(),
            ReserveError::Db(err) => err.into(),
        }
    }
}

impl From<InvalidUrl> for ApiError {
    fn from(InvalidUrl(issue): InvalidUrl) -> Self {
        ApiError::invalid_url("url", issue)
    }
}

impl From<NoSigningKey> for ApiError {
    fn from(err: NoSigningKey) -> Self {
        ApiError::internal_error(&err)
    }
}

impl From<PasswordError> for ApiError {
    fn from(err: PasswordError) -> Self {
        match err {
            PasswordError::Busy => ApiError::unavailable("Too many sign-ins at once; try again shortly."),
            PasswordError::Stopped => ApiError::unavailable("Password hashing is unavailable."),
            PasswordError::Lost | PasswordError::Hash(_) => ApiError::internal_error(&err),
        }
    }
}

impl From<ApiKeyError> for ApiError {
    fn from(err: ApiKeyError) -> Self {
        match err {
            ApiKeyError::NotFound(id) => ApiError::not_found("API key", id),
            ApiKeyError::NameTaken(name) => {
                ApiError::new(Code::Conflict, format!("An active key named `{name}` already exists."))
            }
            ApiKeyError::Invalid(err) => err.into(),
            ApiKeyError::Limit(err) => err.into(),
            ApiKeyError::Db(err) => err.into(),
        }
    }
}

impl From<EnrollmentError> for ApiError {
    fn from(err: EnrollmentError) -> Self {
        match err {
            EnrollmentError::NotFound(id) => ApiError::not_found("Enrollment token", id),
            EnrollmentError::HostGroupNotFound(id) => {
                ApiError::new(Code::HostGroupNotFound, format!("Host group `{id}` not found."))
            }
            EnrollmentError::HostGroupTaken(name) => {
                ApiError::new(Code::Conflict, format!("A host group named `{}` already exists.", name.escape_debug()))
            }
            EnrollmentError::Unusable => ApiError::unauthenticated(),
            EnrollmentError::PlatformMismatch { expected } => ApiError {
                details: vec![super::FieldIssue { field: "platform".into(), issue: format!("must be `{expected}`") }],
                ..ApiError::new(Code::PlatformMismatch, format!("This token enrolls `{expected}` hosts only."))
            },
            EnrollmentError::Invalid(err) => err.into(),
            EnrollmentError::Db(err) => err.into(),
        }
    }
}

impl From<ServiceAccountError> for ApiError {
    fn from(err: ServiceAccountError) -> Self {
        match err {
            ServiceAccountError::NotFound(id) => ApiError::not_found("Service account", id),
            ServiceAccountError::KeyNotFound(id) => ApiError::not_found("Service account key", id),
            ServiceAccountError::Invalid(err) => err.into(),
            ServiceAccountError::Limit(err) => err.into(),
            ServiceAccountError::Db(err) => err.into(),
        }
    }
}

impl From<ApplicationError> for ApiError {
    fn from(err: ApplicationError) -> Self {
        match err {
            ApplicationError::NotFound(id) => ApiError::not_found("Application", id),
            ApplicationError::RegionNotHeld(region) => {
                ApiError::invalid("region", format!("region `{region}` is not held by this node"))
            }
            ApplicationError::CopyFromOtherAccount => {
                ApiError::invalid("copy_from", "must be an application of the same account")
            }
            ApplicationError::CopyFromRegionNotHeld => {
                ApiError::invalid("copy_from", "must be an application of a region this node holds")
            }
            ApplicationError::RelayRegionNotHeld(_) => ApiError::unavailable("The region is not held here."),
            ApplicationError::CatalogRow(_) => ApiError::internal_error(&err),
            ApplicationError::Invalid(err) => err.into(),
            ApplicationError::FirstKey(err) => err.into(),
            ApplicationError::Db(err) => err.into(),
        }
    }
}

impl From<BillingError> for ApiError {
    fn from(err: BillingError) -> Self {
        match err {
            BillingError::Db(err) => err.into(),
            BillingError::Read(err) => ApiError::from(&*err),
        }
    }
}

impl From<SignatureError> for ApiError {
    fn from(err: SignatureError) -> Self {
        ApiError::new(Code::InvalidSignature, format!("The processor event was refused: {err}."))
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::InvalidCredentials => ApiError::new(Code::InvalidCredentials, "The email or password is wrong."),
            // Every refusal is the one 401: no reason oracle.
            AuthError::RefreshRefused(_) => ApiError::unauthenticated(),
            AuthError::NotAMember(id) => ApiError::not_found("Organization", id),
            AuthError::Tenant(err) => err,
            AuthError::NoSigningKey(err) => err.into(),
            AuthError::Password(err) => err.into(),
            AuthError::Hook(err) => err.into(),
            AuthError::User(err) => err.into(),
            AuthError::Rotation(err) => err.into(),
            AuthError::Entitlement(err) => err.into(),
            AuthError::SecondFactor(err) => err.into(),
            AuthError::EmailNotVerified => ApiError::new(
                Code::EmailNotVerified,
                "The email is not verified; a code was sent to it (POST /v1/auth/email/verify).",
            ),
            AuthError::Db(err) => err.into(),
        }
    }
}

impl From<HookError> for ApiError {
    fn from(err: HookError) -> Self {
        match err {
            HookError::NotFound(id) => ApiError::not_found("Hook", id),
            HookError::Denied(message) => ApiError::new(Code::SignUpDenied, message),
            HookError::Unavailable => {
                ApiError::new(Code::HookUnavailable, "A sign-up check is unavailable; try again shortly.")
                    .with_retry_after(1)
            }
            HookError::InvalidUrl(err) => err.into(),
            HookError::Invalid(err) => err.into(),
            HookError::Limit(err) => err.into(),
            HookError::Db(err) => err.into(),
        }
    }
}

impl From<OrganizationError> for ApiError {
    fn from(err: OrganizationError) -> Self {
        match err {
            OrganizationError::NotFound(id) => ApiError::not_found("Organization", id),
            OrganizationError::MembershipNotFound(user_id) => ApiError::not_found("Membership", user_id),
            OrganizationError::SlugTaken => {
                ApiError::new(Code::Conflict, "An organization with this slug already exists.")
            }
            OrganizationError::AlreadyMember => {
                ApiError::new(Code::AlreadyMember, "The user is already a member of this organization.")
            }
            OrganizationError::NoSuchUser => ApiError::invalid("user_id", "no such user"),
            OrganizationError::LastOwner => ApiError::new(
                Code::LastOwner,
                "The organization's last owner cannot be removed or given another role; make another member owner first.",
            ),
            OrganizationError::Sod(err) => err.into(),
            OrganizationError::Invalid(err) => err.into(),
            OrganizationError::Db(err) => err.into(),
        }
    }
}

impl From<AccessReviewError> for ApiError {
    fn from(err: AccessReviewError) -> Self {
        match err {
            AccessReviewError::NotFound(id) => ApiError::not_found("Access review", id),
            AccessReviewError::ItemNotFound(id) => ApiError::not_found("Access review item", id),
            AccessReviewError::AlreadyDecided => {
                ApiError::new(Code::AlreadyDecided, "The item is already decided; a decision is final.")
            }
            AccessReviewError::AlreadyClosed => ApiError::new(Code::AlreadyDecided, "The review is already closed."),
            AccessReviewError::Organization(err) => err.into(),
            AccessReviewError::Invalid(err) => err.into(),
            AccessReviewError::Db(err) => err.into(),
        }
    }
}

impl From<EntitlementError> for ApiError {
    fn from(err: EntitlementError) -> Self {
        match err {
            EntitlementError::FeatureNotFound(key) => ApiError::not_found("Feature", key),
            EntitlementError::PlanNotFound(key) => ApiError::not_found("Plan", key),
            EntitlementError::OverrideNotFound(key) => ApiError::not_found("Entitlement override of feature", key),
            EntitlementError::InUse(why) => ApiError::new(Code::Conflict, format!("{why}.")),
            EntitlementError::Organization(err) => err.into(),
            EntitlementError::Invalid(err) => err.into(),
            EntitlementError::Limit(err) => err.into(),
            EntitlementError::Db(err) => err.into(),
            EntitlementError::Read(err) => ApiError::from(&*err),
        }
    }
}

impl From<InvitationError> for ApiError {
    fn from(err: InvitationError) -> Self {
        match err {
            InvitationError::Refused(err) => err.into(),
            InvitationError::AlreadyMember => {
                ApiError::new(Code::AlreadyMember, "The email belongs to a member of the organization.")
            }
            InvitationError::AlreadyInvited => {
                ApiError::new(Code::AlreadyInvited, "A pending invitation for this email exists.")
            }
            InvitationError::NotFound(id) => ApiError::not_found("Invitation", id),
            InvitationError::NotPending(status) => {
                ApiError::new(Code::Conflict, format!("The invitation is {status}: only a pending one can be revoked."))
            }
            InvitationError::InvalidToken => {
                ApiError::new(Code::InvalidGrant, "The invitation token is unknown, expired, revoked or already used.")
            }
            InvitationError::EmailMismatch => ApiError::new(
                Code::InvitationEmailMismatch,
                "The invitation is for another email address; sign in as the invited user.",
            ),
            InvitationError::Organization(err) => err.into(),
            InvitationError::Invalid(err) => err.into(),
            InvitationError::Db(err) => err.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(err: Refusal) -> Self {
        match err {
            Refusal::NoActiveOrganization => ApiError::new(
                Code::NoActiveOrganization,
                "The session has no active organization; activate one first (POST /v1/auth/organizations/{id}/activate).",
            ),
            Refusal::InsufficientRole => ApiError::new(
                Code::InsufficientRole,
                "Only the organization's owners and admins may do this.",
            ),
            Refusal::MayNotGrant { granter, role } => ApiError::new(
                Code::InsufficientRole,
                format!(
                    "An {granter} may not grant the role `{role}`: an owner may grant any role, an admin only `member`."
                ),
            ),
            Refusal::Db(err) => err.into(),
        }
    }
}

impl From<SsoDomainError> for ApiError {
    fn from(err: SsoDomainError) -> Self {
        match err {
            SsoDomainError::Refused(err) => err.into(),
            SsoDomainError::NotFound(id) => ApiError::not_found("SSO domain", id),
            SsoDomainError::Taken(why) => ApiError::new(Code::DomainTaken, why),
            SsoDomainError::NotVerified(why) => ApiError::new(Code::DomainVerificationFailed, format!("{why}.")),
            SsoDomainError::Dns(why) => {
                tracing::warn!(error = %why, "an SSO domain lookup failed");
                ApiError::unavailable("The DNS lookup failed; try again.")
            }
            SsoDomainError::Organization(err) => err.into(),
            SsoDomainError::Invalid(err) => err.into(),
            SsoDomainError::Db(err) => err.into(),
        }
    }
}

impl From<SecondFactorError> for ApiError {
    fn from(err: SecondFactorError) -> Self {
        let message = err.to_string();
        match err {
            SecondFactorError::AlreadyEnrolled => {
                ApiError::new(Code::Conflict, "A TOTP factor is active; remove it first.")
            }
            SecondFactorError::NotEnrolling
            | SecondFactorError::NotEnrolled
            | SecondFactorError::NoPasskey
            | SecondFactorError::PasskeyNotFound => ApiError::new(Code::NotFound, capitalized(&message)),
            SecondFactorError::WrongCode | SecondFactorError::InvalidChallenge | SecondFactorError::InvalidCeremony => {
                ApiError::new(Code::InvalidGrant, capitalized(&message))
            }
            SecondFactorError::PasskeysOff | SecondFactorError::NoOriginOnRpId => {
                ApiError::new(Code::PasskeysNotConfigured, capitalized(&message))
            }
            SecondFactorError::PasskeyTaken => ApiError::new(Code::Conflict, capitalized(&message)),
            SecondFactorError::TooManyPasskeys | SecondFactorError::PasskeyRefused => {
                ApiError::invalid("credential", message)
            }
            SecondFactorError::InvalidCode => ApiError::new(Code::InvalidCredentials, capitalized(&message)),
            SecondFactorError::Aal2Required => ApiError::new(Code::Aal2Required, capitalized(&message)),
            SecondFactorError::SecretUnreadable
            | SecondFactorError::PasskeyUnreadable
            | SecondFactorError::CeremonyFailed(_) => ApiError::internal(message),
            SecondFactorError::SessionEnded => ApiError::unauthenticated(),
            SecondFactorError::Db(err) => err.into(),
        }
    }
}

fn capitalized(message: &str) -> String {
    let mut chars = message.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".").unwrap_or_default()
}

impl From<EmailVerificationError> for ApiError {
    fn from(err: EmailVerificationError) -> Self {
        match err {
            EmailVerificationError::InvalidCode => ApiError::new(
                Code::InvalidGrant,
                "The code is wrong, expired or used up; ask for a new one (POST /v1/auth/email/resend).",
            ),
            EmailVerificationError::Db(err) => err.into(),
        }
    }
}

impl From<SodError> for ApiError {
    fn from(err: SodError) -> Self {
        match err {
            SodError::NotFound(id) => ApiError::not_found("Separation-of-duties policy", id),
            SodError::Violation(policy) => ApiError::new(
                Code::SodViolation,
                format!(
                    "The separation-of-duties policy `{}` ({}) forbids a user to hold both `{}` and `{}`.",
                    policy.name, policy.id, policy.role_a, policy.role_b
                ),
            ),
            SodError::Invalid(err) => err.into(),
            SodError::Limit(err) => err.into(),
            SodError::Db(err) => err.into(),
        }
    }
}

impl From<PersonalKeyError> for ApiError {
    fn from(err: PersonalKeyError) -> Self {
        match err {
            PersonalKeyError::NotFound(id) => ApiError::not_found("API key", id),
            PersonalKeyError::Limit(err) => err.into(),
            PersonalKeyError::Db(err) => err.into(),
        }
    }
}

impl From<ProfileFieldError> for ApiError {
    fn from(err: ProfileFieldError) -> Self {
        match err {
            ProfileFieldError::NotFound(id) => ApiError::not_found("Profile field", id),
            ProfileFieldError::KeyTaken(key) => {
                ApiError::new(Code::KeyInUse, format!("A profile field with key `{key}` already exists."))
            }
            ProfileFieldError::Invalid(err) => err.into(),
            ProfileFieldError::Limit(err) => err.into(),
            ProfileFieldError::Db(err) => err.into(),
        }
    }
}

impl From<RotationError> for ApiError {
    fn from(err: RotationError) -> Self {
        match err {
            RotationError::RegionNotHeld(_) => ApiError::unavailable("The region is not held here."),
            RotationError::Stopped => ApiError::unavailable("Sessions are unavailable; try again shortly."),
            RotationError::Batch(err) => ApiError::from(&*err),
            RotationError::Db(err) => err.into(),
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(err: SessionError) -> Self {
        match err {
            SessionError::NotFound(id) => ApiError::not_found("Session", id),
            SessionError::Db(err) => err.into(),
        }
    }
}

impl From<UserError> for ApiError {
    fn from(err: UserError) -> Self {
        match err {
            UserError::NotFound(id) => ApiError::not_found("User", id),
            UserError::EmailTaken => ApiError::new(Code::Conflict, "A user with this email already exists."),
            UserError::Db(err) => err.into(),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(err: WebhookError) -> Self {
        match err {
            WebhookError::NotFound(id) => ApiError::not_found("Webhook", id),
            WebhookError::DeliveryNotFound(id) => ApiError::not_found("Delivery", id),
            WebhookError::Disabled(id) => {
                ApiError::new(Code::Conflict, format!("Webhook `{id}` is disabled; enable it first."))
            }
            WebhookError::DeliveryInFlight(id) => {
                ApiError::new(Code::Conflict, format!("Delivery `{id}` is being sent right now."))
            }
            WebhookError::Limit(err) => err.into(),
            WebhookError::Db(err) => err.into(),
        }
    }
}

impl From<MessagingError> for ApiError {
    fn from(err: MessagingError) -> Self {
        match err {
            MessagingError::NotFound(channel) => {
                ApiError::new(Code::NotFound, format!("The application has no `{channel}` messaging provider."))
            }
            MessagingError::ProductionSharedSender => ApiError::new(
                Code::ProductionSharedSenderForbidden,
                "A production application may not use the shared sender: configure its own provider.",
            ),
            // The provider's server (not the caller, not us) failed: 503,
            // and the provider is now `failing`.
            MessagingError::SendFailed { kind, reason } => ApiError::new(
                Code::Unavailable,
                format!("The message could not be sent through the `{kind}` provider: {reason}. Its status is now `failing`."),
            ),
            MessagingError::Busy { kind, in_flight } => ApiError::new(
                Code::Unavailable,
                format!("{in_flight} messages are already being sent through the `{kind}` provider of this application: try again shortly."),
            ),
            MessagingError::Invalid(invalid) => invalid.into(),
            MessagingError::Tenant(err) => err,
            MessagingError::Db(err) => err.into(),
        }
    }
}

impl From<OAuthProviderError> for ApiError {
    fn from(err: OAuthProviderError) -> Self {
        match err {
            OAuthProviderError::ProductionRequiresOwnCredentials => ApiError::new(
                Code::ProductionRequiresOwnCredentials,
                "A production application must use its own client credentials: set `client_id` and `client_secret`, and not `use_shared_dev_credentials`.",
            ),
            OAuthProviderError::Invalid(invalid) => invalid.into(),
            OAuthProviderError::Db(err) => err.into(),
        }
    }
}

impl From<PasswordResetError> for ApiError {
    fn from(err: PasswordResetError) -> Self {
        match err {
            PasswordResetError::InvalidToken => ApiError::new(
                Code::InvalidGrant,
                "The reset token is unknown, expired or already used: ask for a new one.",
            ),
            PasswordResetError::Invalid(invalid) => invalid.into(),
            PasswordResetError::Password(err) => err.into(),
            PasswordResetError::User(err) => err.into(),
            PasswordResetError::Db(err) => err.into(),
        }
    }
}

impl From<ProviderSignInError> for ApiError {
    fn from(err: ProviderSignInError) -> Self {
        match err {
            ProviderSignInError::NotEnabled(provider) => {
                ApiError::new(Code::NotFound, format!("Sign-in with `{provider}` is not enabled for this application."))
            }
            ProviderSignInError::RedirectUri(issue) => ApiError::invalid_url("redirect_uri", issue),
            ProviderSignInError::InvalidState => ApiError::new(
                Code::InvalidState,
                "The sign-in's `state` is unknown, expired or already used: start the sign-in again.",
            ),
            ProviderSignInError::InvalidGrant => ApiError::new(
                Code::InvalidGrant,
                "The code is unknown, expired, already used, or its `code_verifier` does not match.",
            ),
            ProviderSignInError::Invalid(invalid) => invalid.into(),
            ProviderSignInError::Auth(err) => err.into(),
            ProviderSignInError::Db(err) => err.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnAcquireErr, ConnectionTrait, Database, DbErr};
    use uuid::Uuid;

    use super::*;
    use crate::{
        error::FieldIssue,
        storage::{Limit, LimitReached},
    };

    fn wire(err: impl Into<ApiError>) -> (Code, String, Vec<FieldIssue>, Option<u64>) {
        let err = err.into();
        (err.code, err.message, err.details, err.retry_after)
    }

    #[test]
    fn outcomes_keep_their_codes_and_messages() {
        let id = Uuid::nil();
        let (code, message, ..) = wire(ApplicationError::NotFound(id));
        assert_eq!((code, message.as_str()), (Code::NotFound, format!("Application `{id}` not found.").as_str()));
        assert_eq!(code.status(), 404);
        let (code, message, ..) = wire(WebhookError::DeliveryInFlight(id));
        assert_eq!((code, message), (Code::Conflict, format!("Delivery `{id}` is being sent right now.")));
        let (code, message, ..) = wire(ProfileFieldError::KeyTaken("plan".into()));
        assert_eq!((code, message.as_str()), (Code::KeyInUse, "A profile field with key `plan` already exists."));
        let (code, _, _, retry_after) = wire(AuthError::Hook(HookError::Unavailable));
        assert_eq!((code, retry_after), (Code::HookUnavailable, Some(1)));
        assert_eq!(
            wire(AuthError::RefreshRefused(crate::service::sessions::RefreshRefused::Reused)).0,
            Code::Unauthenticated
        );
    }

    #[test]
    fn a_limit_is_422_naming_its_field() {
        let limit = Limit { max: 10, what: "hooks", field: "url" };
        let (code, message, details, _) = wire(HookError::Limit(ReserveError::Reached(LimitReached(limit))));
        assert_eq!(code.status(), 422);
        assert_eq!((code, message.as_str()), (Code::ValidationFailed, "`url`: the limit of 10 hooks is reached"));
        assert_eq!(details, vec![FieldIssue { field: "url".into(), issue: "the limit of 10 hooks is reached".into() }]);
    }

    #[test]
    fn field_issues_and_urls_carry_details() {
        let issue = |field: &str| FieldIssue { field: field.into(), issue: "must not be empty".into() };
        let (code, message, details, _) = wire(OrganizationError::Invalid(Invalid(vec![issue("name"), issue("slug")])));
        assert_eq!(
            (code, message.as_str(), details.len()),
            (Code::ValidationFailed, "The request has invalid fields.", 2)
        );
        let (code, message, details, _) = wire(HookError::InvalidUrl(InvalidUrl("must use https".into())));
        assert_eq!((code, message.as_str()), (Code::InvalidUrl, "`url` must use https."));
        assert_eq!(details, vec![FieldIssue { field: "url".into(), issue: "must use https".into() }]);
    }

    #[test]
    fn database_errors_keep_their_one_mapping() {
        let (code, _, _, retry_after) = wire(UserError::Db(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout)));
        assert_eq!((code, retry_after), (Code::Unavailable, Some(1)));
        assert_eq!(wire(SessionError::Db(DbErr::Custom("a defect".into()))).0, Code::Internal);
        let batch = std::sync::Arc::new(DbErr::ConnectionAcquire(ConnAcquireErr::Timeout));
        assert_eq!(wire(RotationError::Batch(batch)).0, Code::Unavailable);
    }

    /// A real unique violation: the area's rule where it names one, the
    /// generic 409 where it does not.
    #[actix_web::test]
    #[allow(clippy::disallowed_methods)] // a scratch in-memory table, no tenant
    async fn unique_violations_are_409() {
        let db = Database::connect("sqlite::memory:").await.unwrap();
        db.execute_unprepared("create table t (email text unique)").await.unwrap();
        db.execute_unprepared("insert into t values ('a@example.com')").await.unwrap();
        let violation = || async { db.execute_unprepared("insert into t values ('a@example.com')").await.unwrap_err() };
        let taken = crate::service::unless_unique(UserError::EmailTaken)(violation().await);
        assert!(matches!(taken, UserError::EmailTaken));
        let (code, message, ..) = wire(taken);
        assert_eq!((code, message.as_str()), (Code::Conflict, "A user with this email already exists."));
        let (code, message, ..) = wire(WebhookError::Db(violation().await));
        assert_eq!(code.status(), 409);
        assert_eq!((code, message.as_str()), (Code::Conflict, "The resource conflicts with an existing one."));
        let other = crate::service::unless_unique(UserError::EmailTaken)(DbErr::Custom("a defect".into()));
        assert!(matches!(other, UserError::Db(_)));
    }
}
