//! SSO domains (operation 20, with claim, list and verify): an
//! organization's owners and admins claim a domain, publish the answered
//! TXT record at `_gatehouse-challenge.<domain>`, and verify it. Consumer
//! mail domains ([`CONSUMER_DOMAINS`]) cannot be claimed; a domain verified
//! by one organization cannot be claimed or verified by another of the same
//! application (verifications take the tenant lock, so two at once cannot
//! both win). A verified domain may name a role: users who then sign up with
//! an email at it join the organization with that role (separation of
//! duties applying; a refused join leaves the sign-up as it is, audited).
//! Naming the role grants it, so the claimer may name only a role they may
//! grant ([`memberships::may_grant`], as for an invitation): an admin only
//! `member`.
pub mod http;

use entity::{sod_policy, sso_domain};
use hickory_resolver::{
    config::{NameServerConfig, ResolverConfig, ResolverOpts},
    name_server::TokioConnectionProvider,
    proto::xfer::Protocol,
    TokioResolver,
};
use sea_orm::{sea_query::Expr, ColumnTrait, DbErr, PaginatorTrait, QueryFilter, QueryOrder, UpdateMany};
use serde_json::json;
use uuid::Uuid;

use super::{
    memberships::{self, Manager, Refusal},
    organizations::OrganizationError,
    sod::Grant,
    validate::{Invalid, Issues},
};
use crate::{
    config::DnsSettings,
    error::{ApiError, Code},
    events::catalog::EventType,
    storage::{TenantConn, TenantTxn},
    tenancy::InTurn,
};

pub const PENDING: &str = "pending";
pub const VERIFIED: &str = "verified";
/// Where the claimant publishes the token: `_gatehouse-challenge.<domain>`.
pub const CHALLENGE_LABEL: &str = "_gatehouse-challenge";
/// The TXT value: `gatehouse-domain-verification=<token>`.
pub const VALUE_PREFIX: &str = "gatehouse-domain-verification=";

/// Mail domains anyone can have an address at: no organization owns them.
pub const CONSUMER_DOMAINS: &[&str] = &[
    "aol.com",
    "fastmail.com",
    "gmail.com",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "googlemail.com",
    "hey.com",
    "hotmail.co.uk",
    "hotmail.com",
    "hotmail.fr",
    "icloud.com",
    "live.com",
    "mac.com",
    "mail.com",
    "mail.ru",
    "me.com",
    "msn.com",
    "outlook.com",
    "proton.me",
    "protonmail.com",
    "qq.com",
    "web.de",
    "yahoo.co.jp",
    "yahoo.co.uk",
    "yahoo.com",
    "yahoo.fr",
    "yandex.com",
    "yandex.ru",
    "zoho.com",
    "163.com",
    "126.com",
];

