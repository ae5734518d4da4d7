use sea_orm_migration::prelude::*;

/// The audit chain's head: when a region move fenced the application here
/// (its copy to the new region began). No write of the application commits
/// in this region after that; the new region's copy is unfenced.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AuditHeads::Table)
                    .add_column(ColumnDef::new(AuditHeads::FencedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.alter_table(Table::alter().table(AuditHeads::Table).drop_column(AuditHeads::FencedAt).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum AuditHeads {
    Table,
    FencedAt,
}
