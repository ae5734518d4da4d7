use sea_orm_migration::prelude::*;

/// An application setting: its allowed origins may show the hosted sign-in
/// pages in a frame (their `frame-ancestors`); off, no page may.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::HostedPagesInFrames).boolean().not_null().default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(Applications::Table).drop_column(Applications::HostedPagesInFrames).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    HostedPagesInFrames,
}
