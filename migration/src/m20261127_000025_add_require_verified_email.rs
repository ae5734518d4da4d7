use sea_orm_migration::prelude::*;

/// An application setting: sign-in refuses a user whose email is not
/// verified (403 `email_not_verified`, with a fresh code sent).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::RequireVerifiedEmail).boolean().not_null().default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(Applications::Table).drop_column(Applications::RequireVerifiedEmail).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    RequireVerifiedEmail,
}
