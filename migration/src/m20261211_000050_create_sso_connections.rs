use sea_orm_migration::prelude::*;

/// Enterprise SSO connections (regional): an organization's own OpenID
/// Provider, which its people at its verified domains sign in with.
/// - `sso_connections`: the provider's issuer and the endpoints its
///   discovery document named, the client's id and its secret (sealed to
///   the master key), the role a first sign-in grants (and whose grant it
///   is, when an owner set it from the dashboard), whether the
///   organization requires it (`sso_required`) of its domains' users, and
///   which claims hold the address and fill profile fields.
/// - `oauth_flows` gains what an SSO sign-in carries from the callback to
///   the exchange: the connection's organization and the sign-in's `amr`.
/// - `sessions` gains `amr`: how the session's user signed in, for its
///   access tokens (set by SSO sign-ins; null for the others).
///
/// The column additions are one batch on one connection (see migration 000042).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SsoConnections::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SsoConnections::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SsoConnections::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(SsoConnections::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(SsoConnections::Protocol).string().not_null())
                    .col(ColumnDef::new(SsoConnections::Name).string().not_null())
                    .col(ColumnDef::new(SsoConnections::Enabled).boolean().not_null())
                    .col(ColumnDef::new(SsoConnections::SsoRequired).boolean().not_null())
                    .col(ColumnDef::new(SsoConnections::DefaultRole).string().not_null())
                    .col(ColumnDef::new(SsoConnections::RoleGrantedBy).uuid().null())
                    .col(ColumnDef::new(SsoConnections::Issuer).string().not_null())
                    .col(ColumnDef::new(SsoConnections::ClientId).string().not_null())
                    .col(ColumnDef::new(SsoConnections::ClientSecretSealed).binary().not_null())
                    .col(ColumnDef::new(SsoConnections::Scopes).string().not_null())
                    .col(ColumnDef::new(SsoConnections::AuthorizationUrl).string().not_null())
                    .col(ColumnDef::new(SsoConnections::TokenUrl).string().not_null())
                    .col(ColumnDef::new(SsoConnections::JwksUrl).string().not_null())
                    .col(ColumnDef::new(SsoConnections::UserinfoUrl).string().null())
                    .col(ColumnDef::new(SsoConnections::AttributeMapping).json().not_null())
                    .col(ColumnDef::new(SsoConnections::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(SsoConnections::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("sso_connections_by_organization")
                    .table(SsoConnections::Table)
                    .col(SsoConnections::ApplicationId)
                    .col(SsoConnections::OrganizationId)
                    .to_owned(),
            )
            .await?;
        let statements = "ALTER TABLE oauth_flows ADD COLUMN organization_id uuid NULL; \
                          ALTER TABLE oauth_flows ADD COLUMN amr varchar NULL; \
                          ALTER TABLE sessions ADD COLUMN amr varchar NULL;";
        manager.get_connection().execute_unprepared(statements).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = "ALTER TABLE oauth_flows DROP COLUMN organization_id; \
                          ALTER TABLE oauth_flows DROP COLUMN amr; \
                          ALTER TABLE sessions DROP COLUMN amr;";
        manager.get_connection().execute_unprepared(statements).await?;
        manager.drop_table(Table::drop().table(SsoConnections::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum SsoConnections {
    Table,
    Id,
    ApplicationId,
    OrganizationId,
    Protocol,
    Name,
    Enabled,
    SsoRequired,
    DefaultRole,
    RoleGrantedBy,
    Issuer,
    ClientId,
    ClientSecretSealed,
    Scopes,
    AuthorizationUrl,
    TokenUrl,
    JwksUrl,
    UserinfoUrl,
    AttributeMapping,
    CreatedAt,
    UpdatedAt,
}
