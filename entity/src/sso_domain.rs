use sea_orm::entity::prelude::*;

/// A domain an organization claims (regional); `verified` once a DNS TXT
/// record at `_gatehouse-challenge.<domain>` carries its token.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sso_domains")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub organization_id: Uuid,
    /// Lower-case ASCII (IDNA), no trailing dot.
    pub domain: String,
    /// Published by the claimant in DNS: not a secret.
    pub verification_token: String,
    /// `pending` or `verified`.
    pub status: String,
    /// Users who sign up with an email at the verified domain join the
    /// organization with this role; none: they do not.
    pub auto_join_role: Option<String>,
    /// The user who claimed the domain: an auto-join grants its role only
    /// while they may grant it. None: claimed before this was recorded.
    pub claimed_by: Option<Uuid>,
    pub created_at: DateTimeUtc,
    pub verified_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
