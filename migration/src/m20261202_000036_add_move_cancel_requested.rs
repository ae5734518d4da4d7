use sea_orm_migration::prelude::*;

/// The region-move journal: when an operator asked to cancel a move
/// (`gatehouse moves cancel`); the node running it rolls it back.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(RegionMoves::Table)
                    .add_column(ColumnDef::new(RegionMoves::CancelRequestedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(RegionMoves::Table).drop_column(RegionMoves::CancelRequestedAt).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum RegionMoves {
    Table,
    CancelRequestedAt,
}