#[derive(Debug, thiserror::Error)]
pub enum SsoDomainError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("SSO domain `{0}` not found")]
    NotFound(Uuid),
    /// Claimed by this organization already, or verified by another.
    #[error("{0}")]
    Taken(String),
    /// The TXT record is missing or carries another value.
    #[error("{0}")]
    NotVerified(String),
    /// The resolver could not answer (timeout, SERVFAIL, unreachable).
    #[error("the DNS lookup failed: {0}")]
    Dns(String),
    #[error(transparent)]
    Organization(#[from] OrganizationError),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbErr),
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

/// A domain as stored: lower-case ASCII (IDNA), no trailing dot, at least
/// two labels of letters, digits and inner hyphens, at most 253 characters.
pub fn normalize_domain(raw: &str) -> Option<String> {
    let ascii = idna::domain_to_ascii(raw.trim().trim_end_matches('.')).ok()?;
    let labels: Vec<&str> = ascii.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let fits = ascii.len() <= 253 && labels.len() >= 2 && labels.iter().all(label_ok);
    let tld_ok = labels.last().is_some_and(|tld| tld.chars().any(|c| c.is_ascii_lowercase()));
    (fits && tld_ok).then_some(ascii)
}

/// TXT lookups through the configured servers (or the system's).
#[derive(Clone)]
pub struct DomainResolver {
    resolver: TokioResolver,
}

impl DomainResolver {
    pub fn new(settings: &DnsSettings) -> Result<DomainResolver, String> {
        let provider = TokioConnectionProvider::default();
        let mut builder = if settings.nameservers.is_empty() {
            TokioResolver::builder(provider).map_err(|err| err.to_string())?
        } else {
            let mut config = ResolverConfig::new();
            for address in &settings.nameservers {
                config.add_name_server(NameServerConfig::new(*address, Protocol::Udp));
                config.add_name_server(NameServerConfig::new(*address, Protocol::Tcp));
            }
            TokioResolver::builder_with_config(config, provider)
        };
        let options: &mut ResolverOpts = builder.options_mut();
        options.timeout = std::time::Duration::from_secs(2);
        options.attempts = 2;
        // A verification asks again after the record is published: never an old answer.
        options.cache_size = 0;
        Ok(DomainResolver { resolver: builder.build() })
    }

    /// The TXT strings at `name` (each record's strings joined); none when
    /// the name does not exist or has no TXT record.
    async fn txt(&self, name: &str) -> Result<Vec<String>, SsoDomainError> {
        match self.resolver.txt_lookup(format!("{name}.")).await {
            Ok(found) => Ok(found
                .iter()
                .map(|txt| txt.txt_data().iter().map(|part| String::from_utf8_lossy(part)).collect::<String>())
                .collect()),
            Err(err) if err.is_nx_domain() || err.is_no_records_found() => Ok(Vec::new()),
            Err(err) => Err(SsoDomainError::Dns(err.to_string())),
        }
    }
}

/// The record a claimant publishes: its name and value.
pub fn challenge(domain: &sso_domain::Model) -> (String, String) {
    (format!("{CHALLENGE_LABEL}.{}", domain.domain), format!("{VALUE_PREFIX}{}", domain.verification_token))
}

pub async fn claim(
    turn: &InTurn,
    manager: &Manager,
    raw_domain: &str,
    auto_join_role: Option<String>,
) -> Result<sso_domain::Model, SsoDomainError> {
    let scope = turn.scope();
    let mut issues = Issues::default();
    let domain = normalize_domain(raw_domain);
    match &domain {
        None => issues.add("domain", "must be a domain name such as example.com"),
        Some(d) if CONSUMER_DOMAINS.contains(&d.as_str()) => {
            issues.add("domain", "is a consumer mail domain: no organization can claim it")
        }
        Some(_) => {}
    }
    if let Some(role) = &auto_join_role {
        issues.role("auto_join_role", role);
    }
    issues.finish()?;
    if let Some(role) = &auto_join_role {
        manager.may_grant(role)?;
    }
    let domain = domain.unwrap_or_default();
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let claims = claims_of(&txn, &domain).await?;
    if let Some(taken) = claims.iter().find(|d| d.organization_id == manager.organization_id || d.status == VERIFIED) {
        let why = if taken.organization_id == manager.organization_id {
            "The organization has claimed this domain already."
        } else {
            "Another organization has verified this domain."
        };
        return Err(SsoDomainError::Taken(why.into()));
    }
    let row = sso_domain::Model {
        id: Uuid::now_v7(),
        application_id: txn.application_id(),
        organization_id: manager.organization_id,
        domain,
        verification_token: crate::oauth::random_token(24),
        status: PENDING.to_string(),
        auto_join_role,
        claimed_by: Some(manager.user_id),
        created_at: crate::clock::now(),
        verified_at: None,
    };
    txn.insert(sso_domain::ActiveModel::from(row.clone())).await?;
    let data = json!({"sso_domain_id": row.id, "domain": row.domain, "auto_join_role": row.auto_join_role});
    txn.audit(EventType::SsoDomainCreated, Some(manager.organization_id), data).await?;
    txn.commit().await?;
    Ok(row)
}

async fn claims_of(db: &impl TenantConn, domain: &str) -> Result<Vec<sso_domain::Model>, DbErr> {
    db.find::<sso_domain::Entity>().filter(sso_domain::Column::Domain.eq(domain)).all(db.conn()).await
}

/// The organization's domains, oldest first.
pub async fn list(db: &impl TenantConn, manager: &Manager) -> Result<Vec<sso_domain::Model>, DbErr> {
    db.find::<sso_domain::Entity>()
        .filter(sso_domain::Column::OrganizationId.eq(manager.organization_id))
        .order_by_asc(sso_domain::Column::CreatedAt)
        .all(db.conn())
        .await
}

/// One of the organization's domains; another organization's is not found.
async fn find(db: &impl TenantConn, manager: &Manager, id: Uuid) -> Result<sso_domain::Model, SsoDomainError> {
    db.find_by_id::<sso_domain::Entity>(id)
        .filter(sso_domain::Column::OrganizationId.eq(manager.organization_id))
        .one(db.conn())
        .await?
        .ok_or(SsoDomainError::NotFound(id))
}

/// Looks the TXT record up and, when it carries the token, marks the
/// domain verified (verifying again is a no-op).
pub async fn verify(
    turn: &InTurn,
    resolver: &DomainResolver,
    manager: &Manager,
    id: Uuid,
) -> Result<sso_domain::Model, SsoDomainError> {
    let scope = turn.scope();
    let domain = find(scope, manager, id).await?;
    if domain.status == VERIFIED {
        return Ok(domain);
    }
    let (name, value) = challenge(&domain);
    let found = resolver.txt(&name).await?;
    if !found.iter().any(|txt| txt.trim() == value) {
        let what =
            if found.is_empty() { "no TXT record".to_string() } else { format!("{} other TXT records", found.len()) };
        return Err(SsoDomainError::NotVerified(format!("{name} has {what}; publish the TXT record {value}")));
    }
    let mut txn = scope.begin().await?;
    txn.lock_tenant().await?;
    let verified_elsewhere =
        claims_of(&txn, &domain.domain).await?.iter().any(|d| d.id != domain.id && d.status == VERIFIED);
    if verified_elsewhere {
        return Err(SsoDomainError::Taken("Another organization has verified this domain.".into()));
    }
    let now = crate::clock::now();
    let changed = txn
        .update_many(|q: UpdateMany<sso_domain::Entity>| {
            q.col_expr(sso_domain::Column::Status, Expr::value(VERIFIED))
                .col_expr(sso_domain::Column::VerifiedAt, Expr::value(now))
                .filter(sso_domain::Column::Id.eq(id))
                .filter(sso_domain::Column::Status.eq(PENDING))
        })
        .await?;
    if changed == 0 {
        // Deleted or verified meanwhile: answer it as it is.
        return find(scope, manager, id).await;
    }
    let data = json!({"sso_domain_id": id, "domain": domain.domain});
    txn.audit(EventType::SsoDomainVerified, Some(manager.organization_id), data).await?;
    txn.commit().await?;
    Ok(sso_domain::Model { status: VERIFIED.to_string(), verified_at: Some(now), ..domain })
}

/// Operation 20.
pub async fn delete(turn: &InTurn, manager: &Manager, id: Uuid) -> Result<(), SsoDomainError> {
    let scope = turn.scope();
    let mut txn = scope.begin().await?;
    let domain = find(&txn, manager, id).await?;
    txn.delete::<sso_domain::Entity>(sso_domain::Column::Id.eq(id)).await?;
    let data = json!({"sso_domain_id": id, "domain": domain.domain});
    txn.audit(EventType::SsoDomainDeleted, Some(manager.organization_id), data).await?;
    txn.commit().await?;
    Ok(())
}

/// In a sign-up's transaction: the new user joins the organization that
/// verified their email's domain and asked for it, with its role. A join
/// the policies refuse leaves the sign-up as it is, audited.
///
/// The role is granted on its claimer's authority, checked again now
/// ([`memberships::granting_role`], [`memberships::may_grant`]): only a
/// claimer who is an owner of the organization now grants more than
/// `member`. A claimer demoted or gone, and a domain claimed before the
/// claimer was recorded (`claimed_by` null: an admin's `owner` from before
/// the check at claim time), count as an admin: such a domain still
/// auto-joins as `member`, and any other role is refused (audited
/// `sso_domain.auto_join_refused`) until an owner claims the domain again.
pub async fn auto_join(
    txn: &mut TenantTxn,
    policies: &[sod_policy::Model],
    user_id: Uuid,
    email: &str,
) -> Result<(), DbErr> {
    let Some((_, domain)) = email.rsplit_once('@') else { return Ok(()) };
    let verified = txn
        .find::<sso_domain::Entity>()
        .filter(sso_domain::Column::Domain.eq(domain))
        .filter(sso_domain::Column::Status.eq(VERIFIED))
        .one(txn.conn())
        .await?;
    let Some(domain) = verified else { return Ok(()) };
    let Some(role) = domain.auto_join_role.clone() else { return Ok(()) };
    let granter = memberships::granting_role(txn, domain.organization_id, domain.claimed_by).await?;
    if !memberships::may_grant(granter, &role) {
        let reason = format!("the domain's claimer (as {granter}) may not grant the role `{role}`");
        return refuse_join(txn, &domain, user_id, reason).await;
    }
    let grant = Grant { organization_id: domain.organization_id, user_id, role };
    match memberships::join_in(txn, policies, grant).await {
        Ok(_) => Ok(()),
        Err(OrganizationError::Db(err)) => Err(err),
        Err(refusal) => refuse_join(txn, &domain, user_id, refusal.to_string()).await,
    }
}

/// Whether the organization has verified the domain of `email`.
pub async fn verified_by(db: &impl TenantConn, organization_id: Uuid, email: &str) -> Result<bool, DbErr> {
    let Some((_, domain)) = email.rsplit_once('@') else { return Ok(false) };
    let found = db
        .find::<sso_domain::Entity>()
        .filter(sso_domain::Column::Domain.eq(domain))
        .filter(sso_domain::Column::OrganizationId.eq(organization_id))
        .filter(sso_domain::Column::Status.eq(VERIFIED))
        .count(db.conn())
        .await?;
    Ok(found > 0)
}

/// A refused auto-join: the sign-up stays as it is, the refusal audited.
async fn refuse_join(
    txn: &mut TenantTxn,
    domain: &sso_domain::Model,
    user_id: Uuid,
    reason: String,
) -> Result<(), DbErr> {
    let data = json!({"sso_domain_id": domain.id, "user_id": user_id, "reason": reason});
    txn.audit(EventType::SsoDomainAutoJoinRefused, Some(domain.organization_id), data).await.map(|_| ())
}
