use sea_orm_migration::prelude::*;

/// Billing in each region: the payment method, the connected account's
/// status projection, and the processor events taken (unique by event id).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(BillingProfiles::Table)
                    .col(ColumnDef::new(BillingProfiles::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(BillingProfiles::PaymentBrand).string().not_null())
                    .col(ColumnDef::new(BillingProfiles::PaymentLast4).string().not_null())
                    .col(ColumnDef::new(BillingProfiles::PaymentTokenSealed).binary().not_null())
                    .col(ColumnDef::new(BillingProfiles::BillingEmail).string().null())
                    .col(ColumnDef::new(BillingProfiles::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(BillingProfiles::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ConnectStatuses::Table)
                    .col(ColumnDef::new(ConnectStatuses::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ConnectStatuses::ProcessorAccountId).string().not_null())
                    .col(ColumnDef::new(ConnectStatuses::ChargesEnabled).boolean().not_null())
                    .col(ColumnDef::new(ConnectStatuses::PayoutsEnabled).boolean().not_null())
                    .col(ColumnDef::new(ConnectStatuses::DetailsSubmitted).boolean().not_null())
                    .col(ColumnDef::new(ConnectStatuses::DisabledReason).string().null())
                    .col(ColumnDef::new(ConnectStatuses::EventCreated).big_integer().not_null())
                    .col(ColumnDef::new(ConnectStatuses::EventId).string().not_null())
                    .col(ColumnDef::new(ConnectStatuses::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProcessorEvents::Table)
                    .col(ColumnDef::new(ProcessorEvents::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(ProcessorEvents::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(ProcessorEvents::EventId).string().not_null())
                    .col(ColumnDef::new(ProcessorEvents::EventType).string().not_null())
                    .col(ColumnDef::new(ProcessorEvents::ProcessorAccountId).string().not_null())
                    .col(ColumnDef::new(ProcessorEvents::Created).big_integer().not_null())
                    .col(ColumnDef::new(ProcessorEvents::Outcome).string().not_null())
                    .col(ColumnDef::new(ProcessorEvents::ReceivedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("processor_events_event_id")
                    .table(ProcessorEvents::Table)
                    .col(ProcessorEvents::ApplicationId)
                    .col(ProcessorEvents::EventId)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ProcessorEvents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ConnectStatuses::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(BillingProfiles::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum BillingProfiles {
    Table,
    ApplicationId,
    PaymentBrand,
    #[sea_orm(iden = "payment_last4")]
    PaymentLast4,
    PaymentTokenSealed,
    BillingEmail,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ConnectStatuses {
    Table,
    ApplicationId,
    ProcessorAccountId,
    ChargesEnabled,
    PayoutsEnabled,
    DetailsSubmitted,
    DisabledReason,
    EventCreated,
    EventId,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ProcessorEvents {
    Table,
    Id,
    ApplicationId,
    EventId,
    EventType,
    ProcessorAccountId,
    Created,
    Outcome,
    ReceivedAt,
}
