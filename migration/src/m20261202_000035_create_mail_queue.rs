use sea_orm_migration::prelude::*;

/// The mail queue in each region: the emails a request promised (a
/// verification code, a password reset, an invitation), written in the
/// request's transaction and sent from there by the region's mail worker.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MailQueue::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(MailQueue::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(MailQueue::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(MailQueue::Kind).string().not_null())
                    .col(ColumnDef::new(MailQueue::Sealed).binary().not_null())
                    .col(ColumnDef::new(MailQueue::Status).string().not_null())
                    .col(ColumnDef::new(MailQueue::AttemptsMade).integer().not_null())
                    .col(ColumnDef::new(MailQueue::NextAttemptAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(MailQueue::LeaseUntil).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(MailQueue::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(MailQueue::SettledAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("mail_queue_due")
                    .table(MailQueue::Table)
                    .col(MailQueue::Status)
                    .col(MailQueue::NextAttemptAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("mail_queue_application")
                    .table(MailQueue::Table)
                    .col(MailQueue::ApplicationId)
                    .col(MailQueue::Status)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(MailQueue::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum MailQueue {
    Table,
    Id,
    ApplicationId,
    Kind,
    Sealed,
    Status,
    AttemptsMade,
    NextAttemptAt,
    LeaseUntil,
    CreatedAt,
    SettledAt,
}
