use sea_orm_migration::prelude::*;

/// Audit rows committed with their change and not yet linked into the
/// application's chain: a linker appends them in batches, one head update
/// for many rows (group commit), and deletes them here.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AuditPending::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(AuditPending::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AuditPending::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(AuditPending::EventType).string().not_null())
                    .col(ColumnDef::new(AuditPending::ActorKind).string().not_null())
                    .col(ColumnDef::new(AuditPending::ActorId).string().null())
                    .col(ColumnDef::new(AuditPending::AggregateId).uuid().null())
                    .col(ColumnDef::new(AuditPending::OccurredAt).string().not_null())
                    .col(ColumnDef::new(AuditPending::Data).text().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("audit_pending_by_application")
                    .table(AuditPending::Table)
                    .col(AuditPending::ApplicationId)
                    .col(AuditPending::OccurredAt)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(AuditPending::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum AuditPending {
    Table,
    Id,
    ApplicationId,
    EventType,
    ActorKind,
    ActorId,
    AggregateId,
    OccurredAt,
    Data,
}
