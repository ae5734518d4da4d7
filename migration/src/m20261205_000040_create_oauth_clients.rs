use sea_orm_migration::prelude::*;

/// The application's OAuth clients: the relying parties that sign their
/// users in through Gatehouse as an OpenID Provider. A confidential
/// client's secret is stored as its SHA-256 (it is random, 190 bits) with
/// its first characters for display; a public client has none.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthClients::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(OauthClients::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(OauthClients::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(OauthClients::Name).string().not_null())
                    .col(ColumnDef::new(OauthClients::ClientType).string().not_null())
                    .col(ColumnDef::new(OauthClients::RedirectUris).json().not_null())
                    .col(ColumnDef::new(OauthClients::PostLogoutRedirectUris).json().not_null())
                    .col(ColumnDef::new(OauthClients::GrantTypes).json().not_null())
                    .col(ColumnDef::new(OauthClients::Scopes).json().not_null())
                    .col(ColumnDef::new(OauthClients::FirstParty).boolean().not_null())
                    .col(ColumnDef::new(OauthClients::IdTokenSignedResponseAlg).string().not_null())
                    .col(ColumnDef::new(OauthClients::SecretHash).binary().null())
                    .col(ColumnDef::new(OauthClients::SecretPrefix).string().null())
                    .col(ColumnDef::new(OauthClients::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthClients::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("oauth_clients_list")
                    .table(OauthClients::Table)
                    .col(OauthClients::ApplicationId)
                    .col(OauthClients::CreatedAt)
                    .col(OauthClients::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(OauthClients::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum OauthClients {
    Table,
    Id,
    ApplicationId,
    Name,
    ClientType,
    RedirectUris,
    PostLogoutRedirectUris,
    GrantTypes,
    Scopes,
    FirstParty,
    IdTokenSignedResponseAlg,
    SecretHash,
    SecretPrefix,
    CreatedAt,
    UpdatedAt,
}
