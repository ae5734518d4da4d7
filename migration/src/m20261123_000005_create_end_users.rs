use sea_orm_migration::prelude::*;

/// End users, their sessions and refresh tokens, personal API keys, and the
/// application's token signing keys.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(ColumnDef::new(Users::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Users::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Users::Email).string().not_null())
                    .col(ColumnDef::new(Users::PasswordHash).string().null())
                    .col(ColumnDef::new(Users::Profile).json().not_null())
                    .col(ColumnDef::new(Users::LastSignInAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Users::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Users::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(manager, "users_application_id_email", Users::Table, [Users::ApplicationId, Users::Email]).await?;

        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(ColumnDef::new(Sessions::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Sessions::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Sessions::UserId).uuid().not_null())
                    .col(ColumnDef::new(Sessions::Aal).string().not_null())
                    .col(ColumnDef::new(Sessions::ActiveOrganizationId).uuid().null())
                    .col(ColumnDef::new(Sessions::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Sessions::RefreshedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Sessions::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Sessions::RevokedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Sessions::RevokedReason).string().null())
                    .to_owned(),
            )
            .await?;
        index(manager, "sessions_application_id_user_id", Sessions::Table, [Sessions::ApplicationId, Sessions::UserId])
            .await?;

        // Every refresh token a session was ever given, by hash: the current
        // one has `rotated_at` null; presenting a rotated one is reuse.
        manager
            .create_table(
                Table::create()
                    .table(RefreshTokens::Table)
                    .col(ColumnDef::new(RefreshTokens::TokenHash).binary().not_null().primary_key())
                    .col(ColumnDef::new(RefreshTokens::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(RefreshTokens::SessionId).uuid().not_null())
                    .col(ColumnDef::new(RefreshTokens::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(RefreshTokens::RotatedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        index(manager, "refresh_tokens_session_id", RefreshTokens::Table, [RefreshTokens::SessionId]).await?;

        manager
            .create_table(
                Table::create()
                    .table(SigningKeys::Table)
                    .col(ColumnDef::new(SigningKeys::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SigningKeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(SigningKeys::PublicKey).binary().not_null())
                    .col(ColumnDef::new(SigningKeys::PrivateKeySealed).binary().not_null())
                    .col(ColumnDef::new(SigningKeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(SigningKeys::RetiredAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        index(manager, "signing_keys_application_id", SigningKeys::Table, [SigningKeys::ApplicationId]).await?;
        // At most one signing key is current per application.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX signing_keys_current ON signing_keys (application_id) WHERE retired_at IS NULL",
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(UserApiKeys::Table)
                    .col(ColumnDef::new(UserApiKeys::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(UserApiKeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(UserApiKeys::UserId).uuid().not_null())
                    .col(ColumnDef::new(UserApiKeys::Name).string().not_null())
                    .col(ColumnDef::new(UserApiKeys::Prefix).string().not_null())
                    .col(ColumnDef::new(UserApiKeys::SecretHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(UserApiKeys::Scopes).json().not_null())
                    .col(ColumnDef::new(UserApiKeys::ExpiresAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(UserApiKeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(UserApiKeys::LastUsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(UserApiKeys::RevokedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "user_api_keys_application_id_user_id",
            UserApiKeys::Table,
            [UserApiKeys::ApplicationId, UserApiKeys::UserId],
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            UserApiKeys::Table.into_iden(),
            SigningKeys::Table.into_iden(),
            RefreshTokens::Table.into_iden(),
            Sessions::Table.into_iden(),
            Users::Table.into_iden(),
        ] {
            manager.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}

pub(crate) async fn index<T: IntoIden + Copy + 'static, const N: usize>(
    manager: &SchemaManager<'_>,
    name: &str,
    table: T,
    columns: [T; N],
) -> Result<(), DbErr> {
    let mut statement = Index::create().name(name).table(table).to_owned();
    for column in columns {
        statement.col(column);
    }
    manager.create_index(statement).await
}

pub(crate) async fn unique<T: IntoIden + Copy + 'static, const N: usize>(
    manager: &SchemaManager<'_>,
    name: &str,
    table: T,
    columns: [T; N],
) -> Result<(), DbErr> {
    let mut statement = Index::create().name(name).table(table).unique().to_owned();
    for column in columns {
        statement.col(column);
    }
    manager.create_index(statement).await
}

#[derive(DeriveIden, Clone, Copy)]
enum Users {
    Table,
    Id,
    ApplicationId,
    Email,
    PasswordHash,
    Profile,
    LastSignInAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Sessions {
    Table,
    Id,
    ApplicationId,
    UserId,
    Aal,
    ActiveOrganizationId,
    CreatedAt,
    RefreshedAt,
    ExpiresAt,
    RevokedAt,
    RevokedReason,
}

#[derive(DeriveIden, Clone, Copy)]
enum RefreshTokens {
    Table,
    TokenHash,
    ApplicationId,
    SessionId,
    CreatedAt,
    RotatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum SigningKeys {
    Table,
    Id,
    ApplicationId,
    PublicKey,
    PrivateKeySealed,
    CreatedAt,
    RetiredAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum UserApiKeys {
    Table,
    Id,
    ApplicationId,
    UserId,
    Name,
    Prefix,
    SecretHash,
    Scopes,
    ExpiresAt,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}
