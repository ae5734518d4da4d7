use sea_orm_migration::prelude::*;

/// An application setting: how long a just-rotated refresh token may be
/// presented again for a new pair instead of revoking the session.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(
                        ColumnDef::new(Applications::RefreshReuseIntervalSeconds).integer().not_null().default(0),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .drop_column(Applications::RefreshReuseIntervalSeconds)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    RefreshReuseIntervalSeconds,
}
