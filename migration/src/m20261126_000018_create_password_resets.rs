use sea_orm_migration::prelude::*;

/// Password resets in each region: one row per token sent, only its
/// SHA-256 kept, used once.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PasswordResets::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(PasswordResets::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(PasswordResets::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(PasswordResets::UserId).uuid().not_null())
                    .col(ColumnDef::new(PasswordResets::TokenHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(PasswordResets::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(PasswordResets::UsedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(PasswordResets::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // A user's unused tokens, superseded by a new one:
        // `WHERE application_id = ? AND user_id = ? AND used_at IS NULL`.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("password_resets_user")
                    .table(PasswordResets::Table)
                    .col(PasswordResets::ApplicationId)
                    .col(PasswordResets::UserId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(PasswordResets::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum PasswordResets {
    Table,
    Id,
    ApplicationId,
    UserId,
    TokenHash,
    ExpiresAt,
    UsedAt,
    CreatedAt,
}
