use sea_orm_migration::prelude::*;

/// SAML 2.0 connections beside the OpenID ones: the identity provider's
/// metadata as last read (its entity ID, its single sign-on endpoint and its
/// signing certificates), and the URL it is read from, when it was given
/// one (reading it again rotates the certificates).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(SsoConnections::Table)
                    .add_column(ColumnDef::new(SsoConnections::IdpMetadata).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(SsoConnections::Table)
                    .add_column(ColumnDef::new(SsoConnections::IdpMetadataUrl).string().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [SsoConnections::IdpMetadata, SsoConnections::IdpMetadataUrl] {
            manager.alter_table(Table::alter().table(SsoConnections::Table).drop_column(column).to_owned()).await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum SsoConnections {
    Table,
    IdpMetadata,
    IdpMetadataUrl,
}
