use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::{index, unique};

/// SSO domains in each region: a domain an organization claims, proven by
/// a DNS TXT record.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SsoDomains::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SsoDomains::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SsoDomains::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(SsoDomains::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(SsoDomains::Domain).string().not_null())
                    .col(ColumnDef::new(SsoDomains::VerificationToken).string().not_null())
                    .col(ColumnDef::new(SsoDomains::Status).string().not_null())
                    .col(ColumnDef::new(SsoDomains::AutoJoinRole).string().null())
                    .col(ColumnDef::new(SsoDomains::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(SsoDomains::VerifiedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "sso_domains_organization_domain",
            SsoDomains::Table,
            [SsoDomains::ApplicationId, SsoDomains::OrganizationId, SsoDomains::Domain],
        )
        .await?;
        // A sign-up's domain, and who else claimed one: `WHERE application_id = ? AND domain = ?`.
        index(manager, "sso_domains_domain", SsoDomains::Table, [SsoDomains::ApplicationId, SsoDomains::Domain]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(SsoDomains::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum SsoDomains {
    Table,
    Id,
    ApplicationId,
    OrganizationId,
    Domain,
    VerificationToken,
    Status,
    AutoJoinRole,
    CreatedAt,
    VerifiedAt,
}
