use sea_orm_migration::prelude::*;

/// Secrets of the whole deployment, sealed under the master key (catalog):
/// the secret of keyed hashes, which must outlive a master-key rotation.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DeploymentSecrets::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(DeploymentSecrets::Name).string().not_null().primary_key())
                    .col(ColumnDef::new(DeploymentSecrets::ValueSealed).binary().not_null())
                    .col(ColumnDef::new(DeploymentSecrets::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(DeploymentSecrets::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum DeploymentSecrets {
    Table,
    Name,
    ValueSealed,
    CreatedAt,
}
