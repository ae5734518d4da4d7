//! Sign-up restrictions: the email domains an application allows or
//! blocks for new end users. They are checked before the `pre_sign_up`
//! hooks, with no call out, on every way a user is created by signing up
//! (a password sign-up, a first sign-in with a provider). A user made with
//! a secret key is the operator's decision and is not checked.
//!
//! A domain matches itself and its subdomains (`example.com` matches
//! `eu.example.com`). A blocked domain is refused; when the allowed list is
//! not empty, only its domains are accepted.
use entity::sign_up_restriction;
use sea_orm::ActiveValue::Set;
use serde_json::json;

use super::HookError;
use crate::{
    areas::{
        sso_domains::normalize_domain,
        validate::{Invalid, Issues},
    },
    error::ApiResult,
    events::catalog::EventType,
    storage::{TenantConn, TenantScope},
    tenancy::{parts::TenantPart, InTurn},
};

/// The most domains in each list.
pub const MAX_DOMAINS: usize = 100;

/// The application's restrictions (a tenant part); empty lists when it has
/// set none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignUpRestrictions {
    pub allowed_email_domains: Vec<String>,
    pub blocked_email_domains: Vec<String>,
    /// The stored row could not be read (only a hand-edited row can be
    /// so): every sign-up is refused rather than none checked.
    unreadable: bool,
}

impl TenantPart for SignUpRestrictions {
    async fn load(scope: &TenantScope) -> ApiResult<Self> {
        Ok(find(scope).await?)
    }
}

impl SignUpRestrictions {
    pub fn new(allowed_email_domains: Vec<String>, blocked_email_domains: Vec<String>) -> SignUpRestrictions {
        SignUpRestrictions { allowed_email_domains, blocked_email_domains, unreadable: false }
    }

