use sea_orm_migration::prelude::*;

/// The region-move journal (catalog): one row per application, the step its
/// latest move reached and the lease of the node running it; and on the
/// application, the region it is moving to while its requests are held.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Applications::Table)
                    .add_column(ColumnDef::new(Applications::MovingTo).string())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(RegionMoves::Table)
                    .col(ColumnDef::new(RegionMoves::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(RegionMoves::FromRegion).string().not_null())
                    .col(ColumnDef::new(RegionMoves::ToRegion).string().not_null())
                    .col(ColumnDef::new(RegionMoves::Step).string().not_null())
                    .col(ColumnDef::new(RegionMoves::LeaseOwner).uuid())
                    .col(ColumnDef::new(RegionMoves::LeaseExpiresAt).timestamp_with_time_zone())
                    .col(ColumnDef::new(RegionMoves::ActorKind).string().not_null())
                    .col(ColumnDef::new(RegionMoves::ActorId).string())
                    .col(ColumnDef::new(RegionMoves::RowsCopied).big_integer().not_null().default(0))
                    .col(ColumnDef::new(RegionMoves::StartedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(RegionMoves::UpdatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(RegionMoves::FinishedAt).timestamp_with_time_zone())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(RegionMoves::Table).to_owned()).await?;
        manager
            .alter_table(Table::alter().table(Applications::Table).drop_column(Applications::MovingTo).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    MovingTo,
}

#[derive(DeriveIden)]
enum RegionMoves {
    Table,
    ApplicationId,
    FromRegion,
    ToRegion,
    Step,
    LeaseOwner,
    LeaseExpiresAt,
    ActorKind,
    ActorId,
    RowsCopied,
    StartedAt,
    UpdatedAt,
    FinishedAt,
}
