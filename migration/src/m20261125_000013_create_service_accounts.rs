use sea_orm_migration::prelude::*;

/// Service accounts (operation 14) and their keys, `sak_…`, stored like
/// every key: SHA-256 of the secret and its first characters. Each list's
/// index is in the order it answers (newest first, id as tiebreak).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ServiceAccounts::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ServiceAccounts::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ServiceAccounts::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ServiceAccounts::Name).string().not_null())
                    .col(ColumnDef::new(ServiceAccounts::Description).string().null())
                    .col(ColumnDef::new(ServiceAccounts::Enabled).boolean().not_null())
                    .col(ColumnDef::new(ServiceAccounts::Scopes).json().not_null())
                    .col(ColumnDef::new(ServiceAccounts::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ServiceAccounts::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("service_accounts_list")
                    .table(ServiceAccounts::Table)
                    .col(ServiceAccounts::ApplicationId)
                    .col(ServiceAccounts::CreatedAt)
                    .col(ServiceAccounts::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ServiceAccountKeys::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ServiceAccountKeys::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ServiceAccountKeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ServiceAccountKeys::ServiceAccountId).uuid().not_null())
                    .col(ColumnDef::new(ServiceAccountKeys::Name).string().not_null())
                    .col(ColumnDef::new(ServiceAccountKeys::Prefix).string().not_null())
                    .col(ColumnDef::new(ServiceAccountKeys::SecretHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(ServiceAccountKeys::ExpiresAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(ServiceAccountKeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(ServiceAccountKeys::LastUsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(ServiceAccountKeys::RevokedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("service_account_keys_list")
                    .table(ServiceAccountKeys::Table)
                    .col(ServiceAccountKeys::ApplicationId)
                    .col(ServiceAccountKeys::ServiceAccountId)
                    .col(ServiceAccountKeys::CreatedAt)
                    .col(ServiceAccountKeys::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ServiceAccountKeys::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ServiceAccounts::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum ServiceAccounts {
    Table,
    Id,
    ApplicationId,
    Name,
    Description,
    Enabled,
    Scopes,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ServiceAccountKeys {
    Table,
    Id,
    ApplicationId,
    ServiceAccountId,
    Name,
    Prefix,
    SecretHash,
    ExpiresAt,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}
