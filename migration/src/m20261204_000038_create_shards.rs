use sea_orm_migration::prelude::*;

/// Shards as data: the shards added to a region beyond its first (whose
/// database is the region's configured `database_url`), each with its
/// database URL sealed under the master key; which shard of its region
/// holds an application (null: the region's first); and the shards a move
/// goes from and to (null: the regions' first).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Shards::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Shards::Name).string().not_null().primary_key())
                    .col(ColumnDef::new(Shards::Region).string().not_null())
                    .col(ColumnDef::new(Shards::DatabaseUrlSealed).binary().not_null())
                    .col(ColumnDef::new(Shards::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // SQLite alters one column per statement.
        for column in [Applications::Shard, Applications::MovingToShard] {
            let added = ColumnDef::new(column).string().null().to_owned();
            manager.alter_table(Table::alter().table(Applications::Table).add_column(added).to_owned()).await?;
        }
        for column in [RegionMoves::FromShard, RegionMoves::ToShard] {
            let added = ColumnDef::new(column).string().null().to_owned();
            manager.alter_table(Table::alter().table(RegionMoves::Table).add_column(added).to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [RegionMoves::FromShard, RegionMoves::ToShard] {
            manager.alter_table(Table::alter().table(RegionMoves::Table).drop_column(column).to_owned()).await?;
        }
        for column in [Applications::Shard, Applications::MovingToShard] {
            manager.alter_table(Table::alter().table(Applications::Table).drop_column(column).to_owned()).await?;
        }
        manager.drop_table(Table::drop().table(Shards::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Shards {
    Table,
    Name,
    Region,
    DatabaseUrlSealed,
    CreatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Applications {
    Table,
    Shard,
    MovingToShard,
}

#[derive(DeriveIden, Clone, Copy)]
enum RegionMoves {
    Table,
    FromShard,
    ToShard,
}
