use sea_orm_migration::prelude::*;

/// Sign-in with an identity provider, in each region: the flows in
/// progress (a `state` hashed, the PKCE verifier sealed, then the one-time
/// code hashed) and the identities linked to users.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(UserIdentities::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(UserIdentities::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(UserIdentities::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(UserIdentities::UserId).uuid().not_null())
                    .col(ColumnDef::new(UserIdentities::Provider).string().not_null())
                    .col(ColumnDef::new(UserIdentities::Subject).string().not_null())
                    .col(ColumnDef::new(UserIdentities::Email).string().null())
                    .col(ColumnDef::new(UserIdentities::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(UserIdentities::LastSignInAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        // One user per identity: `WHERE application_id = ? AND provider = ? AND subject = ?`.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("user_identities_subject")
                    .table(UserIdentities::Table)
                    .col(UserIdentities::ApplicationId)
                    .col(UserIdentities::Provider)
                    .col(UserIdentities::Subject)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // A user's identities (listing, deletion with the user).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("user_identities_user")
                    .table(UserIdentities::Table)
                    .col(UserIdentities::ApplicationId)
                    .col(UserIdentities::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OauthFlows::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(OauthFlows::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(OauthFlows::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(OauthFlows::Provider).string().not_null())
                    .col(ColumnDef::new(OauthFlows::StateHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(OauthFlows::CodeVerifierSealed).binary().not_null())
                    .col(ColumnDef::new(OauthFlows::Nonce).string().not_null())
                    .col(ColumnDef::new(OauthFlows::RedirectUri).string().not_null())
                    .col(ColumnDef::new(OauthFlows::ClientState).string().null())
                    .col(ColumnDef::new(OauthFlows::ClientCodeChallenge).string().null())
                    .col(ColumnDef::new(OauthFlows::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthFlows::CalledBackAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(OauthFlows::UserId).uuid().null())
                    .col(ColumnDef::new(OauthFlows::CodeHash).binary().null().unique_key())
                    .col(ColumnDef::new(OauthFlows::CodeExpiresAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(OauthFlows::ExchangedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(OauthFlows::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // Pruning the finished and expired: `WHERE application_id = ? AND expires_at < ?`.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("oauth_flows_expiry")
                    .table(OauthFlows::Table)
                    .col(OauthFlows::ApplicationId)
                    .col(OauthFlows::ExpiresAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(OauthFlows::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(UserIdentities::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum UserIdentities {
    Table,
    Id,
    ApplicationId,
    UserId,
    Provider,
    Subject,
    Email,
    CreatedAt,
    LastSignInAt,
}

#[derive(DeriveIden)]
enum OauthFlows {
    Table,
    Id,
    ApplicationId,
    Provider,
    StateHash,
    CodeVerifierSealed,
    Nonce,
    RedirectUri,
    ClientState,
    ClientCodeChallenge,
    ExpiresAt,
    CalledBackAt,
    UserId,
    CodeHash,
    CodeExpiresAt,
    ExchangedAt,
    CreatedAt,
}
