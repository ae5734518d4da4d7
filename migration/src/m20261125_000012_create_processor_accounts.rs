use sea_orm_migration::prelude::*;

/// The catalog's map from processor account to application (how an inbound
/// event finds its region), and the events no application has claimed.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProcessorAccounts::Table)
                    .col(ColumnDef::new(ProcessorAccounts::ProcessorAccountId).string().not_null().primary_key())
                    .col(ColumnDef::new(ProcessorAccounts::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ProcessorAccounts::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("processor_accounts_application")
                    .table(ProcessorAccounts::Table)
                    .col(ProcessorAccounts::ApplicationId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(UnmatchedProcessorEvents::Table)
                    .col(ColumnDef::new(UnmatchedProcessorEvents::EventId).string().not_null().primary_key())
                    .col(ColumnDef::new(UnmatchedProcessorEvents::EventType).string().not_null())
                    .col(ColumnDef::new(UnmatchedProcessorEvents::ProcessorAccountId).string().not_null())
                    .col(ColumnDef::new(UnmatchedProcessorEvents::Created).big_integer().not_null())
                    .col(ColumnDef::new(UnmatchedProcessorEvents::ReceivedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(UnmatchedProcessorEvents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ProcessorAccounts::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum ProcessorAccounts {
    Table,
    ProcessorAccountId,
    ApplicationId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum UnmatchedProcessorEvents {
    Table,
    EventId,
    EventType,
    ProcessorAccountId,
    Created,
    ReceivedAt,
}
