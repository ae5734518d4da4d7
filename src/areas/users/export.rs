//! Everything the application holds about one user, as one JSON document:
//! the answer to a subject access request and to data portability (GDPR
//! Art. 15 and 20). Secrets stay out: no password hash, no TOTP secret, no
//! key or code hash, no passkey credential.
use chrono::{DateTime, Utc};
use entity::{
    audit_event, membership, mfa_factor, passkey, recovery_code, scim_resource, session, user_api_key, user_identity,
};
use sea_orm::{sea_query::Expr, ColumnTrait, Condition, DbErr, PaginatorTrait, QueryFilter, QueryOrder};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    view::{SessionView, UserView},
    UserError,
};
use crate::{
    areas::oauth_clients::consents::ConsentView,
    audit::{personal::Subject, query::AuditRow, ActorKind},
    storage::TenantConn,
};

/// The version of the export's shape: a consumer checks it first.
pub const FORMAT: &str = "gatehouse.user_export.v1";

#[derive(Serialize, ToSchema)]
pub struct UserExport {
    /// `gatehouse.user_export.v1`.
    pub format: &'static str,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub exported_at: DateTime<Utc>,
    pub user: UserView,
    pub identities: Vec<IdentityExport>,
    pub sessions: Vec<SessionView>,
    pub memberships: Vec<MembershipExport>,
    /// The third parties' clients the user allowed, and what.
    pub consents: Vec<ConsentView>,
    /// What the organizations' SCIM directories hold of the user.
    pub directory_records: Vec<DirectoryRecordExport>,
    pub second_factors: Vec<SecondFactorExport>,
    pub passkeys: Vec<PasskeyExport>,
    pub personal_keys: Vec<PersonalKeyExport>,
    /// Recovery codes not used yet (the codes themselves are only hashes here).
    pub recovery_codes_remaining: u64,
    /// Every audit row about the user, by them, or carrying their personal
    /// data (before they signed up too), in chain order, opened.
    pub audit: Vec<AuditRow>,
}

/// An identity provider's account linked to the user.
#[derive(Serialize, ToSchema)]
pub struct IdentityExport {
    pub id: Uuid,
    pub provider: String,
    /// The provider's id for the account.
    pub subject: String,
    pub email: Option<String>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub last_sign_in_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, ToSchema)]
pub struct MembershipExport {
    pub organization_id: Uuid,
    pub role: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
}

/// A SCIM directory's User that stands for the user, as the directory sent it.
#[derive(Serialize, ToSchema)]
pub struct DirectoryRecordExport {
    pub directory_id: Uuid,
    /// The record's SCIM id.
    pub id: Uuid,
    pub active: bool,
    /// The SCIM attributes (`userName`, `name`, `emails`, …).
    #[schema(value_type = Object)]
    pub attributes: serde_json::Value,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub updated_at: DateTime<Utc>,
}

/// A second factor, without its secret.
#[derive(Serialize, ToSchema)]
pub struct SecondFactorExport {
    pub id: Uuid,
    /// `totp`.
    pub kind: String,
    pub status: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub confirmed_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, ToSchema)]
