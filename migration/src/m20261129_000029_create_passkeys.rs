use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::{index, unique};

/// Passkeys in each region: a user's WebAuthn credentials (the public key,
/// signature counter and flags as `webauthn-rs` keeps them), and the
/// ceremonies in flight (the server-side state of one registration or
/// authentication, under the SHA-256 of the handle the client holds).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Passkeys::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Passkeys::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Passkeys::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Passkeys::UserId).uuid().not_null())
                    .col(ColumnDef::new(Passkeys::CredentialId).binary().not_null())
                    .col(ColumnDef::new(Passkeys::Credential).text().not_null())
                    .col(ColumnDef::new(Passkeys::Name).string().not_null())
                    .col(ColumnDef::new(Passkeys::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Passkeys::LastUsedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        unique(manager, "passkeys_credential", Passkeys::Table, [Passkeys::ApplicationId, Passkeys::CredentialId])
            .await?;
        index(manager, "passkeys_user", Passkeys::Table, [Passkeys::ApplicationId, Passkeys::UserId]).await?;
        manager
            .create_table(
                Table::create()
                    .table(PasskeyCeremonies::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(PasskeyCeremonies::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(PasskeyCeremonies::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(PasskeyCeremonies::UserId).uuid().null())
                    .col(ColumnDef::new(PasskeyCeremonies::Purpose).string().not_null())
                    .col(ColumnDef::new(PasskeyCeremonies::TokenHash).binary().not_null())
                    .col(ColumnDef::new(PasskeyCeremonies::State).text().not_null())
                    .col(ColumnDef::new(PasskeyCeremonies::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(PasskeyCeremonies::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(PasskeyCeremonies::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "passkey_ceremonies_token",
            PasskeyCeremonies::Table,
            [PasskeyCeremonies::ApplicationId, PasskeyCeremonies::TokenHash],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(PasskeyCeremonies::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Passkeys::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum Passkeys {
    Table,
    Id,
    ApplicationId,
    UserId,
    CredentialId,
    Credential,
    Name,
    CreatedAt,
    LastUsedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum PasskeyCeremonies {
    Table,
    Id,
    ApplicationId,
    UserId,
    Purpose,
    TokenHash,
    State,
    ExpiresAt,
    UsedAt,
    CreatedAt,
}
