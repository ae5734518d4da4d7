use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AuditHeads::Table)
                    .col(ColumnDef::new(AuditHeads::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AuditHeads::Seq).big_integer().not_null())
                    .col(ColumnDef::new(AuditHeads::Hash).string().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AuditEvents::Table)
                    .col(ColumnDef::new(AuditEvents::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AuditEvents::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(AuditEvents::Seq).big_integer().not_null())
                    .col(ColumnDef::new(AuditEvents::EventType).string().not_null())
                    .col(ColumnDef::new(AuditEvents::ActorKind).string().not_null())
                    .col(ColumnDef::new(AuditEvents::ActorId).string().null())
                    .col(ColumnDef::new(AuditEvents::AggregateId).uuid().null())
                    .col(ColumnDef::new(AuditEvents::OccurredAt).string().not_null())
                    .col(ColumnDef::new(AuditEvents::Data).text().not_null())
                    .col(ColumnDef::new(AuditEvents::PrevHash).string().not_null())
                    .col(ColumnDef::new(AuditEvents::Hash).string().not_null())
                    .to_owned(),
            )
            .await?;
        // One linear chain per application: no two rows share a position, and
        // no two rows claim the same predecessor.
        for (name, col) in [
            ("audit_events_application_seq", AuditEvents::Seq),
            ("audit_events_application_prev_hash", AuditEvents::PrevHash),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(AuditEvents::Table)
                        .col(AuditEvents::ApplicationId)
                        .col(col)
                        .unique()
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(AuditEvents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AuditHeads::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum AuditHeads {
    Table,
    ApplicationId,
    Seq,
    Hash,
}

#[derive(DeriveIden)]
enum AuditEvents {
    Table,
    Id,
    ApplicationId,
    Seq,
    EventType,
    ActorKind,
    ActorId,
    AggregateId,
    OccurredAt,
    Data,
    PrevHash,
    Hash,
}