pub struct PasskeyExport {
    pub id: Uuid,
    pub name: String,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A personal API key, without its secret.
#[derive(Serialize, ToSchema)]
pub struct PersonalKeyExport {
    pub id: Uuid,
    pub name: String,
    pub prefix: String,
    #[schema(value_type = Vec<String>)]
    pub scopes: serde_json::Value,
    #[serde(serialize_with = "crate::clock::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::clock::serialize_option")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// The user's export; `UserError::NotFound` when there is no such user.
pub async fn export(db: &impl TenantConn, id: Uuid) -> Result<UserExport, UserError> {
    let user = super::find(db, id).await?;
    let identities = db.find::<user_identity::Entity>().filter(user_identity::Column::UserId.eq(id));
    let sessions = db.find::<session::Entity>().filter(session::Column::UserId.eq(id));
    let memberships = db.find::<membership::Entity>().filter(membership::Column::UserId.eq(id));
    let records = db.find::<scim_resource::Entity>().filter(scim_resource::Column::UserId.eq(id));
    let factors = db.find::<mfa_factor::Entity>().filter(mfa_factor::Column::UserId.eq(id));
    let passkeys = db.find::<passkey::Entity>().filter(passkey::Column::UserId.eq(id));
    let keys = db.find::<user_api_key::Entity>().filter(user_api_key::Column::UserId.eq(id));
    let codes = db
        .find::<recovery_code::Entity>()
        .filter(recovery_code::Column::UserId.eq(id))
        .filter(recovery_code::Column::UsedAt.is_null());
    let conn = db.conn();
    let identities = identities.order_by_asc(user_identity::Column::CreatedAt).all(conn).await?;
    let sessions = sessions.order_by_asc(session::Column::CreatedAt).all(conn).await?;
    let memberships = memberships.order_by_asc(membership::Column::CreatedAt).all(conn).await?;
    let records = records.order_by_asc(scim_resource::Column::CreatedAt).all(conn).await?;
    let factors = factors.order_by_asc(mfa_factor::Column::CreatedAt).all(conn).await?;
    let passkeys = passkeys.order_by_asc(passkey::Column::CreatedAt).all(conn).await?;
    let keys = keys.order_by_asc(user_api_key::Column::CreatedAt).all(conn).await?;
    let recovery_codes_remaining = codes.count(conn).await?;
    let consents = crate::areas::oauth_clients::consents::of_user(db, id).await?;
    let audit = audit_rows(db, &user).await?;
    Ok(UserExport {
        format: FORMAT,
        exported_at: crate::clock::now(),
        user: UserView::from(&user),
        identities: identities
            .into_iter()
            .map(|row| IdentityExport {
                id: row.id,
                provider: row.provider,
                subject: row.subject,
                email: row.email,
                created_at: row.created_at,
                last_sign_in_at: row.last_sign_in_at,
            })
            .collect(),
        sessions: sessions.iter().map(SessionView::from).collect(),
        memberships: memberships
            .into_iter()
            .map(|row| MembershipExport {
                organization_id: row.organization_id,
                role: row.role,
                created_at: row.created_at,
            })
            .collect(),
        consents,
        directory_records: records
            .into_iter()
            .map(|row| DirectoryRecordExport {
                directory_id: row.directory_id,
                id: row.id,
                active: row.active,
                attributes: row.attributes,
                created_at: row.created_at,
                updated_at: row.updated_at,
            })
            .collect(),
        second_factors: factors
            .into_iter()
            .map(|row| SecondFactorExport {
                id: row.id,
                kind: row.kind,
                status: row.status,
                created_at: row.created_at,
                confirmed_at: row.confirmed_at,
            })
            .collect(),
        passkeys: passkeys
            .into_iter()
            .map(|row| PasskeyExport {
                id: row.id,
                name: row.name,
                created_at: row.created_at,
                last_used_at: row.last_used_at,
            })
            .collect(),
        personal_keys: keys
            .into_iter()
            .map(|row| PersonalKeyExport {
                id: row.id,
                name: row.name,
                prefix: row.prefix,
                scopes: row.scopes,
                created_at: row.created_at,
                expires_at: row.expires_at,
                revoked_at: row.revoked_at,
            })
            .collect(),
        recovery_codes_remaining,
        audit,
    })
}

/// The audit rows about the user (`aggregate_id`), made by them
/// (`actor_id`), or sealed under their key or their address's.
async fn audit_rows(db: &impl TenantConn, user: &entity::user::Model) -> Result<Vec<AuditRow>, DbErr> {
    let sealed_for = |subject: Subject<'_>| {
        let id = subject.id(db.master_key(), db.application_id());
        // Canonical JSON: `"subject":"<id>"` appears exactly so.
        Expr::col(audit_event::Column::Data).like(format!("%\"subject\":\"{id}\"%"))
    };
    let theirs = Condition::any()
        .add(audit_event::Column::AggregateId.eq(user.id))
        .add(
            Condition::all()
                .add(audit_event::Column::ActorKind.eq(ActorKind::User.as_str()))
                .add(audit_event::Column::ActorId.eq(user.id.to_string())),
        )
        .add(sealed_for(Subject::User(user.id)))
        .add(sealed_for(Subject::Email(&user.email)));
    let rows =
        db.find::<audit_event::Entity>().filter(theirs).order_by_asc(audit_event::Column::Seq).all(db.conn()).await?;
    crate::audit::query::readable(db, rows).await
}
