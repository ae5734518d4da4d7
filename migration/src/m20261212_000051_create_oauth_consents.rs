use sea_orm_migration::prelude::*;

/// What a user allowed a third party's client of the application's OpenID
/// Provider (regional): one row per user and client, with the scopes
/// allowed so far. An authorization request that asks for no more is not
/// asked again; the user can withdraw it.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthConsents::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(OauthConsents::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(OauthConsents::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(OauthConsents::UserId).uuid().not_null())
                    .col(ColumnDef::new(OauthConsents::ClientId).uuid().not_null())
                    .col(ColumnDef::new(OauthConsents::Scope).string().not_null())
                    .col(ColumnDef::new(OauthConsents::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthConsents::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("oauth_consents_by_user_and_client")
                    .table(OauthConsents::Table)
                    .col(OauthConsents::ApplicationId)
                    .col(OauthConsents::UserId)
                    .col(OauthConsents::ClientId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(OauthConsents::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum OauthConsents {
    Table,
    Id,
    ApplicationId,
    UserId,
    ClientId,
    Scope,
    CreatedAt,
    UpdatedAt,
}
