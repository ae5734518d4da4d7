use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Accounts::Table)
                    .col(ColumnDef::new(Accounts::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Accounts::Name).string().not_null())
                    .col(ColumnDef::new(Accounts::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Applications::Table)
                    .col(ColumnDef::new(Applications::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Applications::AccountId).uuid().not_null())
                    .col(ColumnDef::new(Applications::Name).string().not_null())
                    .col(ColumnDef::new(Applications::Environment).string().not_null())
                    .col(ColumnDef::new(Applications::Region).string().not_null())
                    .col(ColumnDef::new(Applications::AllowedOrigins).json().not_null())
                    .col(ColumnDef::new(Applications::Branding).json().not_null())
                    .col(ColumnDef::new(Applications::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Applications::UpdatedAt).timestamp_with_time_zone().not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .from(Applications::Table, Applications::AccountId)
                            .to(Accounts::Table, Accounts::Id),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("applications_account_id")
                    .table(Applications::Table)
                    .col(Applications::AccountId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Applications::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Accounts::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    Id,
    AccountId,
    Name,
    Environment,
    Region,
    AllowedOrigins,
    Branding,
    CreatedAt,
    UpdatedAt,
}
