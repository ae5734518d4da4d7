use sea_orm_migration::prelude::*;

/// Identity (OAuth) providers in each region: one row per application and
/// provider, its client secret sealed, listed by provider.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthProviders::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(OauthProviders::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(OauthProviders::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(OauthProviders::Provider).string().not_null())
                    .col(ColumnDef::new(OauthProviders::Enabled).boolean().not_null())
                    .col(ColumnDef::new(OauthProviders::ClientId).string().null())
                    .col(ColumnDef::new(OauthProviders::ClientSecretSealed).binary().null())
                    .col(ColumnDef::new(OauthProviders::Scopes).json().not_null())
                    .col(ColumnDef::new(OauthProviders::UseSharedDevCredentials).boolean().not_null())
                    .col(ColumnDef::new(OauthProviders::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthProviders::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // One row per provider, and the list's order:
        // `WHERE application_id = ? ORDER BY provider`.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("oauth_providers_provider")
                    .table(OauthProviders::Table)
                    .col(OauthProviders::ApplicationId)
                    .col(OauthProviders::Provider)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(OauthProviders::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum OauthProviders {
    Table,
    Id,
    ApplicationId,
    Provider,
    Enabled,
    ClientId,
    ClientSecretSealed,
    Scopes,
    UseSharedDevCredentials,
    CreatedAt,
    UpdatedAt,
}
