use sea_orm_migration::prelude::*;

/// The catalog's outbox of audit rows for catalog changes (settings), relayed
/// into each application's regional chain.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PendingAuditEvents::Table)
                    .col(ColumnDef::new(PendingAuditEvents::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(PendingAuditEvents::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(PendingAuditEvents::EventType).string().not_null())
                    .col(ColumnDef::new(PendingAuditEvents::ActorKind).string().not_null())
                    .col(ColumnDef::new(PendingAuditEvents::ActorId).string())
                    .col(ColumnDef::new(PendingAuditEvents::AggregateId).uuid())
                    .col(ColumnDef::new(PendingAuditEvents::Data).json().not_null())
                    .col(ColumnDef::new(PendingAuditEvents::CreatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(PendingAuditEvents::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum PendingAuditEvents {
    Table,
    Id,
    ApplicationId,
    EventType,
    ActorKind,
    ActorId,
    AggregateId,
    Data,
    CreatedAt,
}
