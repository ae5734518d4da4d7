use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::{index, unique};

/// The profile-field schema and the hooks called during sign-up.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProfileFields::Table)
                    .col(ColumnDef::new(ProfileFields::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ProfileFields::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ProfileFields::Key).string().not_null())
                    .col(ColumnDef::new(ProfileFields::Label).string().not_null())
                    .col(ColumnDef::new(ProfileFields::FieldType).string().not_null())
                    .col(ColumnDef::new(ProfileFields::Options).json().null())
                    .col(ColumnDef::new(ProfileFields::Position).integer().not_null())
                    .col(ColumnDef::new(ProfileFields::Required).boolean().not_null())
                    .col(ColumnDef::new(ProfileFields::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ProfileFields::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "profile_fields_application_id_key",
            ProfileFields::Table,
            [ProfileFields::ApplicationId, ProfileFields::Key],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(Hooks::Table)
                    .col(ColumnDef::new(Hooks::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Hooks::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Hooks::Point).string().not_null())
                    .col(ColumnDef::new(Hooks::Url).string_len(2048).not_null())
                    .col(ColumnDef::new(Hooks::Description).string_len(1024).null())
                    .col(ColumnDef::new(Hooks::Enabled).boolean().not_null())
                    .col(ColumnDef::new(Hooks::FailOpen).boolean().not_null())
                    .col(ColumnDef::new(Hooks::TimeoutMs).integer().not_null())
                    .col(ColumnDef::new(Hooks::SecretSealed).binary().not_null())
                    .col(ColumnDef::new(Hooks::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Hooks::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        index(manager, "hooks_application_id", Hooks::Table, [Hooks::ApplicationId]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Hooks::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ProfileFields::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum ProfileFields {
    Table,
    Id,
    ApplicationId,
    Key,
    Label,
    FieldType,
    Options,
    Position,
    Required,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Hooks {
    Table,
    Id,
    ApplicationId,
    Point,
    Url,
    Description,
    Enabled,
    FailOpen,
    TimeoutMs,
    SecretSealed,
    CreatedAt,
    UpdatedAt,
}
