use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::unique;

/// Entitlements in each region: features with their defaults, plans that
/// grant values, an organization's plan, and its overrides.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Features::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Features::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Features::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Features::Key).string().not_null())
                    .col(ColumnDef::new(Features::Kind).string().not_null())
                    .col(ColumnDef::new(Features::DefaultValue).json().not_null())
                    .col(ColumnDef::new(Features::Description).string().null())
                    .col(ColumnDef::new(Features::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Features::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(manager, "features_application_id_key", Features::Table, [Features::ApplicationId, Features::Key])
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Plans::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Plans::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Plans::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Plans::Key).string().not_null())
                    .col(ColumnDef::new(Plans::Name).string().not_null())
                    .col(ColumnDef::new(Plans::Grants).json().not_null())
                    .col(ColumnDef::new(Plans::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Plans::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(manager, "plans_application_id_key", Plans::Table, [Plans::ApplicationId, Plans::Key]).await?;
        manager
            .create_table(
                Table::create()
                    .table(EntitlementOverrides::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(EntitlementOverrides::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(EntitlementOverrides::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(EntitlementOverrides::FeatureKey).string().not_null())
                    .col(ColumnDef::new(EntitlementOverrides::Value).json().not_null())
                    .col(ColumnDef::new(EntitlementOverrides::UpdatedAt).timestamp_with_time_zone().not_null())
                    .primary_key(
                        Index::create().col(EntitlementOverrides::OrganizationId).col(EntitlementOverrides::FeatureKey),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Organizations::Table)
                    .add_column(ColumnDef::new(Organizations::PlanKey).string().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Organizations::Table).drop_column(Organizations::PlanKey).to_owned())
            .await?;
        manager.drop_table(Table::drop().table(EntitlementOverrides::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Plans::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Features::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum Features {
    Table,
    Id,
    ApplicationId,
    Key,
    Kind,
    DefaultValue,
    Description,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Plans {
    Table,
    Id,
    ApplicationId,
    Key,
    Name,
    Grants,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum EntitlementOverrides {
    Table,
    ApplicationId,
    OrganizationId,
    FeatureKey,
    Value,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Organizations {
    Table,
    PlanKey,
}
