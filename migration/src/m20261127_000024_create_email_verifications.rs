use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::index;

/// Email verification in each region: when a user's email was proven, a
/// session's copy of it (its tokens' `email_verified`, with no query on
/// refresh), and the codes sent (only their keyed hashes kept).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(ColumnDef::new(Users::EmailVerifiedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Sessions::Table)
                    .add_column(ColumnDef::new(Sessions::EmailVerified).boolean().not_null().default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(EmailVerifications::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(EmailVerifications::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(EmailVerifications::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(EmailVerifications::UserId).uuid().not_null())
                    .col(ColumnDef::new(EmailVerifications::CodeHash).binary().not_null())
                    .col(ColumnDef::new(EmailVerifications::Attempts).integer().not_null())
                    .col(ColumnDef::new(EmailVerifications::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(EmailVerifications::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(EmailVerifications::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "email_verifications_user",
            EmailVerifications::Table,
            [EmailVerifications::ApplicationId, EmailVerifications::UserId],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(EmailVerifications::Table).to_owned()).await?;
        manager
            .alter_table(Table::alter().table(Sessions::Table).drop_column(Sessions::EmailVerified).to_owned())
            .await?;
        manager.alter_table(Table::alter().table(Users::Table).drop_column(Users::EmailVerifiedAt).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    EmailVerifiedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    EmailVerified,
}

#[derive(DeriveIden, Clone, Copy)]
enum EmailVerifications {
    Table,
    Id,
    ApplicationId,
    UserId,
    CodeHash,
    Attempts,
    ExpiresAt,
    UsedAt,
    CreatedAt,
}
