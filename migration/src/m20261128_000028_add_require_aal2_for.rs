use sea_orm_migration::prelude::*;

/// An application setting: the end-user actions that need a session at
/// `aal2` (JSON array of action names; null: none).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::RequireAal2For).json().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Applications::Table).drop_column(Applications::RequireAal2For).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    RequireAal2For,
}
