use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::{index, unique};

/// Organizations and their memberships.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Organizations::Table)
                    .col(ColumnDef::new(Organizations::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Organizations::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Organizations::Name).string().not_null())
                    .col(ColumnDef::new(Organizations::Slug).string().not_null())
                    .col(ColumnDef::new(Organizations::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Organizations::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "organizations_application_id_slug",
            Organizations::Table,
            [Organizations::ApplicationId, Organizations::Slug],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(Memberships::Table)
                    .col(ColumnDef::new(Memberships::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Memberships::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(Memberships::UserId).uuid().not_null())
                    .col(ColumnDef::new(Memberships::Role).string().not_null())
                    .col(ColumnDef::new(Memberships::CreatedAt).timestamp_with_time_zone().not_null())
                    .primary_key(Index::create().col(Memberships::OrganizationId).col(Memberships::UserId))
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "memberships_application_id_user_id",
            Memberships::Table,
            [Memberships::ApplicationId, Memberships::UserId],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Memberships::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Organizations::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum Organizations {
    Table,
    Id,
    ApplicationId,
    Name,
    Slug,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Memberships {
    Table,
    ApplicationId,
    OrganizationId,
    UserId,
    Role,
    CreatedAt,
}
