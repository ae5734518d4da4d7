use sea_orm_migration::prelude::*;

/// SAML 2.0 connections beside the OpenID ones (regional):
/// - the identity provider's metadata as last read (its entity ID, its
///   single sign-on endpoint and its signing certificates), and the URL it
///   is read from, when it was given one (reading it again rotates the
///   certificates);
/// - our own key for the connection (sealed) and its self-signed
///   certificate: it signs requests the IdP wants signed, and decrypts
///   assertions when the connection asks for them encrypted;
/// - IdP-initiated sign-in, off unless enabled, with where it lands;
/// - `saml_assertions`: the assertion IDs an IdP-initiated sign-in used,
///   until they expire, so that each is used once.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            ColumnDef::new(SsoConnections::IdpMetadata).text().null().to_owned(),
            ColumnDef::new(SsoConnections::IdpMetadataUrl).string().null().to_owned(),
            ColumnDef::new(SsoConnections::SpKeySealed).binary().null().to_owned(),
            ColumnDef::new(SsoConnections::SpCertificate).text().null().to_owned(),
            ColumnDef::new(SsoConnections::EncryptAssertions).boolean().not_null().default(false).to_owned(),
            ColumnDef::new(SsoConnections::IdpInitiated).boolean().not_null().default(false).to_owned(),
            ColumnDef::new(SsoConnections::IdpInitiatedRedirectUri).string().null().to_owned(),
        ];
        // One column per statement: SQLite adds them one at a time.
        for mut column in columns {
            manager.alter_table(Table::alter().table(SsoConnections::Table).add_column(&mut column).to_owned()).await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(SamlAssertions::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SamlAssertions::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SamlAssertions::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(SamlAssertions::ConnectionId).uuid().not_null())
                    .col(ColumnDef::new(SamlAssertions::AssertionId).string().not_null())
                    .col(ColumnDef::new(SamlAssertions::ExpiresAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("saml_assertions_once")
                    .table(SamlAssertions::Table)
                    .col(SamlAssertions::ApplicationId)
                    .col(SamlAssertions::ConnectionId)
                    .col(SamlAssertions::AssertionId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(SamlAssertions::Table).to_owned()).await?;
        let columns = [
            SsoConnections::IdpMetadata,
            SsoConnections::IdpMetadataUrl,
            SsoConnections::SpKeySealed,
            SsoConnections::SpCertificate,
            SsoConnections::EncryptAssertions,
            SsoConnections::IdpInitiated,
            SsoConnections::IdpInitiatedRedirectUri,
        ];
        for column in columns {
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
    SpKeySealed,
    SpCertificate,
    EncryptAssertions,
    IdpInitiated,
    IdpInitiatedRedirectUri,
}

#[derive(DeriveIden)]
enum SamlAssertions {
    Table,
    Id,
    ApplicationId,
    ConnectionId,
    AssertionId,
    ExpiresAt,
}
