use sea_orm_migration::prelude::*;

/// Messaging in each region: one provider per application and channel (its
/// secret sealed), and the outbox of messages recorded instead of sent (the
/// `log` kind, or no provider), listed newest first.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MessagingProviders::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(MessagingProviders::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(MessagingProviders::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(MessagingProviders::Channel).string().not_null())
                    .col(ColumnDef::new(MessagingProviders::Kind).string().not_null())
                    .col(ColumnDef::new(MessagingProviders::Config).json().not_null())
                    .col(ColumnDef::new(MessagingProviders::SecretSealed).binary().null())
                    .col(ColumnDef::new(MessagingProviders::Status).string().not_null())
                    .col(ColumnDef::new(MessagingProviders::VerifiedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(MessagingProviders::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(MessagingProviders::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("messaging_providers_channel")
                    .table(MessagingProviders::Table)
                    .col(MessagingProviders::ApplicationId)
                    .col(MessagingProviders::Channel)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MessagingOutbox::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(MessagingOutbox::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(MessagingOutbox::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(MessagingOutbox::Channel).string().not_null())
                    .col(ColumnDef::new(MessagingOutbox::Reason).string().not_null())
                    .col(ColumnDef::new(MessagingOutbox::Recipient).string().not_null())
                    .col(ColumnDef::new(MessagingOutbox::Subject).string().not_null())
                    .col(ColumnDef::new(MessagingOutbox::Body).text().not_null())
                    .col(ColumnDef::new(MessagingOutbox::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        // The list's order: `WHERE application_id = ? ORDER BY created_at DESC, id DESC`.
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("messaging_outbox_list")
                    .table(MessagingOutbox::Table)
                    .col(MessagingOutbox::ApplicationId)
                    .col(MessagingOutbox::CreatedAt)
                    .col(MessagingOutbox::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(MessagingOutbox::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(MessagingProviders::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum MessagingProviders {
    Table,
    Id,
    ApplicationId,
    Channel,
    Kind,
    Config,
    SecretSealed,
    Status,
    VerifiedAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum MessagingOutbox {
    #[sea_orm(iden = "messaging_outbox")]
    Table,
    Id,
    ApplicationId,
    Channel,
    Reason,
    Recipient,
    Subject,
    Body,
    CreatedAt,
}
