use sea_orm_migration::prelude::*;

/// Bulk imports of users: each user's id in the system it came from
/// (`users.external_id`, unique per application, so a line imported twice
/// is found), and the import jobs, whose lines wait sealed until a worker
/// has taken them all.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let external_id = ColumnDef::new(Users::ExternalId).string().null().to_owned();
        manager.alter_table(Table::alter().table(Users::Table).add_column(external_id).to_owned()).await?;
        manager
            .create_index(
                Index::create()
                    .name("users_external_id")
                    .table(Users::Table)
                    .col(Users::ApplicationId)
                    .col(Users::ExternalId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(UserImports::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(UserImports::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(UserImports::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(UserImports::Status).string().not_null())
                    .col(ColumnDef::new(UserImports::LinesTotal).big_integer().not_null())
                    .col(ColumnDef::new(UserImports::LinesDone).big_integer().not_null())
                    .col(ColumnDef::new(UserImports::Created).big_integer().not_null())
                    .col(ColumnDef::new(UserImports::Skipped).big_integer().not_null())
                    .col(ColumnDef::new(UserImports::Failed).big_integer().not_null())
                    .col(ColumnDef::new(UserImports::Errors).json().not_null())
                    .col(ColumnDef::new(UserImports::LinesSealed).binary().not_null())
                    .col(ColumnDef::new(UserImports::NextAttemptAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(UserImports::LeaseUntil).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(UserImports::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(UserImports::UpdatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(UserImports::FinishedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("user_imports_by_status")
                    .table(UserImports::Table)
                    .col(UserImports::Status)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(UserImports::Table).to_owned()).await?;
        manager.drop_index(Index::drop().name("users_external_id").table(Users::Table).to_owned()).await?;
        manager.alter_table(Table::alter().table(Users::Table).drop_column(Users::ExternalId).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Users {
    Table,
    ApplicationId,
    ExternalId,
}

#[derive(DeriveIden)]
enum UserImports {
    Table,
    Id,
    ApplicationId,
    Status,
    LinesTotal,
    LinesDone,
    Created,
    Skipped,
    Failed,
    Errors,
    LinesSealed,
    NextAttemptAt,
    LeaseUntil,
    CreatedAt,
    UpdatedAt,
    FinishedAt,
}
