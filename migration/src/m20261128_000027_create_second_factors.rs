use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::{index, unique};

/// Second factors in each region: a user's TOTP factor (its secret sealed,
/// the last time step it accepted), the recovery codes (keyed hashes), and
/// the challenges a password sign-in answers when the user has a factor;
/// and on sessions, when they last proved a second factor (`aal2_at`).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::Aal2At).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MfaFactors::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(MfaFactors::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(MfaFactors::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(MfaFactors::UserId).uuid().not_null())
                    .col(ColumnDef::new(MfaFactors::Kind).string().not_null())
                    .col(ColumnDef::new(MfaFactors::SecretSealed).binary().not_null())
                    .col(ColumnDef::new(MfaFactors::Status).string().not_null())
                    .col(ColumnDef::new(MfaFactors::LastUsedStep).big_integer().null())
                    .col(ColumnDef::new(MfaFactors::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(MfaFactors::ConfirmedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "mfa_factors_user_kind",
            MfaFactors::Table,
            [MfaFactors::ApplicationId, MfaFactors::UserId, MfaFactors::Kind],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(RecoveryCodes::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(RecoveryCodes::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(RecoveryCodes::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(RecoveryCodes::UserId).uuid().not_null())
                    .col(ColumnDef::new(RecoveryCodes::CodeHash).binary().not_null())
                    .col(ColumnDef::new(RecoveryCodes::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(RecoveryCodes::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "recovery_codes_user",
            RecoveryCodes::Table,
            [RecoveryCodes::ApplicationId, RecoveryCodes::UserId],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(MfaChallenges::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(MfaChallenges::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(MfaChallenges::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(MfaChallenges::UserId).uuid().not_null())
                    .col(ColumnDef::new(MfaChallenges::TokenHash).binary().not_null())
                    .col(ColumnDef::new(MfaChallenges::Method).string().not_null())
                    .col(ColumnDef::new(MfaChallenges::Provider).string().null())
                    .col(ColumnDef::new(MfaChallenges::Attempts).integer().not_null())
                    .col(ColumnDef::new(MfaChallenges::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(MfaChallenges::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(MfaChallenges::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        unique(
            manager,
            "mfa_challenges_token",
            MfaChallenges::Table,
            [MfaChallenges::ApplicationId, MfaChallenges::TokenHash],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(MfaChallenges::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(RecoveryCodes::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(MfaFactors::Table).to_owned()).await?;
        manager.alter_table(Table::alter().table(Sessions::Table).drop_column(Sessions::Aal2At).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Aal2At,
}

#[derive(DeriveIden, Clone, Copy)]
enum MfaFactors {
    Table,
    Id,
    ApplicationId,
    UserId,
    Kind,
    SecretSealed,
    Status,
    LastUsedStep,
    CreatedAt,
    ConfirmedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum RecoveryCodes {
    Table,
    Id,
    ApplicationId,
    UserId,
    CodeHash,
    UsedAt,
    CreatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum MfaChallenges {
    Table,
    Id,
    ApplicationId,
    UserId,
    TokenHash,
    Method,
    Provider,
    Attempts,
    ExpiresAt,
    UsedAt,
    CreatedAt,
}
