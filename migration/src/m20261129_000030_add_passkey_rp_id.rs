use sea_orm_migration::prelude::*;

/// An application setting: the WebAuthn relying-party id of its passkeys (a
/// domain its allowed origins are on; null: passkeys are off).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::PasskeyRpId).string().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Applications::Table).drop_column(Applications::PasskeyRpId).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    PasskeyRpId,
}