    fn of(row: &sign_up_restriction::Model) -> SignUpRestrictions {
        let list = |value: &serde_json::Value| serde_json::from_value::<Vec<String>>(value.clone());
        match (list(&row.allowed_email_domains), list(&row.blocked_email_domains)) {
            (Ok(allowed), Ok(blocked)) => SignUpRestrictions::new(allowed, blocked),
            _ => {
                let application_id = row.application_id;
                tracing::error!(%application_id, "unreadable sign-up restrictions: every sign-up is refused until they are set again");
                SignUpRestrictions { unreadable: true, ..SignUpRestrictions::default() }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.allowed_email_domains.is_empty() && self.blocked_email_domains.is_empty() && !self.unreadable
    }

    /// Refuses an email whose domain is blocked, or not allowed. The domain
    /// is compared in its IDNA form whatever characters its labels hold
    /// (an address's shape is checked elsewhere); one with no IDNA form is
    /// refused while any restriction is set.
    pub fn check(&self, email: &str) -> Result<(), HookError> {
        if self.is_empty() {
            return Ok(());
        }
        let domain = email.rsplit_once('@').and_then(|(_, domain)| idna::domain_to_ascii(domain).ok());
        let domain = domain.as_deref().map(|d| d.trim_end_matches('.'));
        let covers = |domain: &str, entry: &String| {
            domain == entry || domain.strip_suffix(entry.as_str()).is_some_and(|rest| rest.ends_with('.'))
        };
        let admitted = domain.is_some_and(|domain| {
            !self.unreadable
                && !self.blocked_email_domains.iter().any(|entry| covers(domain, entry))
                && (self.allowed_email_domains.is_empty()
                    || self.allowed_email_domains.iter().any(|entry| covers(domain, entry)))
        });
        if !admitted {
            metrics::counter!("gatehouse_sign_ups_refused_total", "reason" => "email_domain").increment(1);
            return Err(HookError::Denied("Sign-ups with this email address's domain are not allowed.".into()));
        }
        Ok(())
    }
}

pub async fn find(db: &impl TenantConn) -> Result<SignUpRestrictions, sea_orm::DbErr> {
    let row = db.find::<sign_up_restriction::Entity>().one(db.conn()).await?;
    Ok(row.as_ref().map(SignUpRestrictions::of).unwrap_or_default())
}

/// Each list's domains in their normal form (lower-case ASCII, no
/// trailing dot), each once, in the order given.
fn checked(given: SignUpRestrictions) -> Result<SignUpRestrictions, Invalid> {
    let mut issues = Issues::default();
    let mut normal = |field: &str, domains: Vec<String>| {
        if domains.len() > MAX_DOMAINS {
            issues.add(field, format!("must have at most {MAX_DOMAINS} domains"));
        }
        let mut seen = Vec::new();
        for (i, raw) in domains.iter().enumerate() {
            match normalize_domain(raw) {
                Some(domain) if !seen.contains(&domain) => seen.push(domain),
                Some(_) => {}
                None => issues.add(&format!("{field}[{i}]"), "must be a domain name such as `example.com`"),
            }
        }
        seen
    };
    let checked = SignUpRestrictions::new(
        normal("allowed_email_domains", given.allowed_email_domains),
        normal("blocked_email_domains", given.blocked_email_domains),
    );
    issues.finish()?;
    Ok(checked)
}

/// Replaces the application's restrictions (a tenant change: the state's
/// part is reloaded after it).
pub async fn put(turn: &InTurn, given: SignUpRestrictions) -> Result<SignUpRestrictions, HookError> {
    let restrictions = checked(given)?;
    let mut txn = turn.scope().begin().await?;
    // Two first PUTs (on two nodes) take turns instead of racing to insert.
    txn.lock_tenant().await?;
    let existing = txn.find::<sign_up_restriction::Entity>().one(txn.conn()).await?;
    let row = sign_up_restriction::ActiveModel {
        application_id: Set(txn.application_id()),
        allowed_email_domains: Set(json!(restrictions.allowed_email_domains)),
        blocked_email_domains: Set(json!(restrictions.blocked_email_domains)),
        updated_at: Set(crate::clock::now()),
    };
    if existing.is_some() {
        txn.update(row).await?;
    } else {
        txn.insert(row).await?;
    }
    let data = json!({
        "allowed_email_domains": restrictions.allowed_email_domains,
        "blocked_email_domains": restrictions.blocked_email_domains,
    });
    txn.audit(EventType::SignUpRestrictionsUpdated, None, data).await?;
    txn.commit().await?;
    Ok(restrictions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restrictions(allowed: &[&str], blocked: &[&str]) -> SignUpRestrictions {
        let list = |domains: &[&str]| domains.iter().map(|d| d.to_string()).collect();
        SignUpRestrictions::new(list(allowed), list(blocked))
    }

    #[test]
    fn a_domain_covers_itself_and_its_subdomains_only() {
        let blocked = restrictions(&[], &["example.com"]);
        assert!(blocked.check("a@example.com").is_err());
        assert!(blocked.check("a@EU.Example.com").is_err());
        assert!(blocked.check("a@notexample.com").is_ok());
        assert!(blocked.check("a@example.com.evil.test").is_ok());
        assert!(blocked.check("a@example.com.").is_err(), "a trailing dot");
        for shaped in ["a@x_y.example.com", "a@-x.example.com", "a@x+y.example.com"] {
            assert!(blocked.check(shaped).is_err(), "{shaped}: a label no host name has");
        }
        let unicode = checked(restrictions(&[], &["b\u{fc}cher.example"])).unwrap();
        assert!(unicode.check("a@x_y.B\u{dc}CHER.example").is_err(), "compared in IDNA form");
    }

    #[test]
    fn an_unreadable_row_refuses_every_sign_up() {
        let row = sign_up_restriction::Model {
            application_id: uuid::Uuid::nil(),
            allowed_email_domains: json!("not a list"),
            blocked_email_domains: json!([]),
            updated_at: crate::clock::now(),
        };
        assert!(SignUpRestrictions::of(&row).check("a@example.com").is_err());
    }

    #[test]
    fn an_allowed_list_admits_only_its_domains_and_a_block_wins() {
        let allowed = restrictions(&["acme.test"], &["contractors.acme.test"]);
        assert!(allowed.check("a@acme.test").is_ok());
        assert!(allowed.check("a@eu.acme.test").is_ok());
        assert!(allowed.check("a@contractors.acme.test").is_err());
        assert!(allowed.check("a@gmail.com").is_err());
        assert!(SignUpRestrictions::default().check("a@anything.test").is_ok());
    }

    #[test]
    fn lists_are_normalized_deduplicated_and_bounded() {
        let given = restrictions(&["Example.COM.", "example.com", "bücher.example"], &[]);
        let checked = checked(given).unwrap();
        assert_eq!(checked.allowed_email_domains, ["example.com", "xn--bcher-kva.example"]);
        let issues = checked_issues(restrictions(&[], &["not a domain", "localhost"]));
        assert_eq!(issues, ["blocked_email_domains[0]", "blocked_email_domains[1]"]);
        let many: Vec<String> = (0..=MAX_DOMAINS).map(|i| format!("d{i}.test")).collect();
        let too_many = SignUpRestrictions::new(many, vec![]);
        assert_eq!(checked_issues(too_many), ["allowed_email_domains"]);
    }

    fn checked_issues(given: SignUpRestrictions) -> Vec<String> {
        checked(given).unwrap_err().0.into_iter().map(|issue| issue.field).collect()
    }
}
