use sea_orm_migration::prelude::*;

/// The authorization-code flow of the application's OpenID Provider:
/// - `oauth_codes`: one row per code issued (only its SHA-256 kept), bound
///   to its client, redirect URI and PKCE challenge, used once; the session
///   its exchange opened is kept, so a second use can revoke it.
/// - `hosted_logins`: the hosted pages' sign-in cookie (only its SHA-256
///   kept), naming the session it stands for: single sign-on across the
///   application's clients while that session lives.
/// - `sessions.oauth_client_id` and `oauth_scope`: the client a session was
///   issued to, and what it was granted (null for the API's own sign-in).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthCodes::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(OauthCodes::CodeHash).binary().not_null().primary_key())
                    .col(ColumnDef::new(OauthCodes::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(OauthCodes::ClientId).uuid().not_null())
                    .col(ColumnDef::new(OauthCodes::LoginSessionId).uuid().not_null())
                    .col(ColumnDef::new(OauthCodes::UserId).uuid().not_null())
                    .col(ColumnDef::new(OauthCodes::RedirectUri).string().not_null())
                    .col(ColumnDef::new(OauthCodes::Scope).string().not_null())
                    .col(ColumnDef::new(OauthCodes::Nonce).string().null())
                    .col(ColumnDef::new(OauthCodes::CodeChallenge).string().null())
                    .col(ColumnDef::new(OauthCodes::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthCodes::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(OauthCodes::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(OauthCodes::IssuedSessionId).uuid().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("oauth_codes_expiry")
                    .table(OauthCodes::Table)
                    .col(OauthCodes::ApplicationId)
                    .col(OauthCodes::ExpiresAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(HostedLogins::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(HostedLogins::CookieHash).binary().not_null().primary_key())
                    .col(ColumnDef::new(HostedLogins::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(HostedLogins::SessionId).uuid().not_null())
                    .col(ColumnDef::new(HostedLogins::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // Old cookies go as new ones are made, by age within the application.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("hosted_logins_age")
                    .table(HostedLogins::Table)
                    .col(HostedLogins::ApplicationId)
                    .col(HostedLogins::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::OauthClientId).uuid().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::OauthScope).string().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(HostedLogins::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(OauthCodes::Table).to_owned()).await?;
        manager.alter_table(Table::alter().table(Sessions::Table).drop_column(Sessions::OauthScope).to_owned()).await?;
        manager.alter_table(Table::alter().table(Sessions::Table).drop_column(Sessions::OauthClientId).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum OauthCodes {
    Table,
    CodeHash,
    ApplicationId,
    ClientId,
    LoginSessionId,
    UserId,
    RedirectUri,
    Scope,
    Nonce,
    CodeChallenge,
    CreatedAt,
    ExpiresAt,
    UsedAt,
    IssuedSessionId,
}

#[derive(DeriveIden)]
enum HostedLogins {
    Table,
    CookieHash,
    ApplicationId,
    SessionId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    OauthClientId,
    OauthScope,
}
